"""`clawswe compare RUN_A RUN_B`: did B regress against A? For a CI job to gate on.

Pairs the instances (Claw-SWE-Bench) or tasks (WildClawBench) both runs finished, and reports the paired
difference B - A of the resolve rate (exact McNemar test, Newcombe's interval: stats.py) or of the mean
score (sign-flip test, bootstrap interval: score_stats.py), and the items that flipped either way.
Exit status: 0 no significant regression, 1 a significant regression of B against A, 2 not comparable
(another benchmark, dataset or revision, or protocol settings that change results; or not a run folder).
Items that ended in an infrastructure error are not results: they are left out of the pairs and listed.
"""
from __future__ import annotations

import argparse
import json
import math
import statistics
from dataclasses import dataclass, field
from pathlib import Path

from pytest_clawswe.errors import UserError
from pytest_clawswe.files import load_run_info, write_atomic
from pytest_clawswe.report import stats
from pytest_clawswe.report.health import UNHEALTHY, Health, counts, load_health
from pytest_clawswe.report.score_stats import compare_scores
from pytest_clawswe.run.benchmark import Benchmark, benchmark_of

OK, REGRESSION, NOT_COMPARABLE = 0, 1, 2
# run.json settings under which two runs' numbers mean the same thing (harness, model and their options are
# what a comparison compares, so they may differ; prices change cost only); a benchmark adds its own
# (Benchmark.protocol_keys)
PROTOCOL = ("budget_s", "mem_limit", "pids_limit", "disk_limit", "network", "retries", "gateway_shaping",
            "grade_provider_failures")


@dataclass
class RunData:
    path: Path
    info: dict
    benchmark: str
    kind: type[Benchmark] | None = None  # the installed benchmark that made it
    values: dict[str, float] = field(default_factory=dict)  # item -> 1.0/0.0 resolved, or the score
    passed: dict[str, bool] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)

    def label(self) -> str:
        return f"{self.info.get('harness', '?')} {self.info.get('model', '?')} ({self.path.name})"


def load_run(path: str | Path) -> RunData:
    run_dir = Path(path)
    info = load_run_info(run_dir)
    if not info:
        raise UserError(f"{run_dir} holds no run (no run.json); give the folders of two finished runs")
    kind = benchmark_of(info)
    if kind is None:
        raise UserError(f"{run_dir} is a run of benchmark {info.get('benchmark')!r}, which is not installed")
    run = RunData(run_dir, info, kind.name, kind)
    run.values, run.passed, run.errors = kind.item_scores(run_dir)
    return run


def why_not_comparable(a: RunData, b: RunData) -> str | None:
    """One sentence saying why the two runs' numbers cannot be compared, or None."""
    if a.benchmark != b.benchmark:
        return (f"A is a {a.benchmark} run and B a {b.benchmark} run: runs of different benchmarks are not "
                "comparable.")
    for key in ("dataset", "dataset_revision"):
        if a.info.get(key) != b.info.get(key):
            return (f"A and B ran different datasets ({key} {a.info.get(key)!r} vs {b.info.get(key)!r}); compare "
                    "runs of the same dataset and revision.")
    keys = PROTOCOL + a.kind.protocol_keys
    if regrade_pair(a, b):  # the same agents' work graded twice: how it was graded is what the comparison shows
        keys = tuple(k for k in keys if k not in a.kind.grading_keys)
    defaults = a.kind.protocol_defaults  # a run from before a setting was recorded ran with its default

    def value(info: dict, key: str):
        return info.get(key, defaults.get(key))

    differ = [f"{k} {value(a.info, k)!r} vs {value(b.info, k)!r}" for k in keys if value(a.info, k) != value(b.info, k)]
    if differ:
        return f"A and B ran under different protocol settings ({', '.join(differ)}); compare runs made alike."
    if not a.values.keys() & b.values.keys():
        return "A and B share no finished instance or task, so there is nothing to pair."
    return None


def regrade_pair(a: RunData, b: RunData) -> str:
    """How one run grades the other again (`clawswe regrade`), e.g. "B regrades A (judge_model 'x' vs 'y')", or ""."""
    for first, second, name in ((a, b, "B regrades A"), (b, a, "A regrades B")):
        of = (second.info.get("regrade") or {}).get("run_id")
        if of and of == first.info.get("run_id"):
            differ = [f"{k} {first.info.get(k)!r} vs {second.info.get(k)!r}" for k in a.kind.grading_keys
                      if first.info.get(k) != second.info.get(k)]
            return f"{name}: the same agents' work graded again" + (f" ({', '.join(differ)})" if differ else "")
    return ""


