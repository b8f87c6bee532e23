#say I write the answer.
mkdir -p /tmp_workspace/results && echo done > /tmp_workspace/results/answer.txt
