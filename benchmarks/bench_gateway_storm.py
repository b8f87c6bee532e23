"""The gateway under a storm of oversized requests, with its default limits (issue 12, case 9).

    python benchmarks/bench_gateway_storm.py [--requests 200] [--size-mb 50]

A real gateway process gets N concurrent requests of SIZE MB each (half with a Content-Length, half
chunked, so both refusal paths are taken), as an agent trying to fill the host's memory would send them.
Reported: the statuses, the gateway's peak resident memory during the storm (VmHWM, reset just before),
whether it still answers afterwards, and the size of its ledger. Writes benchmarks/results/gateway_storm.json.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from gateway_stub import rss, storm  # noqa: E402

from pytest_clawswe.gateway import GatewayProcess  # noqa: E402
from pytest_clawswe.gateway.service.app import MAX_BODY, MAX_INFLIGHT_BODIES  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--requests", type=int, default=200)
    parser.add_argument("--size-mb", type=float, default=50)
    parser.add_argument("--out", default=str(Path(__file__).parent / "results" / "gateway_storm.json"))
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp, GatewayProcess.start(Path(tmp) / "gw") as gw:
        token = gw.client().register("storm__agent", "scripted/noop", {"mode": "noop"})
        Path(f"/proc/{gw.pid}/clear_refs").write_text("5")
        base = rss(gw.pid)["VmRSS"]
        t = time.monotonic()
        statuses, mem = storm(gw, token, n=args.requests, size=int(args.size_mb * 1024 * 1024))
        elapsed = time.monotonic() - t
        body = json.dumps({"model": "m", "messages": [{"role": "user", "content": "hi"}]}).encode()
        req = urllib.request.Request(gw.url + "/v1/chat/completions", data=body,
                                     headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"})
        alive = urllib.request.urlopen(req, timeout=30).status == 200
        ledger = sum(p.stat().st_size for p in (Path(tmp) / "gw" / "usage").glob("*.jsonl"))
        result = {
            "requests": args.requests, "size_mb_each": args.size_mb, "seconds": round(elapsed, 2),
            "statuses": {str(s): statuses.count(s) for s in sorted(set(statuses))},
            "body_limit_mib": MAX_BODY / 2**20, "inflight_budget_mib": MAX_INFLIGHT_BODIES / 2**20,
            "rss_before_mib": round(base / 2**20, 1), "peak_rss_mib": round(mem["VmHWM"] / 2**20, 1),
            "rss_after_mib": round(rss(gw.pid)["VmRSS"] / 2**20, 1), "still_answering": alive,
            "ledger_bytes_after": ledger, "load_avg_1m": round(os.getloadavg()[0], 2),
        }
    print(json.dumps(result, indent=1))
    Path(args.out).write_text(json.dumps(result, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
