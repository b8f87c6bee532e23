#!/bin/bash
mkdir -p /tmp_workspace/results && echo done > /tmp_workspace/results/done.txt
# writes on (100 MB every half second, 20 GB at most) until the disk limit stops it: never done by itself
# before the disk watch polls, however fast the machine's disk is
for i in $(seq 200); do head -c 100000000 /dev/zero >> /tmp/filler.bin; sleep 0.5; done