def compare(a: RunData, b: RunData, alpha: float = 0.05, health: Health | None = None) -> dict:
    """The comparison as the JSON file holds it; `exit_code` says the verdict. `health`: the items it calls
    unhealthy are left out of the pairs (--exclude-unhealthy), and the figures over all pairs are kept beside."""
    out: dict = {"a": _side(a), "b": _side(b), "benchmark": a.benchmark if a.benchmark == b.benchmark else None,
                 "alpha": alpha, "regrade": regrade_pair(a, b) if a.benchmark == b.benchmark else ""}
    reason = why_not_comparable(a, b)
    if reason:
        return {**out, "comparable": False, "reason": reason, "exit_code": NOT_COMPARABLE}
    common = sorted(a.values.keys() & b.values.keys())
    if health is not None:
        out["health"] = _health_side(a, b, common, health)
        common = [k for k in common if k not in out["health"]["excluded"]]
        if not common:
            return {**out, "comparable": False, "exit_code": NOT_COMPARABLE,
                    "reason": "every instance or task both runs finished is unhealthy in the health file, so there "
                              "is nothing to pair; compare without --exclude-unhealthy"}
    confidence = 1 - alpha
    if a.kind.scored:
        s = compare_scores({k: a.values[k] for k in common}, {k: b.values[k] for k in common}, confidence)
        metric, test = "mean_score", "sign-flip permutation test; percentile bootstrap interval"
        rate_a, rate_b, diff, low, high, p = s.mean_a, s.mean_b, s.diff, s.ci_low, s.ci_high, s.p_value
    else:
        c = stats.compare_paired({k: a.passed[k] for k in common}, {k: b.passed[k] for k in common}, confidence)
        metric, test = a.kind.pass_metric, "exact McNemar test; Newcombe hybrid score interval"
        # stats.py reports A - B: the verdict here is about B, so turn it round
        # (0.0 - x, not -x: no difference is +0.0, never printed as -0.0)
        rate_a, rate_b, p = c.pass_a, c.pass_b, c.p_value
        diff, low, high = 0.0 - c.diff, 0.0 - c.ci_high, 0.0 - c.ci_low
    lost = [k for k in common if a.passed[k] and not b.passed[k]]
    gained = [k for k in common if b.passed[k] and not a.passed[k]]
    changed = sorted((k for k in common if a.values[k] != b.values[k]), key=lambda k: b.values[k] - a.values[k])
    regression = p < alpha and diff < 0
    return {**out, "comparable": True, "reason": None, "metric": metric, "test": test, "n_paired": len(common),
            "value_a": rate_a, "value_b": rate_b, "diff_b_minus_a": diff, "confidence": confidence,
            "ci": [low, high], "p_value": p, "significant": p < alpha, "regression": regression,
            "lost": lost, "gained": gained,
            "score_changes": [{"id": k, "a": a.values[k], "b": b.values[k]} for k in changed]
            if metric == "mean_score" else [],
            # an item the other run errored on is listed under its errors, not as missing from it
            "only_in_a": sorted(a.values.keys() - b.values.keys() - set(b.errors)),
            "only_in_b": sorted(b.values.keys() - a.values.keys() - set(a.errors)),
            "errors_a": sorted(a.errors), "errors_b": sorted(b.errors),
            "exit_code": REGRESSION if regression else OK}


def _health_side(a: RunData, b: RunData, common: list[str], health: Health) -> dict:
    """What --exclude-unhealthy leaves out, and both runs' figures over every pair (before it does)."""
    verdicts = {k: health.verdict(k) for k in common}
    excluded = {k: v for k, v in verdicts.items() if v in UNHEALTHY}
    return {"file": health.label(), "excluded": excluded, "not_in_file": sum(not v for v in verdicts.values()),
            "all_pairs": {"n": len(common), "value_a": statistics.fmean(a.values[k] for k in common),
                          "value_b": statistics.fmean(b.values[k] for k in common)}}


def _side(run: RunData) -> dict:
    return {"run": str(run.path), "benchmark": run.benchmark, "harness": run.info.get("harness"),
            "model": run.info.get("model"), "dataset": run.info.get("dataset"), "finished": len(run.values),
            "errors": len(run.errors)}


