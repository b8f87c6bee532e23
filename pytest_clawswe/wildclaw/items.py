"""WildClawBench tasks as pytest items: one item per task file, markers for category and modality.

The run happens in setup, so a setup failure (the harness, Docker, a grader that crashed, a judge that
failed) is a pytest *error*; the call phase only compares overall_score with --pass-score (a failure).
"""
from __future__ import annotations

from pathlib import Path

import pytest

from pytest_clawswe.errors import Verdict
from pytest_clawswe.harness.deadline import AGENT_ALLOWANCE_S, Deadline
from pytest_clawswe.run.item.nodes import BenchmarkCollector, BenchmarkItem
from pytest_clawswe.wildclaw.results import PASSED, TaskResult
from pytest_clawswe.wildclaw.task.file import MODALITIES, Task, TaskFileError, parse_task, task_files

CATEGORY_MARKERS = {"productivity": "Productivity Flow", "code": "Code Intelligence", "social": "Social Interaction",
                    "search": "Search & Retrieval", "creative": "Creative Synthesis", "safety": "Safety Alignment"}
SETUP_ALLOWANCE_S = 900  # the setup stage's limit (image builds, the container, services, warmup) by default


def new_deadline(options, task: Task, setup_timeout_s: float | None = None,
                 agent_allowance_s: float = AGENT_ALLOWANCE_S) -> Deadline:
    """A task's deadline (harness/deadline.py), the one place its time limits are computed: the agent's budget is
    the task's own timeout_seconds scaled by --budget-factor (what its prompt states too; result.json keeps the
    task's own). Made once per task by TaskRunner, read by the agent phase and the harness's wrapper; the item's
    hard stop below is the same function's. One attempt: a task changes its world, a retry would start dirty.
    `setup_timeout_s`: --setup-timeout (RunConfig.setup_timeout_s), the setup stage's limit when given;
    `agent_allowance_s`: --agent-allowance (RunConfig.agent_allowance_s)."""
    return Deadline(options.budget(task.timeout_seconds), setup_s=setup_timeout_s or SETUP_ALLOWANCE_S,
                    grade_s=options.grade_timeout_s, agent_allowance_s=agent_allowance_s)


def register_markers(config: pytest.Config) -> None:
    for marker, category in CATEGORY_MARKERS.items():
        config.addinivalue_line("markers", f"{marker}: WildClawBench {category} tasks")
    for modality in MODALITIES:
        config.addinivalue_line("markers", f"{modality.replace('-', '_')}: WildClawBench {modality} tasks")
    config.addinivalue_line("markers", "wildclaw: a WildClawBench task item")


class NotPassed(Verdict):
    """overall_score below --pass-score: a test failure that gives the score."""


class SuiteCollector(BenchmarkCollector):
    def __init__(self, *, root: Path, options=None, **kwargs):
        super().__init__(**kwargs)
        self.root = root
        self.options = options  # WildOptions (wildclaw/options.py), checked once by WildClawBench

    def collect(self):
        files = task_files(self.root)
        if not files:
            raise self.CollectError(f"{self.root}: no task files (expected tasks/<category>/*.md or *.md files)")
        seen: dict[str, Path] = {}
        for path in files:
            try:
                task = parse_task(path)
            except TaskFileError as exc:
                raise self.CollectError(str(exc)) from None
            if task.id in seen:
                raise self.CollectError(f"{path}: task id {task.id!r} is also used by {seen[task.id]}")
            seen[task.id] = path
            yield TaskItem.from_parent(self, name=task.id, task=task)

    def reportinfo(self):
        return self.root, None, f"WildClawBench tasks in {self.root}"


class TaskItem(BenchmarkItem):
    """One task. The run happens in setup (BenchmarkItem's): a task that could not be scored is an error; the
    call phase compares overall_score with --pass-score (a failure)."""

    result: TaskResult | None = None

    def __init__(self, *, task: Task, **kwargs):
        self.task = task  # first: the base's set-up asks deadline()
        # -k matches the id (the item name) and these words of the task's name and category
        super().__init__(target=task, item_id=task.id, markers=("wildclaw", task.category_marker, task.modality_marker),
                         keywords=(task.name, task.category, task.modality, task.path.stem), **kwargs)

    def deadline(self) -> Deadline | None:
        """The agent's budget is the task's, scaled by --budget-factor: a factor above 1 must not meet the backstop."""
        opts = getattr(self.parent, "options", None)
        if opts is None:
            return None
        from pytest_clawswe.run.session import RUN_KEY

        cfg = self.config.stash.get(RUN_KEY, None)  # --setup-timeout, --agent-allowance: when the run's config is known
        if cfg is None:
            return new_deadline(opts, self.task)
        return new_deadline(opts, self.task, cfg.setup_timeout_s, cfg.agent_allowance_s)

    def runtest(self) -> None:
        r = self.result
        self.user_properties.append(("overall_score", r.overall_score))
        for key, value in sorted(r.scores.items()):
            if key != "overall_score" and isinstance(value, (int, float, str, bool)):
                self.user_properties.append((f"criterion.{key}", value))
        self.user_properties += [("category", r.category), ("modality", r.modality),
                                 ("agent_s", r.timings.get("agent")), ("grade_s", r.timings.get("grade")),
                                 ("judge_input_tokens", r.judge_usage.get("input_tokens", 0)),
                                 ("judge_output_tokens", r.judge_usage.get("output_tokens", 0))]
        if r.outcome != PASSED:
            raise NotPassed(f"overall_score {r.overall_score:.3f} < pass score {r.pass_score}")

    def reportinfo(self):
        return self.task.path, None, f"{self.task.id} [{self.task.category}, {self.task.modality}]"
