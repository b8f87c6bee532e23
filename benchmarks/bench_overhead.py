"""Per-instance overhead of the benchmark machinery, by phase, and collection time.

    python benchmarks/bench_overhead.py [--repeat 3]

- collection: `pytest --harness nop --collect-only -q` over the 350 Claw-SWE-Bench ids (target < 1 s),
  timed inside pytest (session start to collection finish) and as a whole command;
- per instance, with the `nop` harness on every demo image: container start, preparation (first time,
  i.e. building the prepared image, and cached), purge check, patch collection, container removal, and
  scoring (the evaluator's own test run included; `oracle` gives a non-empty patch to grade).
  Target: < 0.5 s per instance for everything but the agent and the test run itself, once preparation is
  cached (issue 25);
- side by side, in the same loop: a plain `docker run -d IMAGE sleep infinity` of the same prepared image (the
  command line, and the SDK's create + start), so our container start is compared with Docker's own under the
  same load.
- the `nop` harness does nothing, so its whole agent phase is the machinery's (create_agent, the stop of every
  process, backup_session, delete_agent): `overhead_all_in_s` adds it to `overhead_excluding_tests_s`.
- back to back (`sequence`), as a worker runs its items: the demo set through one runner with the oracle, each
  item told which comes next (the session does this from pytest's nextitem), so the next item's container is made
  while this one's patch is read and graded (run/item/made_ahead.py). Per item: its wall time minus the agent's own work
  (the oracle's send_task, here also waiting until the evaluation container made ahead is ready, as an agent that
  works over EvalContainer.AFTER_S = 2 s finds it) minus the instance's tests: `overhead_s`. The first item of a
  worker has nothing made ahead: reported apart (`first_item_overhead_s`).
- `--rounds N` runs all of it N times (the machine is shared: each round's medians and load average are kept,
  and the medians over the rounds reported).

Writes benchmarks/results/overhead.json. Needs Docker and the demo images (`clawswe images build`).
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from pytest_clawswe.engine.images.cache_level import SOURCE_LABEL
from pytest_clawswe.engine.docker.client import docker_client
from pytest_clawswe.harness.adapters.nop import NopHarness
from pytest_clawswe.harness.adapters.oracle import OracleHarness

from pytest_clawswe.run.config import RunConfig
from pytest_clawswe.swe.dataset import load_instances
from pytest_clawswe.swe.instance.runner import InstanceRunner as Runner
from pytest_clawswe.swe.instance.prepare import PREPARED_REPO

RESULTS = Path(__file__).parent / "results" / "overhead.json"
ROUND_KEYS = ("sequence_median_overhead_s", "sequence_mean_overhead_s", "median_overhead_excluding_tests_s", "median_overhead_excluding_tests_with_container_ahead_s",
              "median_overhead_all_in_s", "median_overhead_all_in_with_container_ahead_s",
              "container_start_median_s", "plain_docker_run_cli_median_s", "plain_docker_run_sdk_median_s")
PHASES = ("prepare_image", "container_start", "purge_check", "agent", "patch", "container_remove", "score")


def collection_time() -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        script = ("import time, pytest\n"
                  "class T:\n"
                  "    def pytest_sessionstart(self, session): self.t = time.perf_counter()\n"
                  "    def pytest_collection_finish(self, session): print('COLLECT', time.perf_counter() - self.t)\n"
                  "pytest.main(['--harness', 'nop', '--collect-only', '-q', '-p', 'no:cacheprovider'], plugins=[T()])\n")
        t = time.perf_counter()
        out = subprocess.run([sys.executable, "-c", script], cwd=tmp, capture_output=True, text=True).stdout
        whole = time.perf_counter() - t
    inside = float(next(line.split()[1] for line in out.splitlines() if line.startswith("COLLECT")))
    items = int(next(line.split()[0] for line in out.splitlines() if "tests collected" in line))
    return {"items": items, "collection_s": round(inside, 3), "whole_command_s": round(whole, 3), "target_s": 1.0}


def drop_prepared(client, image: str) -> None:
    name = image.rsplit(":", 1)[0].split("/")[-1].lower()
    for img in client.images.list(f"{PREPARED_REPO}/{name}"):
        for tag in img.tags:
            client.images.remove(tag, force=True)


def plain_run(client, image: str) -> tuple[float, float]:
    """Seconds for `docker run -d` on the command line and for the SDK's create + start (no options of ours)."""
    t = time.perf_counter()
    cid = subprocess.run(["docker", "run", "-d", image, "sleep", "infinity"], capture_output=True, text=True,
                         check=True).stdout.strip()
    cli = time.perf_counter() - t
    client.api.remove_container(cid, force=True)
    t = time.perf_counter()
    container = client.containers.run(image, ["sleep", "infinity"], detach=True)
    sdk = time.perf_counter() - t
    container.remove(force=True)
    return cli, sdk


