"""WildClawBench's own options, checked once into WildOptions before anything is written."""
from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import pytest

from pytest_clawswe.model import JUDGE, OPENROUTER, Model, names_scripted
from pytest_clawswe.paths import INSTANCES_DIR
from pytest_clawswe.run.options import Option
from pytest_clawswe.wildclaw.results import DEFAULT_PASS_SCORE

DEMO_DIR = INSTANCES_DIR / "wildclaw-demo"


def dataset_root(config: pytest.Config, kept: dict | None = None) -> Path:
    """The suite's folder: --dataset (demo: the demo set shipped here). A regrade (`kept`: its run's run.json) not
    given another --dataset: where its run found the suite (the run's --dataset may have been relative)."""
    dataset = config.getoption("dataset")
    if dataset == "demo":
        return DEMO_DIR
    if kept and dataset == kept.get("dataset") and kept.get("dataset_root"):
        if Path(kept["dataset_root"]).is_dir():
            return Path(kept["dataset_root"])
        raise pytest.UsageError(f"run {kept.get('run_id')} ran the suite in {kept['dataset_root']}, which is gone; give "
                                "the suite's current folder (with tasks/ and workspace/) with --dataset PATH")
    path = Path(dataset or "")
    if not dataset or not path.is_dir():
        raise pytest.UsageError(f"--benchmark wildclaw needs --dataset PATH, a folder of task files or a checkout "
                                f"of the suite (with tasks/ and workspace/), or --dataset demo; {dataset!r} is "
                                "not a folder")
    return path.resolve()


DEFAULT_JUDGE = "openai/gpt-5.4"  # as released
DEFAULT_GRADE_TIMEOUT_S = 120.0  # as released

GROUP = "clawswe-wildclaw"

# --judge-model, --pass-score and --grade-timeout default to None (options() gives the values above): a regrade
# (--regrade RUN) keeps the run's own unless one is given
OPTIONS: tuple[Option, ...] = (
    Option("--judge-model", f"WildClawBench judge model, reached through the gateway (default: {DEFAULT_JUDGE}, as "
           "released; a regrade: the run's own); scripted: answers from each task's judge.json fixtures, offline",
           "WildOptions.judge_model", dict(default=None)),
    Option("--pass-score", f"a WildClawBench task passes when its overall_score is at least this (default: "
           f"{DEFAULT_PASS_SCORE}; the benchmark number is the mean score, which does not depend on it)",
           "WildOptions.pass_score", dict(type=float, default=None)),
    Option("--scripted-fixtures", "offline stand-ins per task for --model scripted/gold and --judge-model scripted: "
           "DIR/<task id>/solve.sh (the behaviour acted out), judge.json, vision.json; DIR/judge.json and "
           "DIR/vision.json for every task (default: the task's own solution/solve.sh, judge.json, vision.json, else "
           "documented defaults)", "WildOptions.scripted_fixtures", dict(metavar="DIR")),
    Option("--grade-timeout", f"seconds grade() may run in the grader container (default: {DEFAULT_GRADE_TIMEOUT_S:g}, "
           "as released)", "WildOptions.grade_timeout_s", dict(type=float, default=None)),
    Option("--budget-factor", "the paper's time-budget ablation: every task's own timeout_seconds times F, stated so "
           "in its prompt (default: %(default)s, as released); the run is marked as an ablation",
           "WildOptions.budget_factor", dict(type=float, default=1.0, metavar="F")),
    Option("--no-skills", "the paper's skills ablation: no task gets its skills (no skill folder, nothing inlined); "
           "the run is marked as an ablation", "WildOptions.skills", dict(action="store_true")),
    Option("--task-image", "run WildClawBench agents in IMAGE (e.g. a released harness image you loaded) instead of "
           "the task image built here; harnesses still come from their bundles, graders from our image",
           "WildOptions.task_image", dict(default=None, metavar="IMAGE")),
)


