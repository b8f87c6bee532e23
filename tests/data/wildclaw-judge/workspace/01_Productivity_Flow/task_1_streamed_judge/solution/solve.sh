#!/bin/bash
# Reference solution: a two-line note from the facts.
mkdir -p /tmp_workspace/results
printf '%s\n' "Release: Thursday 12 March." "Open risk: the payment sandbox is down; the end-to-end test waits for it." > /tmp_workspace/results/note.md
#say The note is in /tmp_workspace/results/note.md.
