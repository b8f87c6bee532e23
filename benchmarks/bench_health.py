"""Wall time of `clawswe health --repeat N` over a dataset (default: the demo set), from a fresh runs folder.

    python benchmarks/bench_health.py [--dataset demo] [--repeat 3] [-n 2] [--out instances/demo/health.json]

Runs the real command (the oracle and the nop N times per instance, in grid order, every image already built or
made on the first run) and writes benchmarks/results/health.json: the wall time, each run's time (from the
command's own lines), and each instance's verdict with gold resolved k/N and nop unresolved k/N. `--out` keeps
the health file (the demo set's shipped file is written so).
"""
from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "results" / "health.json"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", default="demo")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("-n", dest="workers", type=int, default=2)
    parser.add_argument("--out", help="keep the health file here (default: a temporary folder)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(args.out).resolve() if args.out else Path(tmp, "health.json")
        command = [sys.executable, "-m", "pytest_clawswe.cli", "health", "--dataset", args.dataset, "--repeat",
                   str(args.repeat), "-n", str(args.workers), "--out", str(out), "--runs", str(Path(tmp, "runs"))]
        env = {**os.environ, "CLAWSWE_IMAGE_INDEX": str(Path(tmp, "image-index"))}  # not the user's index
        started = time.monotonic()
        done = subprocess.run(command, capture_output=True, text=True, env=env)
        wall = time.monotonic() - started
        if done.returncode:
            sys.exit(f"clawswe health failed ({done.returncode}):\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}")
        health = json.loads(out.read_text())
    runs = {m[1]: float(m[2]) for m in re.finditer(r"column (\S+) ended with exit code \d+ in (\d+)s", done.stdout)}
    result = {
        "command": f"clawswe health --dataset {args.dataset} --repeat {args.repeat} -n {args.workers}",
        "instances": health["summary"]["instances"], "wall_s": round(wall, 1), "runs_s": runs,
        "load_1min": os.getloadavg()[0], "cpus": os.cpu_count(), "summary": health["summary"],
        "verdicts": {iid: {"verdict": e["verdict"], "gold_resolved": f"{e['gold']['resolved']}/{e['gold']['runs']}",
                           "nop_unresolved": f"{e['nop']['unresolved']}/{e['nop']['runs']}",
                           "eval_s_max": max(x for x in (e["gold"]["eval_s_max"], e["nop"]["eval_s_max"]) if x)}
                     for iid, e in health["items"].items()},
    }
    RESULTS.write_text(json.dumps(result, indent=2) + "\n")
    print(f"{result['command']}: {result['instances']} instances in {wall:.0f} s; {health['summary']}")


if __name__ == "__main__":
    main()
