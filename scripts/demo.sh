#!/usr/bin/env bash
# The demo benchmark end to end on a fresh machine: install, Docker, demo images and a harness bundle,
# then a real harness (Claude Code by default) driven by the scripted model over the eight demo instances
# (one per language group), graded by SWE-bench, and the report. No API key needed.
# CLAWSWE_DEMO_HARNESS picks another harness; extra arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
harness=${CLAWSWE_DEMO_HARNESS:-claude-code}
scripts/setup.sh
clawswe images build --dataset demo
clawswe harness build "$harness"
run_dir=reports/demo-$harness
rm -rf "$run_dir"
status=0
pytest --dataset demo --harness "$harness" --model scripted/gold -n 3 --run-dir "$run_dir" \
  --junitxml "$run_dir/junit.xml" "$@" || status=$?
clawswe report "$run_dir" --out "$run_dir/report"
echo "results: $run_dir (report: $run_dir/report/index.html)"
exit $status
