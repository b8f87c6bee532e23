#!/bin/bash
# Reference solution: the window loop stops one window early; include the last one.
sed -i 's/range(len(values) - size)/range(len(values) - size + 1)/' /tmp_workspace/tally/windows.py
cd /tmp_workspace && python3 report.py 3 4 8 5
