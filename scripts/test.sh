#!/usr/bin/env bash
# The project's own test suite, all of it (Docker and harness groups included), on a fresh machine.
# Extra arguments go to pytest, e.g. -m "not docker and not harness" for the fast subset, which needs no
# Docker: the engine is installed and started only when the selected tests need it. Everything runs in the
# project's own virtual environment (.venv, made and updated by scripts/venv.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/venv.sh test
probe=$(mktemp)
trap 'rm -f "$probe"' EXIT
# Which tests would run? (collection only; the same arguments)
CLAWSWE_NEEDS_DOCKER_FILE=$probe PYTHONPATH=scripts${PYTHONPATH:+:$PYTHONPATH} \
  python -m pytest -p needs_docker --collect-only -q "$@" -n 0 >/dev/null || true  # -n 0: collect here
if [ "$(cat "$probe")" != no ]; then  # yes, or collection failed: let the real run say why
  scripts/docker-up.sh
fi
python -m pytest "$@"
