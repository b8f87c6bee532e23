#!/bin/bash
mkdir -p /tmp_workspace/results && echo done > /tmp_workspace/results/done.txt
# writes on until the disk limit stops it
head -c 3000000000 /dev/zero > /tmp/filler.bin
