#!/usr/bin/env bash
# Install pytest-clawswe (with test extras) into the project's virtual environment (.venv) and make Docker
# available. Afterwards `. .venv/bin/activate` puts pytest and clawswe on your PATH.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/venv.sh test
scripts/docker-up.sh
