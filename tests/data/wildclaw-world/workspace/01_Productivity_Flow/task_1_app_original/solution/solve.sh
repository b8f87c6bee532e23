#!/bin/bash
mkdir -p /tmp_workspace/results && cat /app/input.txt > /tmp_workspace/results/app.txt
{ echo changed > /app/input.txt; } 2>/dev/null && echo writable >> /tmp_workspace/results/app.txt || echo read-only >> /tmp_workspace/results/app.txt
echo changed > /tmp_workspace/input.txt
