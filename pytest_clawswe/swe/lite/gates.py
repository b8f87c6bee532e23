"""Does a subset stand in for the full set? The gates, the selection report, and the K-sweep.

Gates (thresholds are ours: the paper reports its Lite's figures but not the bars it held them to; these
let the released Lite's published figures pass with room to spare):
  rate parity  per column, |Lite Pass@1 - full Pass@1|: mean <= 2.5 pp and worst <= 5 pp
  ranking      of the column pairs more than RANK_EPS apart on the full set, the share Lite keeps in
               the same strict order >= 0.90; Kendall tau-b of the columns' Pass@1 >= 0.80
  cost         per column, |cost ratio / instance ratio - 1| <= 10 %, where cost ratio = Lite cost /
               full cost and instance ratio = Lite instances / full instances (those with a known cost)

K-sweep: for each K, select under each seed/restart perturbation (seeds seed..seed+n-1, each at the
full restart count and at half of it) and gate every result; K* is the smallest K whose every run passes.
"""
from __future__ import annotations

import time
from dataclasses import asdict, dataclass

import numpy as np

from pytest_clawswe.errors import UserError
from pytest_clawswe.swe.lite.data import Calibration
from pytest_clawswe.swe.lite.selection import DEFAULT_RESTARTS, Problem, Selection, Weights, select

GATE_RATE_MEAN = 0.025
GATE_RATE_MAX = 0.05
GATE_PAIR_AGREEMENT = 0.90
GATE_KENDALL_TAU = 0.80
GATE_COST_DEV = 0.10
SWEEP_KS = tuple(range(4, 13))
SWEEP_SEEDS = 3
RESTART_VARIANTS = (1.0, 0.5)  # fractions of --restarts each seed runs at
RANDOM_BASELINE_SUBSETS = 100


@dataclass(frozen=True)
class Gates:
    rate_mean: float = GATE_RATE_MEAN
    rate_max: float = GATE_RATE_MAX
    pair_agreement: float = GATE_PAIR_AGREEMENT
    kendall_tau: float = GATE_KENDALL_TAU
    cost_dev: float = GATE_COST_DEV


def kendall_tau_b(x: np.ndarray, y: np.ndarray) -> float:
    """Kendall's tau-b (tie-corrected); NaN when either side is all ties."""
    a, b = np.triu_indices(len(x), 1)
    dx, dy = np.sign(x[a] - x[b]), np.sign(y[a] - y[b])
    denom = np.sqrt(np.count_nonzero(dx) * np.count_nonzero(dy))
    return float((dx * dy).sum() / denom) if denom else float("nan")


