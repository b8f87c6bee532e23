"""One WildClawBench task from start to finish: agent container, snapshot, grader container, outputs.

As for Claw-SWE-Bench (both runners are item_runner.ItemRunner's), a task's folder is written as a hidden
partial folder and renamed into place at the end, so a crash leaves each task complete or absent and a resume
re-runs only what is absent or errored; a retryable infrastructure error re-runs the task once from scratch.
Every container carries the run's labels, so `clawswe clean --run-id` finds them.
"""
from __future__ import annotations

import functools
import time
from dataclasses import replace
from pathlib import Path

from pytest_clawswe.engine.docker_workspace import LABEL_INSTANCE, LABEL_ROLE, InfraError, Workspace
from pytest_clawswe.harness.adapter import AgentContext
from pytest_clawswe.run.config import RunConfig
from pytest_clawswe.run.item_runner import ItemRunner
from pytest_clawswe.usage import Usage
from pytest_clawswe.wildclaw import fixtures, grader, transcript
from pytest_clawswe.wildclaw import task_container as agent
from pytest_clawswe.wildclaw.options import WildOptions
from pytest_clawswe.wildclaw.results import FAILED, PASSED, RESULT, TaskResult, task_dir, task_score, write_task_files
from pytest_clawswe.wildclaw.services import plan as services
from pytest_clawswe.wildclaw.taskfile import Task, suite_root

OPENROUTER_VARS = ("OPENROUTER_API_KEY", "OPENROUTER_BASE_URL")
JUDGE_DEFAULT_NOTE = "the scripted judge answered"  # how a warning about the scripted judge's default begins


