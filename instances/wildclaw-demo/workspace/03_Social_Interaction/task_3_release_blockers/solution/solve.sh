#!/bin/bash
# Reference solution: read #release, keep the blockers whose owners have not closed them (REL-101 was
# closed by its owner; REL-103's "done" came from someone else and its owner says it is still open), ask
# each open blocker's owner for an ETA by direct message, then post one summary to #release-managers.
set -e
python3 - <<'PY'
import json, urllib.request

def call(path, body):
    req = urllib.request.Request(f"http://localhost:9110{path}", json.dumps(body).encode(),
                                 {"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=30) as r:
        return json.load(r)

listed = call("/slack/messages", {"channel": "#release", "max_results": 50})["messages"]
for m in sorted(listed, key=lambda m: m["timestamp"]):
    call("/slack/messages/get", {"message_id": m["message_id"]})
call("/slack/send", {"to": "@tomas", "content": "Hi Tomas, REL-102 (signing certificate) is still an open 2.4 "
                                                 "blocker: what is your ETA?"})
call("/slack/send", {"to": "@ines", "content": "Hi Ines, REL-103 (flaky checkout e2e) is still an open 2.4 "
                                                "blocker: what is your ETA?"})
call("/slack/messages/get", {"message_id": "reply_tomas_eta"})
call("/slack/messages/get", {"message_id": "reply_ines_eta"})
call("/slack/send", {"to": "#release-managers",
                     "content": "2.4 open blockers:\n- REL-102 signing certificate (@tomas): ETA Thursday 15:00 UTC\n"
                                "- REL-103 flaky checkout e2e (@ines): ETA Wednesday 10:00 UTC"})
print("summary posted")
PY