def _ids(ids: list[str], limit: int = 20) -> str:
    if not ids:
        return "none"
    more = f", ... (+{len(ids) - limit})" if len(ids) > limit else ""
    return ", ".join(ids[:limit]) + more


def lines(result: dict, a: RunData, b: RunData) -> list[str]:
    out = [f"A: {a.label()}", f"B: {b.label()}"] + ([result["regrade"]] if result.get("regrade") else [])
    if not result["comparable"]:
        return out + [f"not comparable: {result['reason']}"]
    scale, unit = (100, " pp") if result["metric"] == "resolve_rate" else (1, "")
    name = "resolve rate" if result["metric"] == "resolve_rate" else "mean score"
    fmt = (lambda v: f"{100 * v:.1f}%") if scale == 100 else (lambda v: f"{v:.3f}")
    low, high = result["ci"]
    health = result.get("health")
    if health:  # --exclude-unhealthy: the figure both ways, and what was left out
        every = health["all_pairs"]
        excluded = health["excluded"]
        out += [f"left out {len(excluded)} unhealthy of {every['n']} paired"
                + (f" ({counts(excluded)})" if excluded else "") + f", health file {health['file']}"
                + (f"; {health['not_in_file']} not in the file (kept)" if health["not_in_file"] else "")
                + (f": {_ids(sorted(excluded))}" if excluded else ""),
                f"{name} both ways: all {every['n']} paired A {fmt(every['value_a'])}, B {fmt(every['value_b'])}"
                f" · healthy only {result['n_paired']} A {fmt(result['value_a'])}, B {fmt(result['value_b'])}"]
    out += [f"{result['benchmark']}, {result['n_paired']} paired {'instances' if scale == 100 else 'tasks'}"
            + (" (healthy only)" if health else ""),
            f"{name}: A {fmt(result['value_a'])}, B {fmt(result['value_b'])}; B - A "
            f"{scale * result['diff_b_minus_a']:+.{1 if scale == 100 else 3}f}{unit}, "
            f"{100 * result['confidence']:.0f}% CI [{scale * low:+.{1 if scale == 100 else 3}f}, "
            f"{scale * high:+.{1 if scale == 100 else 3}f}]{unit}, p = {result['p_value']:.4g} ({result['test']})",
            f"lost in B (passed in A only, {len(result['lost'])}): {_ids(result['lost'])}",
            f"gained in B (passed in B only, {len(result['gained'])}): {_ids(result['gained'])}"]
    for key, what in (("only_in_a", "only in A (not paired)"), ("only_in_b", "only in B (not paired)"),
                      ("errors_a", "errors in A (left out)"), ("errors_b", "errors in B (left out)")):
        if result[key]:
            out.append(f"{what}: {_ids(result[key])}")
    verdict = ("significant regression of B against A" if result["regression"]
               else "B is significantly better than A" if result["significant"]
               else "no significant difference")
    out.append(f"verdict: {verdict} (alpha {result['alpha']:g}); exit {result['exit_code']}")
    return out


def _run(args: argparse.Namespace) -> int:
    if not (0 < args.alpha < 1) or not math.isfinite(args.alpha):
        raise UserError(f"--alpha {args.alpha:g}: give a level between 0 and 1, e.g. --alpha 0.05")
    health = load_health(args.exclude_unhealthy, "--exclude-unhealthy") if args.exclude_unhealthy else None
    a, b = load_run(args.run_a), load_run(args.run_b)
    result = compare(a, b, args.alpha, health)
    print("\n".join(lines(result, a, b)))
    if args.json:
        write_atomic(Path(args.json), json.dumps(result, indent=2) + "\n")
    return int(result["exit_code"])


def add_cli(sub) -> None:
    p = sub.add_parser("compare", help="paired comparison of two runs; exit 1 on a significant regression of B",
                       description=__doc__.split("\n\n")[0] + " Exit 0: no significant regression; 1: B "
                       "significantly worse than A; 2: not comparable (one sentence says why).")
    p.add_argument("run_a", help="the baseline run folder")
    p.add_argument("run_b", help="the run checked against it")
    p.add_argument("--json", metavar="OUT", help="also write the comparison as JSON to this file")
    p.add_argument("--alpha", type=float, default=0.05, help="significance level (default 0.05)")
    p.add_argument("--exclude-unhealthy", metavar="FILE",
                   help="a health file (`clawswe health`): the items it calls flaky, broken or too slow are left out "
                        "of the pairs; the figures over all pairs are shown beside")
    p.set_defaults(func=_run)
