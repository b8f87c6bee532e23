#!/bin/bash
# Reference solution: the window loop stops one window early; include the last one.
set -e
cd /tmp_workspace
sed -i 's/range(len(values) - size)/range(len(values) - size + 1)/' tally/windows.py
python3 report.py 3 4 8 5
