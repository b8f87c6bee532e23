"""Run inside the WildClawBench task image (Debian's Chromium driven by Playwright), on the host's network: open
pages of a running `harbor view`, wait until each shows its data, save a screenshot, and write each page's text and
every URL the browser asked for to /shots/seen.json for the test to check.

Usage: python3 chromium_harbor.py BASE_URL /shots '{"name": "/path", ...}'"""
import json
import sys
from pathlib import Path

from playwright.sync_api import sync_playwright

base, root, pages = sys.argv[1].rstrip("/"), Path(sys.argv[2]), json.loads(sys.argv[3])
seen: dict = {"requests": [], "console_errors": [], "pages": {}, "failed": {}}

try:
    with sync_playwright() as p:
        browser = p.chromium.launch()
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        page.on("request", lambda r: seen["requests"].append(r.url))
        page.on("console", lambda m: m.type == "error" and seen["console_errors"].append(m.text))
        for name, path in pages.items():
            try:
                page.goto(base + path, timeout=120000)
                # a trial page is drawn once its result came back (its trajectory: the step count); the job list
                # once its rows did; then a moment for the rest of the page
                ready = "text=/\\d+ steps/" if "/trials/" in path else "table tbody tr"
                page.wait_for_selector(ready, timeout=120000)
                page.wait_for_timeout(1500)
            except Exception as exc:  # noqa: BLE001 - said in seen.json, with what the page showed
                seen["failed"][name] = f"{type(exc).__name__}: {exc}"[:2000]
            page.screenshot(path=str(root / f"{name}.png"), full_page=True)
            seen["pages"][name] = page.inner_text("body")
        browser.close()
finally:
    (root / "seen.json").write_text(json.dumps(seen, indent=1))