class TaskRunner(ItemRunner):
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
    def _register(self, instance_id: str, model: str, scripted: dict | None) -> str:
        from pytest_clawswe.gateway.control.run_gateway import _unreachable_is_infra

        with _unreachable_is_infra():
            return self.gateway.client.register(instance_id, model, scripted=scripted, ceiling=self.gateway.ceiling)

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
                          harness=cfg.harness_name, model=cfg.model, judge_model=self.options.judge_model,
                          pass_score=self.options.pass_score, timeout_seconds=task.timeout_seconds)

    def run_phases(self, task: Task, work: Path, result: TaskResult) -> None:
        cfg, timings = self.config, result.timings
        # --budget-factor: the agent's budget and the budget its prompt states (result.json keeps the task's own)
        task = replace(task, timeout_seconds=self.options.budget(task.timeout_seconds))
        result.budget_s = task.timeout_seconds
        suite = suite_root(self.options.dataset_root)
        ws_dir = suite / task.workspace_path
        if not (ws_dir / "exec").is_dir():
            raise agent.TaskSetupError(f"{task.id}: its workspace {ws_dir} has no exec/ folder; download the suite's "
                                       "workspace/ next to tasks/ (or make stand-ins: clawswe wildclaw standin)")
        # as released: warned, and the task goes on; --no-skills: none is copied, none is missing
        result.warnings = agent.missing_skills(task, suite) if self.options.skills else []
        try:
            found = fixtures.for_task(task.id, ws_dir, self.options.scripted_fixtures)
        except fixtures.FixtureError as exc:
            raise agent.TaskSetupError(f"{task.id}: {exc}") from None
        t = time.monotonic()
        if self._images is None:
            from pytest_clawswe.wildclaw.task_images import ensure_images

            self._images = ensure_images(self.client, self.progress)
        task_image, grader_image = self._images
        task_image = self.options.task_image or task_image
        timings["images"] = round(time.monotonic() - t, 3)
        self._ensure_harness()
        prompt = task.full_prompt()
        if self.harness.inline_skills and self.options.skills:
            prompt = agent.inline_skills(task, suite, prompt, self.harness.skill_dirs[0])
        (work / "prompt.txt").write_text(prompt)

        # tokens first: the task's OPENROUTER_* variables must exist when the container starts
        tokens = {}
        if self.gateway is not None:
            scripted = None
            if cfg.model.startswith("scripted/"):
                scripted = {"solution": found.solution, "workdir": agent.WORKDIR}
            try:
                tokens["agent"] = self._register(task.id, cfg.model, scripted)
                tool_model, tool_script = cfg.model, None
                if scripted is not None:  # the agent's own model calls: the task's vision fixtures, or the default
                    tool_model, tool_script = "scripted/vision", {"fixtures": found.vision}
                tokens["tools"] = self._register(f"{task.id}.tools", tool_model, tool_script)
            except ValueError as exc:
                hint = ("; give it a behaviour in --scripted-fixtures DIR/<task id>/solve.sh"
                        if "reference solution" in str(exc) else "")
                raise agent.TaskSetupError(f"{task.id}: the gateway refused the model: {exc}{hint}") from None
        env = self._task_env(task, tokens.get("tools", ""))
        docker_args = self.harness.get_docker_args(task.id)
        docker_args["environment"] = {**docker_args.get("environment", {}), **env}
        labels = {**self.labels, LABEL_INSTANCE: task.id, LABEL_ROLE: "agent"}
        plan = services.plan(task, ws_dir)  # before any container: a wrong config is one sentence
        result.warmup_moved = plan.moved
        # warmup lines may reach package registries: on a locked run they run on the open bridge, the agent never
        # does (the internet network reaches them already)
        locked = cfg.network_mode == "locked" and cfg.network not in (None, "none")
        first_network = "bridge" if plan.warmup and locked else cfg.network
        t = time.monotonic()
        ws = self.workspace_factory(task_image, labels=labels, mem_limit=cfg.mem_limit, pids_limit=cfg.pids_limit,
                                    network=first_network, read_only={str(ws_dir / "exec"): grader.APP}, **docker_args)
        services.declare(self.client, ws, plan, self.progress)  # a pod's services container, before it starts
        with ws:
            result.node = getattr(ws, "node", "")
            # services first: their ports are theirs before any process of the task could bind them
            car = services.start(self.client, ws, plan, work / services.AUDIT_DIR, labels, self.progress)
            if car is not None:
                timings["services"] = round(car.start_seconds, 3)
            try:
                agent.put_tree(ws, ws_dir / "exec", agent.WORKDIR)
                if (ws_dir / "tmp").is_dir():
                    agent.put_tree(ws, ws_dir / "tmp", f"{agent.WORKDIR}/tmp")
                ws.exec(["chmod", "-R", "u+w", agent.WORKDIR])  # as released: the copy is writable
                ctx = AgentContext(task.id, {"task": task.id}, ws, work, cfg.model, task.timeout_seconds,
                                  workdir=agent.WORKDIR)
                if self.gateway is not None:
                    ctx.gateway_url, ctx.gateway_token = self.gateway.url, tokens["agent"]
                agent.run_warmup(ws, task, plan.warmup)
                if first_network != cfg.network:
                    agent.lock_network(self.client, ws, cfg.network)
                timings["setup"] = round(time.monotonic() - t, 3)

                t = time.monotonic()
                try:  # skills after create_agent, which resets the harness's state folder
                    skills = (lambda: agent.copy_skills(ws, task, suite, cfg.harness_name)) if self.options.skills \
                        else None
                    run = agent.agent_phase(self.harness, ctx, prompt, cfg.disk_limit, after_create=skills)
                finally:
                    if car is not None:  # the audit is complete: no process of the agent is left to call
                        services.stop(car)
                    timings["agent"] = round(time.monotonic() - t, 3)
                    agent_records: list[dict] = []
                    if "agent" in tokens:
                        usage, agent_records = self._usage(tokens.pop("agent"))
                        tool_usage, _ = self._usage(tokens.pop("tools"))
                        result.usage, result.tool_usage = vars(usage), vars(tool_usage)
                        if cfg.model.startswith("scripted/") and found.vision_default and tool_usage.requests:
                            result.warnings.append(f"the scripted vision default answered {tool_usage.requests} of the "
                                                   "agent's own model call(s) (no vision.json for this task)")
                        result.cost_usd = self.prices.cost_usd(usage + tool_usage, cfg.model)
                # empty when the agent deleted the harness's output files in its container: say so
                (work / "agent.log").write_text(run.output or f"(no harness output was left: {run.message or run.finish_reason})\n")
                result.finish_reason, result.harness_usage = run.finish_reason, run.harness_usage
                if run.message and run.finish_reason in ("error", "disk_limit"):
                    result.error = run.message
                if self.gateway is not None:  # the same rule as Claw-SWE-Bench's (provider.py): raises an error
                    try:
                        result.finish_reason = self.provider_outcome(agent_records, result) or result.finish_reason
                    except InfraError as exc:  # its sentence, not the harness's exit message
                        result.finish_reason, result.error = "provider_error", str(exc)
                        raise
                t = time.monotonic()
                agent.keep_snapshot(ws, work, result.warnings)
                timings["snapshot"] = round(time.monotonic() - t, 3)
                t = time.monotonic()
                agent.keep_world(ws, work, result.warnings)
                timings["world"] = round(time.monotonic() - t, 3)
            finally:
                if car is not None:  # on every path out, before the agent's container goes (a no-op if done)
                    services.stop(car)
        # the agent's container is gone: nothing it started can touch what follows. The transcript is the
        # gateway's record of the agent's calls (the trajectory's record), not anything the agent wrote
        messages: list[dict] = []
        if self.gateway is not None:
            calls = transcript.recorded_calls(self.gateway.state_dir, task.id, agent_records)
            messages, notes = transcript.from_calls(calls)
            result.warnings += notes
        (work / "transcript.jsonl").write_text(transcript.to_jsonl(transcript.session_lines(messages)))
        grader.keep_grading_inputs(work, task, ws_dir)
        self.grade_and_score(task, found, work, grader_image, result)

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

    def _task_env(self, task: Task, tools_token: str) -> dict[str, str]:
        import os

        from pytest_clawswe.harness.gateway_urls import openai_base_url

        env = {}
        for line in task.env:
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
            answers = {"fixtures": found.judge} if judge_model == "scripted/judge" else None
            try:
                token = self._register(f"{task.id}.judge", judge_model, answers)
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
        if judge_model == "scripted/judge" and found.judge_default and usage.requests:
            result.warnings.append(f"{JUDGE_DEFAULT_NOTE} {usage.requests} request(s) with its default "
                                   f"score {fixtures.DEFAULT_JUDGE['*']['score']} (no judge.json for this task)")
        result.judge_cost_usd = self.prices.cost_usd(usage, judge_model)
        judge_failed = grader.judge_failure(records)
        if judge_failed:  # graders often catch the judge's exception and score 0: that 0 is not the agent's
            raise grader.GradeError(f"{task.id}: {judge_failed}")
        if failure is not None:
            raise failure
        return graded
