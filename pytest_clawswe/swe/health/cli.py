"""`clawswe health`: which instances of a dataset can be trusted, before a harness is blamed for them.

    clawswe health --dataset D [--repeat 3] [-n K] [--out FILE] [--runs DIR] [--chunk N] [--image-cache SIZE]
                   [--instance-ids ID ...] [--dry-run] [-- PYTEST OPTIONS]

Runs the oracle (the gold patch) and the nop (nothing changed; its `run_tests` option makes the evaluator run the
tests on the base commit) `--repeat` times per instance, each repeat one ordinary benchmark run in
RUNS/<harness>.r<k>/, in grid order (swe/grid.py: chunk by chunk every run, so an instance image and its prepared
image are made once and, under --image-cache, kept for the other runs). Then it reads those runs back
(swe/health/runs.py) and writes the health file: per instance gold resolved k/N, nop unresolved k/N, the tests
whose status changed between repeats, the evaluation time and a verdict; a table and a one-line summary end it.
Run the same command again to resume: ended runs are kept, an item that ended in an error runs again.
"""
from __future__ import annotations

import json
import re
import time
from pathlib import Path

from pytest_clawswe.errors import UserError
from pytest_clawswe.files import load_run_info, write_atomic
from pytest_clawswe.report.health import FORMAT, KIND, UNHEALTHY, VERDICTS
from pytest_clawswe.swe import grid
from pytest_clawswe.swe.health.runs import GOLD, NOP, instance_entry, read_run

ROLES = {GOLD: grid.Column("oracle"), NOP: grid.Column("nop", options=["run_tests=true"])}
DEFAULT_IMAGE_CACHE = "50g"
DEFAULT_CHUNK = 25  # instances whose images are made, then used by every run, before the next ones


def columns(repeat: int) -> list[grid.Column]:
    """The check's runs: each role `repeat` times (oracle.r1, ..., nop.r1, ...)."""
    return [grid.Column(c.harness, c.model, f"r{k}", list(c.options)) for c in ROLES.values()
            for k in range(1, repeat + 1)]


def role_of(column: grid.Column) -> str:
    return next(role for role, c in ROLES.items() if c.harness == column.harness)


def reopen(plan: grid.Plan, runs: Path) -> None:
    """A chunk a run ended with an item missing or in an error is run again (its run resumes: kept items stay)."""
    for column in plan.columns:
        done = plan.done.get(column.name, [])
        for n in list(done):
            ended = [read_run(runs / column.name, iid) for iid in plan.chunks[n]]
            if any(r is None or r["error"] for r in ended):
                done.remove(n)


def collect(plan: grid.Plan, runs: Path) -> dict:
    """The health file's content from the check's run folders (what has ended so far)."""
    limit = None
    by_instance: dict[str, dict[str, list[dict]]] = {}
    for column in plan.columns:
        run_dir = runs / column.name
        limit = limit or load_run_info(run_dir).get("eval_timeout_s")
        for chunk in plan.chunks:
            for iid in chunk:
                ended = read_run(run_dir, iid)
                roles = by_instance.setdefault(iid, {GOLD: [], NOP: []})
                if ended is not None:
                    roles[role_of(column)].append(ended)
    items = {iid: instance_entry(roles, limit) for iid, roles in sorted(by_instance.items())}
    tally = {v: sum(e["verdict"] == v for e in items.values()) for v in VERDICTS}
    return {"kind": KIND, "format": FORMAT, "dataset": plan.dataset,
            "repeat": len(plan.columns) // len(ROLES), "eval_timeout_s": limit,
            "written_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "summary": {"instances": len(items), **tally},
            "items": items}


def summary_line(health: dict, out: Path) -> str:
    s = health["summary"]
    parts = ", ".join(f"{s[v]} {v.replace('_', ' ')}" for v in VERDICTS if s[v] or v == "healthy")
    unhealthy = sum(s[v] for v in UNHEALTHY)
    return (f"health: {s['instances']} instances of {health['dataset']}, {parts}; {unhealthy} unhealthy "
            f"({health['repeat']} repeats of the oracle and the nop) -> {out}")


