#!/bin/bash
mkdir -p /tmp_workspace/results && echo 42 > /tmp_workspace/results/answer.txt
cd /tmp_workspace/results && ln answer.txt copy.txt && ln -s answer.txt link.txt && ln -s /tmp_workspace/gt/secret.txt peek.txt