def _column_sums(values: np.ndarray, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    known = ~np.isnan(values[rows])
    return np.where(known, values[rows], 0.0).sum(axis=0), known.sum(axis=0)


def gate_report(problem: Problem, selected: np.ndarray, gates: Gates = Gates()) -> dict:
    """Every gate's figures and verdict for a selection (mask over the calibration rows)."""
    cal = problem.cal
    pool = np.concatenate([lang.members for lang in problem.langs])
    lite = np.flatnonzero(selected)
    (full_s, full_n), (lite_s, lite_n) = _column_sums(cal.resolved, pool), _column_sums(cal.resolved, lite)
    full_rate, lite_rate = full_s / np.maximum(full_n, 1), lite_s / np.maximum(lite_n, 1)
    diff = np.abs(lite_rate - full_rate)
    by_language = {}
    for lang in problem.langs:
        rows = lang.members[selected[lang.members]]
        (fs, fn), (ls, ln) = _column_sums(cal.resolved, lang.members), _column_sums(cal.resolved, rows)
        by_language[lang.name] = round(float(np.abs(ls / np.maximum(ln, 1) - fs / np.maximum(fn, 1)).mean()), 4)
    rate = {"mean_abs_diff": float(diff.mean()), "max_abs_diff": float(diff.max()),
            "worst_column": cal.columns[int(diff.argmax())], "language_mean_abs_diff": by_language}
    rate["passed"] = rate["mean_abs_diff"] <= gates.rate_mean and rate["max_abs_diff"] <= gates.rate_max

    kept = problem.pair_sign * (lite_rate[problem.pair_a] - lite_rate[problem.pair_b]) > 0
    agreement = float(kept.mean()) if len(kept) else None
    tau = kendall_tau_b(full_rate, lite_rate) if len(cal.columns) > 1 else None
    passed = ((agreement is None or agreement >= gates.pair_agreement)
              and (tau is None or tau >= gates.kendall_tau))  # NaN tau (Lite ties every column) fails
    if tau is not None and np.isnan(tau):
        tau = None  # JSON has no NaN
    ranking = {"ordered_pairs": int(len(kept)), "pair_agreement": agreement, "kendall_tau": tau, "passed": bool(passed)}

    (full_c, full_cn), (lite_c, lite_cn) = _column_sums(cal.cost, pool), _column_sums(cal.cost, lite)
    priced = (full_c > 0) & (lite_cn > 0)
    cost_ratio = lite_c[priced] / full_c[priced]
    instance_ratio = lite_cn[priced] / full_cn[priced]
    dev = np.abs(cost_ratio / instance_ratio - 1)
    cost = {"columns_with_cost": int(priced.sum()),
            "total_cost_ratio": float(lite_c[priced].sum() / full_c[priced].sum()) if priced.any() else None,
            "instance_ratio": len(lite) / len(pool),
            "max_column_dev": float(dev.max()) if priced.any() else None,
            "worst_column": cal.columns[int(np.flatnonzero(priced)[dev.argmax()])] if priced.any() else None,
            "column_cost_ratio": {cal.columns[j]: round(float(r), 4)
                                  for j, r in zip(np.flatnonzero(priced), cost_ratio)}}
    cost["passed"] = bool(cost["max_column_dev"] is None or cost["max_column_dev"] <= gates.cost_dev)
    return {"passed": bool(rate["passed"] and ranking["passed"] and cost["passed"]),
            "rate_parity": rate, "ranking": ranking, "cost": cost, "thresholds": asdict(gates)}


def random_baseline(problem: Problem, count: int = RANDOM_BASELINE_SUBSETS, seed: int = 0) -> dict:
    """Objective of random subsets with the same quotas: what the search is measured against."""
    rng = np.random.default_rng(seed)
    totals = np.array([problem.terms(problem.random_mask(rng))["total"] for _ in range(count)])
    return {"subsets": count, "median": float(np.median(totals)), "best": float(totals.min())}


def selection_report(sel: Selection, gates: Gates = Gates()) -> dict:
    """The JSON report of `clawswe lite select`; its `instances` list also works as --instances-file."""
    p = sel.problem
    return {
        "method": {"k_per_language": p.k, "quartile_quota": list(p.quota), "restarts": sel.restarts,
                   "seed": sel.seed, **asdict(p.w),
                   "quartiles": "within language, by mean resolved rate over the columns; Q1 easiest"},
        "calibration": {"columns": p.cal.columns, "pool": p.n_pool,
                        "languages": {lang.name: len(lang.members) for lang in p.langs},
                        "excluded_no_outcome": p.excluded},
        "instances": sel.rows(),
        "objective": sel.objective(),
        "random_baseline": random_baseline(p, seed=sel.seed),
        "gates": gate_report(p, sel.selected, gates),
        "seconds": round(sel.seconds, 3),
    }


def sweep(cal: Calibration, ks=SWEEP_KS, restarts: int = DEFAULT_RESTARTS, seed: int = 0,
          n_seeds: int = SWEEP_SEEDS, weights: Weights = Weights(), gates: Gates = Gates()) -> dict:
    """Gate every K under seed/restart perturbations; K* = the smallest K whose every run passes."""
    if n_seeds < 1:
        raise UserError(f"--seeds must be at least 1 (got {n_seeds})")
    runs_of = [(s, max(1, round(restarts * f))) for s in range(seed, seed + n_seeds) for f in RESTART_VARIANTS]
    rows = []
    for k in ks:
        started = time.perf_counter()
        try:
            problem = Problem(cal, k, weights)
        except UserError as exc:
            rows.append({"k": k, "feasible": False, "reason": str(exc)})
            continue
        reports, objectives = [], []
        for s, r in runs_of:
            sel = select(cal, k, r, s, problem=problem)
            reports.append(gate_report(problem, sel.selected, gates))
            objectives.append(sel.objective()["total"])
        rows.append({
            "k": k, "feasible": True, "quota": list(problem.quota), "runs": len(reports),
            "passed_runs": sum(g["passed"] for g in reports), "all_passed": all(g["passed"] for g in reports),
            "worst": _worst(reports), "objective_mean": float(np.mean(objectives)),
            "seconds": round(time.perf_counter() - started, 3)})
    k_star = next((row["k"] for row in rows if row.get("all_passed")), None)
    return {"k_star": k_star, "ks": rows, "perturbations": [{"seed": s, "restarts": r} for s, r in runs_of],
            "weights": asdict(weights), "thresholds": asdict(gates)}


def _worst(reports: list[dict]) -> dict:
    def pick(fn, values):
        values = [v for v in values if v is not None]
        return fn(values) if values else None

    return {"rate_mean_abs_diff": pick(max, [g["rate_parity"]["mean_abs_diff"] for g in reports]),
            "rate_max_abs_diff": pick(max, [g["rate_parity"]["max_abs_diff"] for g in reports]),
            "pair_agreement": pick(min, [g["ranking"]["pair_agreement"] for g in reports]),
            "kendall_tau": pick(min, [g["ranking"]["kendall_tau"] for g in reports]),
            "cost_max_column_dev": pick(max, [g["cost"]["max_column_dev"] for g in reports])}