def options(config: pytest.Config):
    """WildOptions from the options, checked; a regrade (--regrade RUN) takes RUN's for what is not given."""
    from pytest_clawswe.run.regrade import source

    src = source(config)
    kept = src.info if src is not None else {}

    def given_or_kept(dest: str, key: str, default):
        value = config.getoption(dest)
        if value is not None:
            return value
        return kept[key] if kept.get(key) is not None else default

    pass_score = float(given_or_kept("pass_score", "pass_score", DEFAULT_PASS_SCORE))
    if not 0.0 <= pass_score <= 1.0:
        raise pytest.UsageError("--pass-score must be between 0 and 1 (overall_score is in [0, 1])")
    judge = str(given_or_kept("judge_model", "judge_model", DEFAULT_JUDGE)).strip()
    if not judge or judge.endswith("/") or judge.startswith("/"):
        raise pytest.UsageError(f"--judge-model {judge!r} names no model: give provider/model, e.g. --judge-model "
                                "openai/gpt-5.4 (as released), or scripted/judge to grade offline")
    grade_timeout = float(given_or_kept("grade_timeout", "grade_timeout_s", DEFAULT_GRADE_TIMEOUT_S))
    if not grade_timeout > 0:
        raise pytest.UsageError("--grade-timeout must be a positive number of seconds, e.g. 120 (as released)")
    factor = config.getoption("budget_factor") if src is None else float(kept.get("budget_factor") or 1.0)
    if not (math.isfinite(factor) and factor > 0):
        raise pytest.UsageError(f"--budget-factor {factor:g}: give a positive factor for every task's timeout_seconds, "
                                "e.g. --budget-factor 0.5 (half the time) or 2")
    from pytest_clawswe.engine.sandbox.world import max_bytes

    try:
        max_bytes()  # the agent's world's budget, read at the end of each task: a bad value is refused now
    except ValueError as exc:
        raise pytest.UsageError(str(exc)) from None
    fixtures = config.getoption("scripted_fixtures")
    if fixtures and not Path(fixtures).is_dir():
        raise pytest.UsageError(f"--scripted-fixtures {fixtures}: no such folder; give a folder holding "
                                "<task id>/solve.sh, judge.json or vision.json")
    if src is not None and not fixtures and kept.get("scripted_fixtures"):
        fixtures = kept["scripted_fixtures"]  # the run's own behaviours and judge answers
        if not Path(fixtures).is_dir() and judge_model(judge).scripted_mode == JUDGE:
            raise pytest.UsageError(f"{src.path} was judged with the scripted judge's answers in {fixtures}, which is "
                                    "gone; give them again with --scripted-fixtures DIR (or another --judge-model)")
    if src is None:
        task_image, skills = config.getoption("task_image"), not config.getoption("no_skills")
    else:
        task_image, skills = kept.get("task_image"), bool(kept.get("skills", True))
    return WildOptions(dataset_root(config, kept or None), judge, pass_score, grade_timeout,
                       Path(fixtures).resolve() if fixtures and Path(fixtures).is_dir() else None,
                       task_image=task_image, budget_factor=factor, skills=skills)


def judge_model(judge: str) -> Model:
    """--judge-model as the gateway serves it: `scripted` (or any scripted/ name) is the scripted judge; any other
    name goes to OpenRouter (as released). Raises ValueError (one sentence) for a bad name."""
    if names_scripted(judge):
        return Model.scripted(JUDGE)
    return Model.parse(judge).routed_to(OPENROUTER)


@dataclass(frozen=True)
class WildOptions:
    """WildClawBench's settings, checked once (options()) when its Benchmark is made; nothing changes them."""

    dataset_root: Path
    judge_model: str = DEFAULT_JUDGE
    pass_score: float = 0.5
    grade_timeout_s: float = DEFAULT_GRADE_TIMEOUT_S
    scripted_fixtures: Path | None = None  # per-task behaviours and judge/vision answers (fixtures.py)
    task_image: str | None = None  # --task-image: the agent's image instead of ours (graders keep ours)
    budget_factor: float = 1.0  # --budget-factor: every task's timeout_seconds times this (an ablation)
    skills: bool = True  # False: --no-skills (an ablation)

    @property
    def judge_gateway_model(self) -> Model:
        """The judge as the gateway serves it: the scripted judge, or the model at OpenRouter (as released)."""
        return judge_model(self.judge_model)

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
