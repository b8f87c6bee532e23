#!/bin/bash
# Writes its result, then overruns the task's budget: the run must be cut there and graded as it stands.
mkdir -p /tmp_workspace/results
echo "written before the budget" > /tmp_workspace/results/partial.txt
( while true; do date >> /tmp_workspace/results/background.txt; sleep 1; done ) >/dev/null 2>&1 &
python3 -c 'import time; time.sleep(600)'  # (Claude Code refuses a standalone `sleep 600`)
echo "never" > /tmp_workspace/results/after.txt
