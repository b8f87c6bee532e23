#!/usr/bin/env bash
# The project's own test suite, all of it (Docker and harness groups included), on a fresh machine.
# Extra arguments go to pytest, e.g. -m "not docker and not harness" for the fast subset.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
python3 -m pytest "$@"