def score_ahead(client, inst, eval_dir: Path) -> tuple[float, float]:
    """The oracle's patch graded in an evaluation container made while an agent worked (runner.py does this
    once the agent has worked EvalContainer.AFTER_S); returns the score's seconds and its tests' seconds."""
    from pytest_clawswe.swe.dataset import load_row
    from pytest_clawswe.swe.grading.scoring import EvalContainer, score

    row = load_row(inst)
    ahead = EvalContainer(client, row, "bench-overhead", {"clawswe.run": "bench-overhead"}, after_s=0)
    ahead._thread.join()  # the agent worked long enough
    t = time.perf_counter()
    score(client, row, inst.row["patch"], run_id="bench-overhead", model_label="ahead", eval_dir=eval_dir,
          labels={"clawswe.run": "bench-overhead"}, ahead=ahead)
    return round(time.perf_counter() - t, 3), _test_seconds(eval_dir)


def per_instance(repeat: int) -> dict:
    load_before = os.getloadavg()  # and at the end: (1, 5, 15 min) twice
    client = docker_client()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        nop = Runner(RunConfig("bench-overhead", Path(tmp) / "nop", "nop", ""), NopHarness(), client,
                     progress=lambda m: None)
        oracle = Runner(RunConfig("bench-overhead", Path(tmp) / "oracle", "oracle", ""), OracleHarness(), client,
                        progress=lambda m: None)
        # warm the process (imports, client) so the first instance is not charged for them
        first = load_instances("demo")[0]
        oracle.run(first)
        for inst in load_instances("demo"):
            drop_prepared(client, inst.image)
            cold = nop.run(inst).timings
            prepared = client.images.list(filters={"label": f"{SOURCE_LABEL}={inst.image}"})[0].tags[0]
            warm, plain = [], []
            for _ in range(repeat):  # interleaved: ours and Docker's own under the same load
                warm.append(nop.run(inst).timings)
                plain.append(plain_run(client, prepared))
            graded = oracle.run(inst)
            eval_dir = Path(tmp) / "oracle" / "instances" / inst.instance_id / "eval"
            test_s = _test_seconds(eval_dir)
            ahead_s, ahead_tests_s = score_ahead(client, inst, Path(tmp) / "ahead" / inst.instance_id)
            median = {p: round(statistics.median(w.get(p, 0.0) for w in warm), 3) for p in PHASES + ("total",)}
            overhead = sum(median[p] for p in PHASES if p != "agent")
            nop_agent = median["agent"]  # the nop harness does nothing: all of it is ours
            rows.append({
                "instance_id": inst.instance_id, "language": inst.language,
                "prepare_first_time_s": cold["prepare_image"], "cached": median,
                "score_oracle_s": graded.timings["score"], "tests_in_score_s": test_s,
                "overhead_excluding_tests_s": round(overhead + max(graded.timings["score"] - test_s, 0.0), 3),
                "resolved": graded.resolved,
                # an agent that works longer than EvalContainer.AFTER_S: its evaluation container is ready
                "score_with_container_made_ahead_s": ahead_s, "tests_in_that_score_s": ahead_tests_s,
                "overhead_excluding_tests_with_container_ahead_s": round(
                    overhead + max(ahead_s - ahead_tests_s, 0.0), 3),
                "overhead_all_in_s": round(overhead + nop_agent + max(graded.timings["score"] - test_s, 0.0), 3),
                "overhead_all_in_with_container_ahead_s": round(
                    overhead + nop_agent + max(ahead_s - ahead_tests_s, 0.0), 3),
                "plain_docker_run_cli_s": round(statistics.median(p[0] for p in plain), 3),
                "plain_docker_run_sdk_s": round(statistics.median(p[1] for p in plain), 3),
            })
        seq = sequence(Path(tmp), client, 1)
    worst = max(r["overhead_excluding_tests_s"] for r in rows)
    starts = [r["cached"]["container_start"] for r in rows]
    return {"instances": rows, "worst_overhead_excluding_tests_s": worst, "target_s": 0.5,
            "median_overhead_excluding_tests_s": round(statistics.median(r["overhead_excluding_tests_s"]
                                                                         for r in rows), 3),
            "median_overhead_excluding_tests_with_container_ahead_s": round(statistics.median(
                r["overhead_excluding_tests_with_container_ahead_s"] for r in rows), 3),
            "median_overhead_all_in_s": round(statistics.median(r["overhead_all_in_s"] for r in rows), 3),
            "median_overhead_all_in_with_container_ahead_s": round(statistics.median(
                r["overhead_all_in_with_container_ahead_s"] for r in rows), 3),
            "container_start_median_s": round(statistics.median(starts), 3),
            "plain_docker_run_cli_median_s": round(statistics.median(r["plain_docker_run_cli_s"] for r in rows), 3),
            "plain_docker_run_sdk_median_s": round(statistics.median(r["plain_docker_run_sdk_s"] for r in rows), 3),
            **seq,
            "load_average": load_before + os.getloadavg()}


