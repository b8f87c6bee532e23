#!/usr/bin/env bash
# The package as people install it: build the wheel, install it into a fresh venv outside the checkout and,
# from another directory, collect --lite, build the published report and run the oracle on one demo instance.
# Usage: scripts/check-wheel.sh [--no-docker]   (--no-docker: skip the oracle run)
# The venv gets its dependencies from the same pip index as this machine (pip's own configuration).
set -euo pipefail
checkout=$(cd "$(dirname "$0")/.." && pwd)
instance=${CLAWSWE_WHEEL_INSTANCE:-clawswe__tinyjson-py-12}
work=$(mktemp -d /tmp/clawswe-wheel.XXXXXX)
trap 'rm -rf "$work"' EXIT
say() { echo "[check-wheel] $*" >&2; }

say "building the wheel"
# From a copy of what the wheel is made of: setuptools builds in the source tree and reuses a stale build/.
mkdir "$work/src"
(cd "$checkout" && cp -a --parents pyproject.toml README.md pytest_clawswe instances harnesses reports/published \
  "$work/src/")
python3 -m pip wheel -q --no-deps --wheel-dir "$work/dist" "$work/src"
wheel=$(ls "$work"/dist/pytest_clawswe-*.whl)
python3 -m venv "$work/venv"
say "installing $(basename "$wheel") into a fresh venv"
"$work/venv/bin/pip" install -q "$wheel"

# From a directory that is not the checkout, with nothing of the checkout on the path.
mkdir "$work/elsewhere" && cd "$work/elsewhere"
export PYTHONPATH= PYTHONNOUSERSITE=1
where=$("$work/venv/bin/python" -c "import pytest_clawswe, os; print(os.path.dirname(pytest_clawswe.__file__))")
case "$where" in "$checkout"*) say "the venv imports the checkout ($where), not the wheel"; exit 1 ;; esac

say "collecting --lite"
"$work/venv/bin/pytest" -p no:cacheprovider --harness oracle --lite --collect-only -q > collect.txt
tail -n1 collect.txt
grep -q "^80 tests collected" collect.txt || { say "--lite did not collect 80 items"; cat collect.txt; exit 1; }

say "clawswe report --published"
"$work/venv/bin/clawswe" report --published --out published > report.txt
cat report.txt
[ -s published/index.html ] || { say "no published/index.html"; exit 1; }

if [ "${1:-}" != --no-docker ]; then
  say "oracle on $instance"
  "$work/venv/bin/pytest" -p no:cacheprovider --dataset demo --harness oracle --instance-ids "$instance" \
    --run-dir run -q
  python3 -c "import json, sys; s = json.load(open('run/summary.json')); print('oracle summary:', s); \
sys.exit(0 if s.get('resolved') == 1 else 1)" || { say "the oracle did not resolve $instance"; exit 1; }
fi
say "ok (${SECONDS} s)"
