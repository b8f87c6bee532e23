#!/usr/bin/env bash
# Install pytest-clawswe (with test extras) into the current Python and make Docker available.
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m pip install -q -e '.[test]'
scripts/docker-up.sh
