"""Wall time of the demo set (-n 2) on one Docker engine vs two (issue 17 §1): the oracle, or a model-calling
harness (`--harness claude-code --model scripted/gold`: its agents on the second engine go through the relay).

The second engine is the test host of scripts/second-engine.sh (a dockerd in a network namespace, over
TCP+TLS); run `scripts/second-engine.sh up` first. Both engines share this machine's cores, so two engines
measure the plumbing (per-engine sweep, image loading, TLS), not more compute. Three runs, one after another:

  one       -n 2, every worker on the local engine
  two-cold  -n 2, one worker per engine, the second engine without the instance images (loaded on demand)
  two-warm  the same again, the images now on both engines

    PYTHONPATH=$PWD nice -n 10 python benchmarks/bench_multi_host.py   # writes benchmarks/results/multi_host.json
    PYTHONPATH=$PWD nice -n 10 python benchmarks/bench_multi_host.py --harness claude-code --model scripted/gold
                                        # the same, under the key "claude-code scripted/gold" of that file
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LOCAL = "unix:///var/run/docker.sock"
SECOND = os.environ.get("CLAWSWE_E2_URL", "tcp://10.250.8.2:2376")
TLS_DIR = os.environ.get("CLAWSWE_E2_TLS", "/var/lib/clawswe-engine2/tls")


def run(run_dir: Path, *hosts: str, harness: tuple[str, ...] = ("--harness", "oracle")) -> dict:
    args = [a for h in hosts for a in ("--docker-host", h)]
    cmd = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--dataset", "demo", *harness,
           "-n", "2", "--run-dir", str(run_dir), *args, f"--docker-tls-dir={TLS_DIR}"]
    load_before = os.getloadavg()
    t = time.monotonic()
    done = subprocess.run(cmd, cwd=run_dir.parent, capture_output=True, text=True)
    wall = time.monotonic() - t
    if done.returncode != 0:
        raise SystemExit(f"run failed ({done.returncode}):\n{done.stdout[-3000:]}")
    metas = [json.loads(p.read_text()) for p in (run_dir / "instances").glob("*/metadata.json")]
    per_host: dict[str, int] = {}
    for m in metas:
        per_host[m["docker_host"]] = per_host.get(m["docker_host"], 0) + 1
    return {"wall_s": round(wall, 1), "instances": len(metas),
            "resolved": sum(m["outcome"] == "resolved" for m in metas), "items_per_host": per_host,
            "gateway_requests_per_host": {h: sum((m.get("usage") or {}).get("requests", 0) for m in metas
                                                 if m["docker_host"] == h) for h in per_host},
            "load_avg_1_5_15_before": [round(x, 2) for x in load_before],
            "load_avg_1_5_15_after": [round(x, 2) for x in os.getloadavg()]}


def main() -> None:
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--harness", default="oracle")
    parser.add_argument("--model", default="")
    opts = parser.parse_args()
    harness = ("--harness", opts.harness) + (("--model", opts.model) if opts.model else ())
    sys.path.insert(0, str(ROOT))
    from pytest_clawswe.engine.docker.client import docker_client

    second = docker_client(base_url=SECOND, tls_dir=TLS_DIR)
    for image in second.images.list():  # the test engine's own images only: a cold start
        second.images.remove(image.id, force=True)
    path = ROOT / "benchmarks" / "results" / "multi_host.json"
    out = json.loads(path.read_text()) if path.is_file() else {}
    out["machine"] = {"cores": os.cpu_count(), "note": "2 cores shared with other engineers' test runs; "
                      "both engines run on this machine"}
    runs = {}
    with tempfile.TemporaryDirectory() as tmp:
        runs["one_engine"] = run(Path(tmp, "one"), LOCAL, harness=harness)
        runs["two_engines_cold"] = run(Path(tmp, "two-cold"), LOCAL, SECOND, harness=harness)
        runs["two_engines_warm"] = run(Path(tmp, "two-warm"), LOCAL, SECOND, harness=harness)
    if opts.harness == "oracle":
        out.update(runs)
    else:  # "cold": the second engine also loads the harness bundle and the relay image
        out[f"{opts.harness} {opts.model}".strip()] = runs
    path.write_text(json.dumps(out, indent=2) + "\n")
    print(json.dumps(runs, indent=2))


if __name__ == "__main__":
    main()
