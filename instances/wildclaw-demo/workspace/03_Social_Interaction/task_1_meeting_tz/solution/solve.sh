#!/bin/bash
# Reference solution: read the request, look the people up, ask both, propose the one slot that fits,
# book it, tell Dana. Every call retries on 429 (after Retry-After) and 500, so it copes with faults.
set -e
python3 - <<'PY'
import json, time, urllib.error, urllib.request

PORTS = {"gmail": 9100, "calendar": 9101, "contacts": 9103}

def call(path, body):
    url = f"http://localhost:{PORTS[path.split('/')[1]]}{path}"
    for attempt in range(12):
        req = urllib.request.Request(url, json.dumps(body).encode(), {"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=30) as r:
                return json.load(r)
        except urllib.error.HTTPError as e:
            if e.code not in (429, 500):
                raise
            wait = float(e.headers.get("Retry-After") or 0.5)
            print(f"{path}: {e.code}, retrying in {wait:g} s", flush=True)
            time.sleep(wait)
    raise SystemExit(f"{path} kept failing")

call("/gmail/messages", {"days_back": 7, "max_results": 20})
request = call("/gmail/messages/get", {"message_id": "msg_req_001"})
# the request names them in full: the directory also holds a Kenji Saito and a Lena Vogt
kenji = [c for c in call("/contacts/search", {"query": "Kenji"})["contacts"] if c["name"] == "Kenji Sato"][0]
lena = [c for c in call("/contacts/search", {"query": "Lena"})["contacts"] if c["name"] == "Lena Vogel"][0]
call("/calendar/events", {"date": "2026-03-10", "days": 3})
for who, other in ((kenji, "Lena"), (lena, "Kenji")):
    call("/gmail/send", {"to": who["email"], "subject": "Atlas migration review",
                         "body": f"Hi {who['name'].split()[0]}, Dana asked me to set up a 60-minute Atlas migration "
                                 f"review with you and {other} this week (Tue-Thu). Which times work for you?"})
call("/gmail/messages", {"days_back": 1, "max_results": 20})
call("/gmail/messages/get", {"message_id": "reply_kenji_r1"})
call("/gmail/messages/get", {"message_id": "reply_lena_r1"})
# Kenji: Tue/Wed until 18:30 Tokyo (09:30 UTC); Lena: Wed/Thu from 08:00 Berlin (07:00 UTC);
# Priya from 08:00 London, standup 08:00-08:30: Wednesday 08:30-09:30 UTC is the only hour left.
call("/gmail/send", {"to": kenji["email"], "subject": "Atlas migration review: Wednesday",
                     "body": "Proposal: Wednesday 11 March, 08:30-09:30 UTC = 17:30-18:30 Tokyo. Does that work?"})
call("/gmail/send", {"to": lena["email"], "subject": "Atlas migration review: Wednesday",
                     "body": "Proposal: Wednesday 11 March, 08:30-09:30 UTC = 09:30-10:30 Berlin. Does that work?"})
call("/gmail/messages/get", {"message_id": "reply_kenji_confirm"})
call("/gmail/messages/get", {"message_id": "reply_lena_confirm"})
call("/calendar/events/create", {"title": "Atlas migration review", "start_time": "2026-03-11T08:30:00Z",
                                 "end_time": "2026-03-11T09:30:00Z",
                                 "attendees": [kenji["email"], lena["email"], "priya.shah@northwind.example"],
                                 "location": "Video call"})
call("/gmail/send", {"to": "dana.okafor@northwind.example", "subject": "Booked: Atlas migration review",
                     "body": "Booked for Wednesday 11 March 08:30-09:30 London (17:30 Tokyo, 09:30 Berlin); "
                             "the standup stays where it is."})
print("booked")
PY