class _TimedOracle(OracleHarness):
    """The oracle, its send_task timed: the agent's own work, left out of the overhead. It ends once the evaluation
    container made ahead is ready (an agent working over EvalContainer.AFTER_S finds it so)."""

    runner = None
    sent = 0.0

    def send_task(self, ctx, prompt):
        t = time.perf_counter()
        try:
            return super().send_task(ctx, prompt)
        finally:
            ahead = getattr(self.runner, "_eval_ahead", None)
            if ahead is not None:
                ahead._thread.join()
            self.sent = time.perf_counter() - t


def sequence(tmp: Path, client, rounds: int) -> dict:
    from pytest_clawswe.swe.grading.scoring import EvalContainer

    after_s, EvalContainer.AFTER_S = EvalContainer.AFTER_S, 0.0  # made when the agent starts; see _TimedOracle
    items, firsts = [], []
    try:
        insts = load_instances("demo")
        for r in range(rounds):
            harness = _TimedOracle()
            run_dir = tmp / f"sequence-{r}"
            runner = Runner(RunConfig("bench-overhead", run_dir, "oracle", ""), harness, client,
                            progress=lambda m: None)
            harness.runner = runner
            for i, inst in enumerate(insts):
                runner.upcoming = insts[i + 1] if i + 1 < len(insts) else None
                t = time.perf_counter()
                result = runner.run(inst)
                wall = time.perf_counter() - t
                tests = _test_seconds(run_dir / "instances" / inst.instance_id / "eval")
                (firsts if i == 0 else items).append({
                    "instance_id": inst.instance_id, "round": r, "wall_s": round(wall, 3),
                    "agent_work_s": round(harness.sent, 3), "tests_s": tests,
                    "overhead_s": round(wall - harness.sent - tests, 3), "made_ahead": "made_ahead" in result.timings,
                    "resolved": result.resolved, "timings": result.timings})
            runner.close()
    finally:
        EvalContainer.AFTER_S = after_s
    overheads = [r["overhead_s"] for r in items]
    return {"sequence": items, "first_items": firsts,
            "sequence_median_overhead_s": round(statistics.median(overheads), 3),
            "sequence_mean_overhead_s": round(statistics.mean(overheads), 3),
            "sequence_worst_overhead_s": max(overheads),
            "first_item_overhead_s": round(statistics.median(r["overhead_s"] for r in firsts), 3),
            "sequence_all_resolved": all(r["resolved"] for r in items + firsts),
            "sequence_all_made_ahead": all(r["made_ahead"] for r in items)}


def _test_seconds(eval_dir: Path) -> float:
    log = (eval_dir / "run_instance.log").read_text() if (eval_dir / "run_instance.log").is_file() else ""
    for line in log.splitlines():
        if "Test runtime:" in line:
            return float(line.rsplit(":", 1)[1].split()[0].replace("_", ""))
    return 0.0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3, help="cached runs per instance (median reported)")
    ap.add_argument("--rounds", type=int, default=1, help="whole measurements, one after the other")
    args = ap.parse_args()
    rounds = [per_instance(args.repeat) for _ in range(max(1, args.rounds))]
    result = {"collection": collection_time(), "per_instance": rounds[-1]}
    if len(rounds) > 1:
        result["rounds"] = [{k: v for k, v in r.items() if k != "instances"} for r in rounds]
        result["median_over_rounds"] = {key: round(statistics.median(r[key] for r in rounds), 3)
                                        for key in ROUND_KEYS}
    try:
        result["docker"] = docker_client().version()["Version"]
    except Exception:
        pass
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
