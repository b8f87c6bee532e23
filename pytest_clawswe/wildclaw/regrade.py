"""WildClawBench graded again (`clawswe regrade RUN`, run/regrade/): RUN's tasks from what their folders kept.

A task of RUN is graded again when its folder holds what grading reads (grader.py: `grading.json`, the task's
grade() as the run kept it in `grader/automated_checks.py`, `snapshot/`, `world/`, `transcript.jsonl`, `audit/`)
and the suite's workspace it names (its `exec/` at /app, its `gt/`) is still there, or where --dataset says the suite
is now. Nothing of the agent runs: the kept folder is copied into the new run's task folder, the task's grade()
runs in a fresh grader container exactly as in a run (grader.grade_folder), its judge through this run's gateway on
a judge token of its own (--judge-model, the run's own by default; --scripted-fixtures for the scripted judge).
What the agent did and cost (usage, timings, finish reason, trajectory) is RUN's, carried into the new result.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import pytest

from pytest_clawswe.run import regrade
from pytest_clawswe.run.item.nodes import BenchmarkCollector
from pytest_clawswe.run.spending import ledger_name
from pytest_clawswe.wildclaw.grading import fixtures, grader
from pytest_clawswe.wildclaw.items import TaskItem
from pytest_clawswe.wildclaw.results import RESULT, TaskResult, ended_tasks
from pytest_clawswe.wildclaw.task.container import TaskSetupError
from pytest_clawswe.wildclaw.task_runner import JUDGE_DEFAULT_NOTE, TaskRunner
from pytest_clawswe.wildclaw.task.file import Task, category_marker, suite_root

# what grading writes anew in the task's folder (the rest is copied from RUN's)
ANEW = {RESULT, "score.json", "usage.json", "grade.log", grader.GRADING_FILE}
# what grading reads and a task's folder must still hold (world/ and audit/ only where the task had them)
KEPT = (grader.GRADING_FILE, grader.GRADER_CODE, "snapshot/tmp_workspace", "transcript.jsonl")
# what the agent did and cost, carried from RUN's result into the new one
AGENT_FIELDS = ("usage", "tool_usage", "cost_usd", "harness_usage", "finish_reason", "failed_requests",
                "provider_cost_usd", "warmup_moved", "budget_s", "timeout_seconds")


@dataclass
class KeptTask:
    task: Task  # rebuilt from the folder: its grade() as the run kept it
    folder: Path  # RUN's task folder
    workspace: Path  # the suite's workspace of the task, where it is now
    needs_gt: bool = False  # the run found a gt/ there (grading.json says so): it must be there again


def kept_tasks(config: pytest.Config, src: regrade.Source, root: Path) -> tuple[list[KeptTask], list[str]]:
    """RUN's tasks that can be graded again, and those left out (they ended before grading, or RUN is from before
    runs kept grading inputs); pytest.UsageError (one sentence) when a selected task's kept input is gone."""
    found, left_out = [], []
    for task_id, folder, result in ended_tasks(src.path):
        if not (folder / grader.GRADING_FILE).is_file():
            left_out.append(task_id)
            continue
        kept = _kept(folder, result, src, root)
        task = kept.task
        if regrade.selected(config, _names(task, src), _markers(task)):
            _check(kept, src)
        found.append(kept)
    if not found:
        raise pytest.UsageError(f"--regrade {src.path}: no task of the run kept what grading reads (grading.json: the "
                                "run ended every task before grading, or is from before runs kept it)")
    return found, left_out


def _kept(folder: Path, result: dict, src: regrade.Source, root: Path) -> KeptTask:
    inputs = json.loads((folder / grader.GRADING_FILE).read_text())
    recorded = Path(inputs["workspace"])
    relative = ""
    if src.info.get("dataset_root"):
        try:  # the same task's workspace under the suite where it is now (demo: this package's copy)
            relative = str(recorded.relative_to(suite_root(src.info["dataset_root"])))
        except ValueError:
            relative = ""
    workspace = suite_root(root) / relative if relative else recorded
    code = folder / grader.GRADER_CODE
    prompt = folder / "prompt.txt"
    task = Task(path=folder, id=str(result.get("task_id") or folder.name), name=str(result.get("name") or ""),
                category=str(result.get("category") or ""), modality=str(result.get("modality") or "pure-text"),
                timeout_seconds=float(result.get("timeout_seconds") or 0), prompt=prompt.read_text() if prompt.is_file()
                else "", grader_code=code.read_text() if code.is_file() else "", workspace_path=relative)
    return KeptTask(task, folder, workspace, needs_gt=bool(inputs.get("gt")))


