"""WildClawBench's own options, checked once into WildOptions before anything is written."""
from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import pytest

from pytest_clawswe.paths import INSTANCES_DIR

DEMO_DIR = INSTANCES_DIR / "wildclaw-demo"


def dataset_root(config: pytest.Config) -> Path:
    dataset = config.getoption("dataset")
    if dataset == "demo":
        return DEMO_DIR
    path = Path(dataset or "")
    if not dataset or not path.is_dir():
        raise pytest.UsageError(f"--benchmark wildclaw needs --dataset PATH, a folder of task files or a checkout "
                                f"of the suite (with tasks/ and workspace/), or --dataset demo; {dataset!r} is "
                                "not a folder")
    return path.resolve()


def options(config: pytest.Config):

    if not 0.0 <= config.getoption("pass_score") <= 1.0:
        raise pytest.UsageError("--pass-score must be between 0 and 1 (overall_score is in [0, 1])")
    judge = config.getoption("judge_model").strip()
    if not judge or judge.endswith("/") or judge.startswith("/"):
        raise pytest.UsageError(f"--judge-model {judge!r} names no model: give provider/model, e.g. --judge-model "
                                "openai/gpt-5.4 (as released), or scripted/judge to grade offline")
    if not config.getoption("grade_timeout") > 0:
        raise pytest.UsageError("--grade-timeout must be a positive number of seconds, e.g. 120 (as released)")
    factor = config.getoption("budget_factor")
    if not (math.isfinite(factor) and factor > 0):
        raise pytest.UsageError(f"--budget-factor {factor:g}: give a positive factor for every task's timeout_seconds, "
                                "e.g. --budget-factor 0.5 (half the time) or 2")
    from pytest_clawswe.engine.world import max_bytes

    try:
        max_bytes()  # the agent's world's budget, read at the end of each task: a bad value is refused now
    except ValueError as exc:
        raise pytest.UsageError(str(exc)) from None
    fixtures = config.getoption("scripted_fixtures")
    if fixtures and not Path(fixtures).is_dir():
        raise pytest.UsageError(f"--scripted-fixtures {fixtures}: no such folder; give a folder holding "
                                "<task id>/solve.sh, judge.json or vision.json")
    return WildOptions(dataset_root(config), config.getoption("judge_model"), config.getoption("pass_score"),
                       config.getoption("grade_timeout"), Path(fixtures).resolve() if fixtures else None,
                       task_image=config.getoption("task_image"), budget_factor=factor,
                       skills=not config.getoption("no_skills"))


@dataclass
class WildOptions:
    dataset_root: Path
    judge_model: str = "openai/gpt-5.4"
    pass_score: float = 0.5
    grade_timeout_s: float = 120.0
    scripted_fixtures: Path | None = None  # per-task behaviours and judge/vision answers (fixtures.py)
    task_image: str | None = None  # --task-image: the agent's image instead of ours (graders keep ours)
    budget_factor: float = 1.0  # --budget-factor: every task's timeout_seconds times this (an ablation)
    skills: bool = True  # False: --no-skills (an ablation)

    def budget(self, timeout_seconds: float) -> float:
        """A task's budget in seconds: its own timeout_seconds, scaled by --budget-factor (ms precision, so 300 x
        0.05 is stated as 15, not 15.000000000000002)."""
        return round(timeout_seconds * self.budget_factor, 3)

    def ablations(self) -> list[str]:
        """The paper's ablations this run makes (empty: the released protocol), one line each."""
        lines = []
        if self.budget_factor != 1.0:
            lines.append(f"--budget-factor {self.budget_factor:g}: every task's timeout_seconds x{self.budget_factor:g}"
                         ", stated so in its prompt")
        if not self.skills:
            lines.append("--no-skills: no task got its skills")
        return lines
