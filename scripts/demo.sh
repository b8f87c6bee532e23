#!/usr/bin/env bash
# The demo benchmark end to end on a fresh machine: install, Docker, demo images, then a benchmark run
# over the demo dataset (every language group), with a report. Extra arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
clawswe images build --dataset demo
run_dir=reports/demo-oracle
rm -rf "$run_dir"
pytest --dataset demo --harness oracle -n 3 --run-dir "$run_dir" --junitxml "$run_dir/junit.xml" "$@"