def _names(task: Task, src: regrade.Source) -> set[str]:
    """-k's names of the task's item (items.TaskItem's, and its collector's)."""
    return {task.id, collector_name(src), task.name, task.category, task.modality, task.path.stem}


def _markers(task: Task) -> list[str]:
    return ["wildclaw", category_marker(task.category), task.modality.replace("-", "_")]


def collector_name(src: regrade.Source) -> str:
    return f"regrade-{src.path.name}"


def _check(kept: KeptTask, src: regrade.Source) -> None:
    """Every input grading reads, or one sentence saying which is gone and what to do."""
    task_id = kept.task.id
    for name in KEPT:
        if not (kept.folder / name).exists():
            raise pytest.UsageError(f"{task_id}: {kept.folder / name} is gone, and grading reads it; restore it from a "
                                    f"copy of {src.path}, or leave the task out (-k 'not {task_id}')")
    needed = [kept.workspace / "exec"] + ([kept.workspace / "gt"] if kept.needs_gt else [])
    for path in needed:
        if not path.is_dir():
            raise pytest.UsageError(f"{task_id}: grading it needs the suite's {path.name}/ at {path}, which is not "
                                    "there; give the suite's current folder (with tasks/ and workspace/) with "
                                    "--dataset PATH")


class RegradeCollector(BenchmarkCollector):
    """The tasks of the run graded again, as the same items (ids, markers, -k names) as in a run."""

    def __init__(self, *, benchmark, **kwargs):
        super().__init__(**kwargs)
        self.benchmark = benchmark
        self.options = benchmark.options

    def collect(self):
        try:
            kept = self.benchmark.select()
        except pytest.UsageError as exc:  # a worker meets what the controller already refused
            raise self.CollectError(str(exc)) from None
        for k in kept:
            yield TaskItem.from_parent(self, name=k.task.id, task=k.task)

    def reportinfo(self):
        return self.benchmark.regrade.path, None, f"WildClawBench tasks of {self.benchmark.regrade.path}, graded again"


class TaskRegrader(TaskRunner):
    """A task graded again from RUN's folder: no agent, no harness; the judge through the run's gateway."""

    records_kept = True

    def __init__(self, config, options, client, src: regrade.Source, kept: list[KeptTask], progress=print):
        super().__init__(config, options, None, client, progress)
        self.source = src
        self.kept = {k.task.id: k for k in kept}
        self._before: dict = {}  # the task's result.json in RUN

    def new_result(self, task: Task) -> TaskResult:
        self._before = {}  # until this item's is read
        return super().new_result(task)

    def before_commit(self, task: Task, result: TaskResult, carried) -> None:
        regrade.keep_total(result, self._before)

    def join_run_gateway(self, engine: str = "") -> None:
        """The gateway the session started for the judge (none when it started none)."""
        from pytest_clawswe.gateway.control.run_gateway import RunGateway

        if (self.config.run_dir / "gateway" / "gateway.json").is_file():
            self.gateway = RunGateway(self.config.run_dir / "gateway", self.config.model,
                                      harness=self.config.harness_name)

    def run_phases(self, task: Task, work: Path, result: TaskResult) -> None:
        kept = self.kept[task.id]
        before = self._before = json.loads((kept.folder / RESULT).read_text())
        regrade.copy_item(kept.folder, work, ANEW)
        regrade.copy_records(self.source.path, self.config.run_dir, [task.id, ledger_name(task.id, "tools")])
        carry(before, result)
        result.regrade = {"of": str(self.source.path), **regrade.earlier(before),
                          "overall_score": before.get("overall_score"), "judge_model": before.get("judge_model")}
        grader.keep_grading_inputs(work, task, kept.workspace)  # where the suite is now: this folder regrades too
        try:
            found = fixtures.for_task(task.id, kept.workspace, self.options.scripted_fixtures)
        except fixtures.FixtureError as exc:
            raise TaskSetupError(f"{task.id}: {exc}") from None
        if self._images is None:
            from pytest_clawswe.wildclaw.task.images import ensure_images

            self._images = ensure_images(self.client, self.progress)
        try:
            self.grade_and_score(task, found, work, self._images[1], result)
        finally:  # a grading note the run made too (a link into gt/ left out) is said once
            result.warnings = list(dict.fromkeys(result.warnings))


def carry(before: dict, result: TaskResult) -> None:
    """What the agent did and cost, from RUN's result: usage, finish reason, the agent's timings, its warnings (the
    grading notes are made again)."""
    for name in AGENT_FIELDS:
        if name in before:
            setattr(result, name, before[name])
    result.timings.update({k: v for k, v in (before.get("timings") or {}).items() if k not in ("grade", "total")})
    result.warnings = [w for w in before.get("warnings") or [] if not str(w).startswith(JUDGE_DEFAULT_NOTE)]
