#!/bin/bash
set -e
mkdir -p /tmp_workspace/results
curl -s -X POST http://localhost:9100/gmail/messages -H 'Content-Type: application/json' \
  -d '{"days_back": 7, "max_results": 10}' > /tmp_workspace/results/inbox.json
cat /tmp_workspace/results/inbox.json
