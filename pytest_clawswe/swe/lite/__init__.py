"""Lite subsets: cost-aware, rank-aware selection of K instances per language, and the K-sweep.

    data     calibration input (run directories, CSV tables) and a synthetic generator
    selection quartiles, quotas, the objective and the restarted 1-swap local search
    gates    parity / ranking / cost gates, the selection report, the K-sweep
    cli      `clawswe lite select|sweep`
"""
from pytest_clawswe.swe.lite.cli import add_cli
from pytest_clawswe.swe.lite.data import Calibration, load_calibration, synthetic_calibration, write_long_table
from pytest_clawswe.swe.lite.gates import Gates, gate_report, kendall_tau_b, random_baseline, selection_report, sweep
from pytest_clawswe.swe.lite.selection import (
    COST_ALPHA,
    DEFAULT_K,
    DEFAULT_RESTARTS,
    QUOTA_AT_10,
    RANK_EPS,
    RANK_LAMBDA,
    RANK_MARGIN,
    Problem,
    Selection,
    Weights,
    quartile_quota,
    select,
)

__all__ = [
    "add_cli", "Calibration", "load_calibration", "synthetic_calibration", "write_long_table", "Gates",
    "gate_report", "kendall_tau_b", "random_baseline", "selection_report", "sweep", "COST_ALPHA", "DEFAULT_K",
    "DEFAULT_RESTARTS", "QUOTA_AT_10", "RANK_EPS", "RANK_LAMBDA", "RANK_MARGIN", "Problem", "Selection",
    "Weights", "quartile_quota", "select",
]
