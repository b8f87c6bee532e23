"""Per-item overhead on a Kubernetes cluster, beside the Docker path, measured the same way (bench_overhead.py).

    python benchmarks/bench_kube_overhead.py --kubernetes CONTEXT --registry HOST:PORT [--rounds 3]

The demo set back to back through one runner with the oracle, as a worker runs its items (each item told which
comes next: its sandbox is made while this one's patch is read and graded), once with the sandboxes and the
evaluations as this machine's Docker containers and once as pods of the cluster (the runner a `--kubernetes`
run makes: engine/kube/). Per item: wall time minus the oracle's own work minus the instance's tests
(`overhead_s`, bench_overhead.sequence's measure); the pod path's phases (pod start, purge check, patch, score)
are kept per item. The first item of each pass has nothing made ahead and is reported apart. Also: one pod's
start alone (create to running, the two containers' keep-alives found) beside one Docker container's.

Writes benchmarks/results/kube_overhead.json. Needs the test cluster (scripts/kube-cluster.sh up) or another,
and the demo images (`clawswe images build --dataset demo`).
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from bench_overhead import _test_seconds, _TimedOracle  # noqa: E402

from pytest_clawswe.engine.docker.client import docker_client  # noqa: E402
from pytest_clawswe.run.config import RunConfig  # noqa: E402
from pytest_clawswe.swe.dataset import load_instances  # noqa: E402
from pytest_clawswe.swe.instance.runner import InstanceRunner as Runner  # noqa: E402

RESULTS = Path(__file__).parent / "results" / "kube_overhead.json"


def passes(tmp: Path, client, kube, rounds: int) -> dict:
    """The demo set back to back, Docker then the cluster, `rounds` times; their per-item overheads."""
    from pytest_clawswe.swe.grading.scoring import EvalContainer

    after_s, EvalContainer.AFTER_S = EvalContainer.AFTER_S, 0.0  # made when the agent starts (see _TimedOracle)
    out: dict[str, dict[str, list]] = {"docker": {"items": [], "firsts": []}, "kubernetes": {"items": [], "firsts": []}}
    try:
        insts = load_instances("demo")
        for r in range(rounds):
            for engine in ("docker", "kubernetes"):
                harness = _TimedOracle()
                run_dir = tmp / f"{engine}-{r}"
                cfg = RunConfig("bench-kube-overhead", run_dir, "oracle", "")
                runner = Runner(cfg, harness, client, progress=lambda m: None)
                if engine == "kubernetes":
                    site = kube.site(client)
                    runner.workspace_factory = site.workspace_factory()
                    runner.eval_client = site.docker_client()
                harness.runner = runner
                for i, inst in enumerate(insts):
                    runner.upcoming = insts[i + 1] if i + 1 < len(insts) else None
                    t = time.perf_counter()
                    result = runner.run(inst)
                    wall = time.perf_counter() - t
                    tests = _test_seconds(run_dir / "instances" / inst.instance_id / "eval")
                    out[engine]["firsts" if i == 0 else "items"].append({
                        "instance_id": inst.instance_id, "round": r, "node": result.node, "wall_s": round(wall, 3),
                        "agent_work_s": round(harness.sent, 3), "tests_s": tests,
                        "overhead_s": round(wall - harness.sent - tests, 3), "outcome": result.outcome,
                        "timings": result.timings})
                runner.close()
    finally:
        EvalContainer.AFTER_S = after_s
    summary = {}
    for engine, got in out.items():
        overheads = [r["overhead_s"] for r in got["items"]]
        summary[engine] = {
            "median_overhead_s": round(statistics.median(overheads), 3),
            "mean_overhead_s": round(statistics.mean(overheads), 3),
            "first_item_overhead_s": round(statistics.median(r["overhead_s"] for r in got["firsts"]), 3),
            "container_start_median_s": round(statistics.median(r["timings"].get("container_start", 0)
                                                                for r in got["items"] + got["firsts"]), 3),
            "score_median_s": round(statistics.median(r["timings"].get("score", 0) for r in got["items"]), 3),
            "all_resolved": all(r["outcome"] == "resolved" for r in got["items"] + got["firsts"]),
            "nodes": sorted({r["node"] for r in got["items"] + got["firsts"] if r["node"]}),
            **got}
    return summary


def one_start(client, kube, repeat: int = 5) -> dict:
    """A pod's start and removal (debian:bookworm-slim) beside a Docker container's, interleaved."""
    from pytest_clawswe.engine.sandbox.docker_workspace import Workspace
    from pytest_clawswe.engine.kube import namespace

    namespace.ensure(kube.cluster, kube.namespace, kube.cfg.run_id)
    site = kube.site(client)
    pods, containers = [], []
    labels = {"clawswe.run": kube.cfg.run_id, "clawswe.instance": "start", "clawswe.role": "agent"}
    for _ in range(repeat):
        t = time.perf_counter()
        with site.workspace_factory()("debian:bookworm-slim", labels=labels, network="none"):
            pods.append(time.perf_counter() - t)
        t = time.perf_counter()
        with Workspace(client, "debian:bookworm-slim", labels=labels, network="none"):
            containers.append(time.perf_counter() - t)
    return {"pod_start_median_s": round(statistics.median(pods), 3),
            "container_start_median_s": round(statistics.median(containers), 3)}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kubernetes", required=True, metavar="CONTEXT")
    ap.add_argument("--registry", required=True, metavar="HOST:PORT")
    ap.add_argument("--rounds", type=int, default=1)
    args = ap.parse_args()
    from pytest_clawswe.engine.kube import namespace
    from pytest_clawswe.engine.kube.cluster import Cluster
    from pytest_clawswe.run.kube_run import KubeRun

    cfg = RunConfig("bench-kube-overhead", Path("."), "oracle", "", registry=args.registry)
    kube = KubeRun(Cluster(args.kubernetes), cfg)
    client = docker_client()
    load_before = os.getloadavg()
    try:
        with tempfile.TemporaryDirectory() as tmp:
            namespace.ensure(kube.cluster, kube.namespace, cfg.run_id)
            result = {"start_and_remove": one_start(client, kube), **passes(Path(tmp), client, kube, args.rounds)}
    finally:
        namespace.delete(kube.cluster, kube.namespace, wait_s=60)
    result["load_average"] = load_before + os.getloadavg()
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps({k: {kk: vv for kk, vv in v.items() if kk not in ("items", "firsts")}
                      if isinstance(v, dict) else v for k, v in result.items()}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
