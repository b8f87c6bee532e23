"""One WildClawBench task from start to finish: agent container, snapshot, grader container, outputs.

As for Claw-SWE-Bench (both runners are item_runner.ItemRunner's), a task's folder is written as a hidden
partial folder and renamed into place at the end, so a crash leaves each task complete or absent and a resume
re-runs only what is absent or errored; a retryable infrastructure error re-runs the task once from scratch.
Every container carries the run's labels, so `clawswe clean --run-id` finds them.
"""
from __future__ import annotations

import functools
import time
from contextlib import ExitStack
from pathlib import Path

from pytest_clawswe.engine.sandbox.docker_workspace import Workspace
from pytest_clawswe.gateway.record.ledger import provider_cost
from pytest_clawswe.labels import LABEL_INSTANCE, LABEL_ROLE
from pytest_clawswe.model import JUDGE, Model
from pytest_clawswe.run.config import RunConfig
from pytest_clawswe.run.item.runner import ItemRunner
from pytest_clawswe.run.item.phases import run_phases, stage_limits
from pytest_clawswe.run.spending import ledger_name
from pytest_clawswe.usage import Usage
from pytest_clawswe.wildclaw.grading import fixtures, grader
from pytest_clawswe.wildclaw.items import new_deadline
from pytest_clawswe.wildclaw.options import WildOptions
from pytest_clawswe.wildclaw.task_phases import TaskPhases, TaskRun
from pytest_clawswe.wildclaw.results import FAILED, PASSED, RESULT, TaskResult, task_dir, task_score, write_task_files
from pytest_clawswe.wildclaw.task.file import Task

OPENROUTER_VARS = ("OPENROUTER_API_KEY", "OPENROUTER_BASE_URL")
JUDGE_DEFAULT_NOTE = "the scripted judge answered"  # how a warning about the scripted judge's default begins