def table_lines(health: dict) -> list[str]:
    """One line per instance: verdict, gold resolved k/N, nop unresolved k/N, slowest evaluation, why."""
    rows = [("instance", "verdict", "gold resolved", "nop unresolved", "eval s (max)", "why")]
    for iid, e in health["items"].items():
        gold, nop = e[GOLD], e[NOP]
        slowest = max((x for x in (gold["eval_s_max"], nop["eval_s_max"]) if x is not None), default=None)
        rows.append((iid, e["verdict"], f"{gold['resolved']}/{gold['runs']}", f"{nop['unresolved']}/{nop['runs']}",
                     "—" if slowest is None else f"{slowest:.1f}", "; ".join(e["reasons"]) or "—"))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]) - 1)]
    return ["  ".join([*(cell.ljust(w) for cell, w in zip(r, widths)), r[-1]]).rstrip() for r in rows]


def _pytest_args(args) -> list[str]:
    extra = list(args.pytest_args)
    if args.workers:
        extra = ["-n", str(args.workers), *extra]
    if not any(a.split("=")[0] in ("--image-cache", "--cache-level") for a in extra):
        extra += ["--image-cache", args.image_cache]
    return extra


def _cmd_health(args) -> int:
    started = time.monotonic()
    if args.repeat < 1:
        raise UserError(f"--repeat {args.repeat}: give 1 or more runs of each harness, e.g. --repeat 3")
    name = re.sub(r"[^A-Za-z0-9_.-]+", "-", Path(args.dataset).name)
    out = Path(args.out or f"health-{name}.json")
    runs = Path(args.runs or out.with_name(out.stem + "-runs"))
    ids = [i for part in (args.instance_ids or []) for i in re.split(r"[\s,]+", part) if i] or None
    fresh = grid.make_plan(args.dataset, columns(args.repeat), args.chunk, ids, _pytest_args(args))
    stored = grid.Plan.load(runs)
    if stored is not None:
        if (stored.dataset, stored.columns, stored.chunks) != (fresh.dataset, fresh.columns, fresh.chunks):
            raise UserError(f"{runs} holds another health check ({grid.PLAN}); resume it with its own dataset, "
                            "--repeat and --chunk, or give another --runs")
        stored.pytest_args = fresh.pytest_args
        fresh = stored
    if args.dry_run:
        return grid.run(fresh, runs, dry_run=True, name="health")
    reopen(fresh, runs)
    fresh.save(runs)
    code = grid.run(fresh, runs, name="health")
    health = collect(fresh, runs)
    write_atomic(out, json.dumps(health, indent=2) + "\n")
    print("\n".join(table_lines(health)))
    print(summary_line(health, out) + f" in {time.monotonic() - started:.0f} s")
    return code


def add_cli(subparsers) -> None:
    p = subparsers.add_parser("health", help="run the oracle and the nop N times per instance: which instances "
                              "are flaky, broken or too slow (a health file for --health)",
                              description=__doc__.split("\n\n")[0])
    p.add_argument("--dataset", required=True, help="as pytest's --dataset: demo, claw-swe-bench, a path, ...")
    p.add_argument("--repeat", type=int, default=3, help="runs of the oracle and of the nop (default: %(default)s)")
    p.add_argument("-n", dest="workers", type=int, metavar="K", help="xdist workers of every run (pytest -n K)")
    p.add_argument("--out", metavar="FILE", help="the health file (default: health-<dataset>.json)")
    p.add_argument("--runs", metavar="DIR", help="the check's run folders (default: beside FILE, <FILE stem>-runs)")
    p.add_argument("--chunk", type=int, default=DEFAULT_CHUNK, metavar="N",
                   help="instances whose runs all end before the next ones start (default: %(default)s)")
    p.add_argument("--image-cache", default=DEFAULT_IMAGE_CACHE, metavar="SIZE",
                   help="images kept across the runs, as pytest's --image-cache (default: %(default)s)")
    p.add_argument("--instance-ids", nargs="+", metavar="ID", help="only these instances")
    p.add_argument("--dry-run", action="store_true", help="print the pytest commands, run nothing")
    p.add_argument("pytest_args", nargs="*", metavar="-- PYTEST OPTIONS",
                   help="options for every run, after --, e.g. -- --eval-timeout 900 --docker-host ...")
    p.set_defaults(func=_cmd_health)
