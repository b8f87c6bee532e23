#!/bin/bash
# Reference solution: open the page in headless Chromium with agent-browser, read the rendered table,
# answer; then a full-page screenshot with Playwright (Python).
set -e
mkdir -p /tmp_workspace/results
cd /tmp_workspace
agent-browser open "file:///tmp_workspace/site/index.html"
agent-browser wait "#timetable:not([hidden])"
agent-browser get text "#timetable" > results/table.txt
agent-browser close || true
python3 - <<'PY'
import json
rows = [line.split("\t") for line in open("/tmp_workspace/results/table.txt").read().splitlines()]
sat = sorted((r for r in rows if len(r) == 4 and r[0].strip() == "Saturday"), key=lambda r: r[1])
day, departs, to, vessel = (c.strip() for c in sat[-1])
json.dump({"departs": departs, "to": to, "vessel": vessel}, open("/tmp_workspace/results/answer.json", "w"))
PY
python3 - <<'PY'
from playwright.sync_api import sync_playwright
with sync_playwright() as p:
    browser = p.chromium.launch()
    page = browser.new_page()
    page.goto("file:///tmp_workspace/site/index.html")
    page.wait_for_selector("#timetable:not([hidden])")
    page.screenshot(path="/tmp_workspace/results/timetable.png", full_page=True)
    browser.close()
PY
cat /tmp_workspace/results/answer.json
