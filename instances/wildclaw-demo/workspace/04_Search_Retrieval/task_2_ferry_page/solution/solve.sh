#!/bin/bash
# Reference solution: open the page in headless Chromium with agent-browser, read the rendered table,
# take a full-page screenshot, answer. Each command stands alone (absolute paths, no shared shell state).
mkdir -p /tmp_workspace/results
# on a machine busy with disk the CLI can stop waiting for its daemon while Chromium still starts ("Failed to read:
# Resource temporarily unavailable", vercel-labs/agent-browser#1049): then the page is opened again, a little later
for try in 1 2 3; do agent-browser open "file:///tmp_workspace/site/index.html" && break; sleep 3; done
agent-browser wait "#timetable:not([hidden])"
agent-browser get text "#timetable" > /tmp_workspace/results/table.txt
agent-browser screenshot --full /tmp_workspace/results/timetable.png
agent-browser close
python3 - <<'PY'
import json
rows = [line.split("\t") for line in open("/tmp_workspace/results/table.txt").read().splitlines()]
sat = sorted((r for r in rows if len(r) == 4 and r[0].strip() == "Saturday"), key=lambda r: r[1])
day, departs, to, vessel = (c.strip() for c in sat[-1])
json.dump({"departs": departs, "to": to, "vessel": vessel}, open("/tmp_workspace/results/answer.json", "w"))
print(departs, to, vessel)
PY
