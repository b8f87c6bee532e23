"""pytest hooks of the WildClawBench mode: `pytest --benchmark wildclaw --dataset PATH|demo --harness H`.

Registered from pytest_clawswe.plugin (its `pytest_plugins`); the run machinery (run id, run dir, gateway,
locked network, leftovers sweep, xdist hand-over, resume) is the Claw-SWE-Bench session's, reused by
subclassing it; only collection, the runner and the run-level files differ.
"""
from __future__ import annotations

import pytest

from pytest_clawswe.run.benchmark import option_group
from pytest_clawswe.wildclaw import results as outputs
from pytest_clawswe.wildclaw.benchmark import WildClawBench
from pytest_clawswe.wildclaw.items import register_markers
from pytest_clawswe.wildclaw.options import DEFAULT_GRADE_TIMEOUT_S, DEFAULT_JUDGE


def pytest_addoption(parser: pytest.Parser) -> None:
    g = option_group(parser, "wildclaw", "WildClawBench: long-horizon agent tasks graded outside the agent")
    # --judge-model, --pass-score and --grade-timeout default to None (options.py gives the values below): a
    # regrade (--regrade RUN) keeps the run's own unless one is given
    g.addoption("--judge-model", default=None,
                help=f"WildClawBench judge model, reached through the gateway (default: {DEFAULT_JUDGE}, as released; "
                     "a regrade: the run's own); scripted: answers from each task's judge.json fixtures, offline")
    g.addoption("--pass-score", type=float, default=None,
                help=f"a WildClawBench task passes when its overall_score is at least this (default: "
                     f"{outputs.DEFAULT_PASS_SCORE}; the benchmark number is the mean score, which does not depend on it)")
    g.addoption("--scripted-fixtures", metavar="DIR",
                help="offline stand-ins per task for --model scripted/gold and --judge-model scripted: "
                     "DIR/<task id>/solve.sh (the behaviour acted out), judge.json, vision.json; DIR/judge.json and "
                     "DIR/vision.json for every task (default: the task's own solution/solve.sh, judge.json, "
                     "vision.json, else documented defaults)")
    g.addoption("--grade-timeout", type=float, default=None,
                help=f"seconds grade() may run in the grader container (default: {DEFAULT_GRADE_TIMEOUT_S:g}, as released)")
    g.addoption("--budget-factor", type=float, default=1.0, metavar="F",
                help="the paper's time-budget ablation: every task's own timeout_seconds times F, stated so in its "
                     "prompt (default: %(default)s, as released); the run is marked as an ablation")
    g.addoption("--no-skills", action="store_true",
                help="the paper's skills ablation: no task gets its skills (no skill folder, nothing inlined); the "
                     "run is marked as an ablation")
    g.addoption("--task-image", default=None, metavar="IMAGE",
                help="run WildClawBench agents in IMAGE (e.g. a released harness image you loaded) instead of the "
                     "task image built here; harnesses still come from their bundles, graders from our image")


def is_wildclaw(config: pytest.Config) -> bool:
    return config.getoption("benchmark", None) == "wildclaw"


def pytest_configure(config: pytest.Config) -> None:
    register_markers(config)


@pytest.hookimpl
def pytest_clawswe_benchmark(config: pytest.Config):
    """WildClawBench when --benchmark wildclaw (the session asks; Claw-SWE-Bench answers otherwise)."""
    if is_wildclaw(config):
        return WildClawBench(config)
    return None