class TaskRunner(TaskPhases, ItemRunner):
    """WildClawBench's runner: a task's folder is tasks/<id>/, its result result.json (with score.json and
    usage.json beside it)."""

    RESULT_FILE = RESULT
    result_type = TaskResult

    def __init__(self, config: RunConfig, options: WildOptions, harness, client, progress=print):
        super().__init__(config, harness, client, progress)
        self.options = options
        self._images: tuple[str, str] | None = None
        # how the task's and the grader's sandboxes are made: a cluster's pods with --kubernetes (engine/kube/)
        self.workspace_factory = functools.partial(Workspace, client)

    def item_dir(self, task_id: str) -> Path:
        return task_dir(self.config.run_dir, task_id)

    def item_id(self, task: Task) -> str:
        return task.id

    def _write_result(self, work: Path, result: TaskResult) -> None:
        write_task_files(work, result)

    # ------------------------------------------------------------------ gateway tokens
    def _register(self, instance_id: str, model: Model, scripted: dict | None, agents: bool = True) -> str:
        """A token for the agent's model or its tools, under --max-instance-cost's ceiling, or (`agents` False) for
        grading's judge, under none: its spending is not the agent's, and the released runner caps none."""
        from pytest_clawswe.gateway.control.run_gateway import _unreachable_is_infra

        with _unreachable_is_infra():
            return self.gateway.client.register(instance_id, model.spec, scripted=scripted,
                                                ceiling=self.gateway.ceiling if agents else None)

    def register_judge(self, task_id: str, judge_model: Model, answers: dict | None) -> str:
        """The judge's token for grading `task_id` (the scripted judge plays `answers`)."""
        return self._register(ledger_name(task_id, "judge"), judge_model, answers, agents=False)

    def _revoke(self, token: str) -> None:
        from pytest_clawswe.gateway.control.run_gateway import _unreachable_is_infra

        with _unreachable_is_infra():
            self.gateway.client.unregister(token)

    def _usage(self, token: str) -> tuple[Usage, list[dict]]:
        from pytest_clawswe.gateway.control.run_gateway import _unreachable_is_infra

        with _unreachable_is_infra():
            usage, records = self.gateway.client.usage(token), self.gateway.client.requests(token)
            self.gateway.client.unregister(token)
        return usage, records

    # ------------------------------------------------------------------ one task
    def new_result(self, task: Task) -> TaskResult:
        # an earlier attempt an infrastructure error ended is not added in: a task's usage is its last
        # attempt's (Claw-SWE-Bench adds the failed attempt's to its metadata.json)
        cfg = self.config
        return TaskResult(task.id, task.name, task.category, task.modality, run_id=cfg.run_id,
                          harness=cfg.harness_name, model=cfg.model.spec, judge_model=self.options.judge_model,
                          pass_score=self.options.pass_score, timeout_seconds=task.timeout_seconds)

    def run_phases(self, task: Task, work: Path, result: TaskResult) -> None:
        deadline = new_deadline(self.options, task, self.config.setup_timeout_s, self.config.agent_allowance_s)
        # past a stage's limit the task's containers go (its sandbox, services, grader): what the stage waits on
        # returns; an image build holds none, the hard stop is its backstop (run/item/phases.py)
        limits = stage_limits(deadline, lambda: self.stop_containers(task.id), count=lambda: self.count_containers(task.id),
                              grace_s=self.harness.grace_s, verify_hint="raise --grade-timeout, then --resume")
        with ExitStack() as stack:  # the task's container and its services go on every path out (task_phases.py)
            run_phases(self.phases(), TaskRun(task, work, result, stack, deadline), result.timings, limits)

    def grade_and_score(self, task: Task, found: fixtures.Fixtures, work: Path, image: str, result: TaskResult) -> None:
        """Grade the task from its folder `work` (what grade_folder reads) into `result`: scores, overall_score,
        outcome; GradeError when grading gave no score (a regrade grades so too: wildclaw/regrade.py)."""
        t = time.monotonic()
        try:
            graded = self._grade(task, found, work, image, result)
        finally:
            result.timings["grade"] = round(time.monotonic() - t, 3)
        result.scores = graded
        score = task_score(graded)
        if score is None:
            raise grader.GradeError(f"{task.id}: grade() returned no number (neither overall_score nor any "
                                    f"numeric criterion): {str(graded)[:200]}")
        result.overall_score = score
        result.outcome = PASSED if result.overall_score >= self.options.pass_score else FAILED

    def _task_env(self, task: Task, tools_token: str, always: tuple[str, ...] = ()) -> dict[str, str]:
        """The container's variables: the task's Env lines, and the names in `always` as if Env listed them."""
        import os

        from pytest_clawswe.harness.gateway_urls import openai_base_url

        env = {}
        for line in (*always, *task.env):
            name, sep, value = line.partition("=")
            name = name.strip()
            if name == "OPENROUTER_API_KEY":
                env[name] = tools_token  # never the real key: a token the gateway counts as tool calls
            elif name == "OPENROUTER_BASE_URL":
                env[name] = openai_base_url(self.gateway.url) if self.gateway else ""
            elif sep:
                env[name] = value.strip()
            elif name in os.environ and not name.endswith(("_KEY", "_TOKEN", "_SECRET")):
                env[name] = os.environ[name]
        return env

    def _grade(self, task: Task, found: fixtures.Fixtures, work: Path, image: str, result: TaskResult) -> dict:
        """grade()'s dict; GradeError when there is none, naming the judge when the judge was the cause."""
        cfg = self.config
        token, judge_model = "", self.options.judge_gateway_model
        if self.gateway is not None:
            answers = {"fixtures": found.judge} if judge_model.scripted_mode == JUDGE else None
            try:
                token = self.register_judge(task.id, judge_model, answers)
            except ValueError as exc:
                raise grader.GradeError(f"{task.id}: the gateway cannot serve the judge model: {exc}") from None
        labels = {**self.labels, LABEL_INSTANCE: task.id, LABEL_ROLE: "grader"}
        how = grader.Grading(self.client, image, labels, cfg.network, cfg.mem_limit, cfg.pids_limit,
                             self.options.grade_timeout_s, self.options.judge_model, token,
                             self.gateway.url if self.gateway else "", revoke=(lambda: self._revoke(token)) if token else None,
                             workspace_factory=self.workspace_factory)
        failure: grader.GradeError | None = None
        graded: dict = {}
        try:
            graded, notes = grader.grade_folder(work, how)
            result.warnings += notes
        except grader.GradeError as exc:
            failure = exc
        usage, records = self._usage(token) if token else (Usage(), [])
        result.judge_usage = vars(usage)  # counted apart from the agent's, even when grading failed
        if judge_model.scripted_mode == JUDGE and found.judge_default and usage.requests:
            result.warnings.append(f"{JUDGE_DEFAULT_NOTE} {usage.requests} request(s) with its default "
                                   f"score {fixtures.DEFAULT_JUDGE['*']['score']} (no judge.json for this task)")
        # a --prices entry under the name the user gave is found by the lookup itself (prices.PriceBook)
        result.judge_cost_usd = self.prices.cost_usd(usage, judge_model.spec)
        result.judge_provider_cost_usd = provider_cost(records)  # beside ours, as the agent's provider_cost_usd
        judge_failed = grader.judge_failure(records, _key_env(judge_model))
        if judge_failed:  # graders often catch the judge's exception and score 0: that 0 is not the agent's
            raise grader.GradeError(f"{task.id}: {judge_failed}")
        if failure is not None:
            raise failure
        return graded


def _key_env(model: Model) -> str:
    """The variable holding the key of the judge's provider (for an error's advice), "" when none serves it."""
    from pytest_clawswe.gateway.upstream.providers import resolve

    if model.is_scripted:
        return ""
    try:
        return resolve(model).key_env
    except ValueError:
        return ""
