#!/bin/bash
# Reference solution: parse the calendar, place the meetings greedily, write the two outputs.
set -e
mkdir -p /tmp_workspace/results
python3 - <<'PY'
import json, re
from datetime import datetime, timedelta
ics = open("/tmp_workspace/calendar.ics").read()
busy = {}
for ev in re.findall(r"BEGIN:VEVENT(.*?)END:VEVENT", ics, re.S):
    start = datetime.strptime(re.search(r"DTSTART:(\S+)", ev).group(1), "%Y%m%dT%H%M%S")
    end = datetime.strptime(re.search(r"DTEND:(\S+)", ev).group(1), "%Y%m%dT%H%M%S")
    for who in re.findall(r"mailto:(\w+)@", ev):
        busy.setdefault(who, []).append((start, end))
rows = [r.split("|")[1:5] for r in open("/tmp_workspace/requests.md") if r.startswith("| ") and not r.startswith("| id")]
out = {}
for mid, title, minutes, people in ([c.strip() for c in r] for r in rows):
    people = [p.strip() for p in people.split(",")]
    length = timedelta(minutes=int(minutes))
    for day in range(2, 7):
        t = datetime(2026, 3, day, 9, 0)
        found = None
        while t + length <= datetime(2026, 3, day, 17, 0):
            if all(not (t < e and s < t + length) for p in people for s, e in busy.get(p, [])):
                found = t
                break
            t += timedelta(minutes=30)
        if found:
            break
    out[mid] = {"title": title, "start": found.strftime("%Y-%m-%dT%H:%M"),
                "end": (found + length).strftime("%Y-%m-%dT%H:%M"), "attendees": people}
    for p in people:
        busy.setdefault(p, []).append((found, found + length))
json.dump(out, open("/tmp_workspace/results/schedule.json", "w"), indent=2)
with open("/tmp_workspace/results/summary.md", "w") as f:
    f.write("# Proposed schedule\n\n")
    for mid, m in out.items():
        f.write(f"- {m['title']}: {m['start']} to {m['end']} ({', '.join(m['attendees'])})\n")
    f.write("\nEach meeting takes the earliest half-hour start at which all of its attendees are free, "
            "in the order requested; the retro waits for Wednesday because Marek travels on Tuesday afternoon.\n")
PY
cat /tmp_workspace/results/schedule.json
