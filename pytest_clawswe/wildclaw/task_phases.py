"""A WildClawBench task's run as named phases (run/item/phases.py), a mixin of TaskRunner.

In order, in the setup stage: check (its workspace, skills, fixtures), images, prompt, register (the gateway's
tokens, before the container: its OPENROUTER_* variables need them), plan (the container's settings, the services),
setup (the container, its services, inputs, warmup, the network lock); in the agent stage: agent, agent_end, snapshot,
world, sandbox_remove, transcript (the gateway's record of the agent's calls); in the verify stage: verify (the
grader's container, the judge: its seconds are timings["grade"]). The timed ones keep their seconds under their names in result.json's timings (as
wildclaw/benchmark.py's timing_phases read them).
"""
from __future__ import annotations

from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pytest_clawswe.errors import InfraError
from pytest_clawswe.labels import LABEL_INSTANCE, LABEL_ROLE
from pytest_clawswe.harness.adapter import AgentContext, AgentRun
from pytest_clawswe.harness.deadline import Deadline
from pytest_clawswe.model import VISION, Model
from pytest_clawswe.run.item.phases import AGENT, ALWAYS, NEVER, SETUP, VERIFY, Phase, staged
from pytest_clawswe.run.spending import ledger_name
from pytest_clawswe.wildclaw.grading import fixtures, grader, transcript
from pytest_clawswe.wildclaw.task import container, image_helper
from pytest_clawswe.wildclaw.results import TaskResult
from pytest_clawswe.wildclaw.services import plan as services
from pytest_clawswe.wildclaw.task.file import Task, suite_root


@dataclass
class TaskRun:
    """What the phases of one task hand on to each other."""

    task: Task
    work: Path
    result: TaskResult
    stack: ExitStack  # the task's container (and its services), removed when it closes
    deadline: Deadline  # made once by the runner (items.new_deadline), read by every phase
    suite: Path = Path()
    ws_dir: Path = Path()
    found: Any = None  # the task's fixtures (wildclaw/grading/fixtures.py)
    task_image: str = ""
    grader_image: str = ""
    prompt: str = ""
    image_helper: bool = False  # the harness's image helper goes into the container (and its prompt section)
    tokens: dict[str, str] = field(default_factory=dict)
    plan: Any = None  # its services' plan
    ws_args: dict = field(default_factory=dict)
    ws: Any = None
    car: Any = None  # the services' sidecar (None: the task has none)
    ctx: AgentContext | None = None
    run: AgentRun | None = None
    agent_records: list[dict] = field(default_factory=list)


class TaskPhases:
    """The phase steps; `self` is the TaskRunner (its attributes and methods, for the type checker, below)."""

    config: Any
    options: Any
    harness: Any
    client: Any
    gateway: Any
    prices: Any
    progress: Any
    labels: Any
    workspace_factory: Any
    _images: Any
    _ensure_harness: Any
    _register: Any
    _usage: Any
    _task_env: Any
    provider_outcome: Any
    grade_and_score: Any

    def phases(self) -> list[Phase]:
        return [*staged(SETUP, Phase("check", self._check, NEVER), Phase("images", self._task_images),
                        Phase("prompt", self._prompt, NEVER), Phase("register", self._tokens, NEVER),
                        Phase("plan", self._plan, NEVER), Phase("setup", self._setup)),
                *staged(AGENT, Phase("agent", self._agent, ALWAYS, after=self._agent_usage),
                        Phase("agent_end", self._agent_end, NEVER),
                        Phase("snapshot", lambda s: container.keep_snapshot(s.ws, s.work, s.result.warnings)),
                        Phase("world", lambda s: container.keep_world(s.ws, s.work, s.result.warnings)),
                        Phase("sandbox_remove", lambda s: s.stack.close(), NEVER),
                        Phase("transcript", self._transcript, NEVER)),
                *staged(VERIFY, Phase("verify", lambda s: self.grade_and_score(s.task, s.found, s.work,
                                                                               s.grader_image, s.result), NEVER))]

    def _check(self, s: TaskRun) -> None:
        task = s.task
        s.result.budget_s = s.deadline.agent_s
        s.suite = suite_root(self.options.dataset_root)
        s.ws_dir = s.suite / task.workspace_path
        if not (s.ws_dir / "exec").is_dir():
            raise container.TaskSetupError(f"{task.id}: its workspace {s.ws_dir} has no exec/ folder; download the "
                                       "suite's workspace/ next to tasks/ (or make stand-ins: clawswe wildclaw standin)")
        # as released: warned, and the task goes on; --no-skills: none is copied, none is missing
        s.result.warnings = container.missing_skills(task, s.suite) if self.options.skills else []
        try:
            s.found = fixtures.for_task(task.id, s.ws_dir, self.options.scripted_fixtures)
        except fixtures.FixtureError as exc:
            raise container.TaskSetupError(f"{task.id}: {exc}") from None

    def _task_images(self, s: TaskRun) -> None:
        if self._images is None:
            from pytest_clawswe.wildclaw.task.images import ensure_images

            self._images = ensure_images(self.client, self.progress)
        task_image, s.grader_image = self._images
        s.task_image = self.options.task_image or task_image

    def _prompt(self, s: TaskRun) -> None:
        self._ensure_harness()
        s.prompt = s.task.full_prompt(s.deadline.agent_s)
        s.image_helper = self.harness.image_helper and image_helper.wanted(s.prompt, s.ws_dir / "exec")
        if self.harness.inline_skills:  # Codex's prompt has its released sections, skills or not
            s.prompt = container.inline_skills(s.task, s.suite, s.prompt, self.harness.skill_dirs[0],
                                               skills=self.options.skills, image_helper=s.image_helper)
        (s.work / "prompt.txt").write_text(s.prompt)

    def _tokens(self, s: TaskRun) -> None:
        """Tokens first: the task's OPENROUTER_* variables must exist when the container starts."""
        if self.gateway is None:
            return
        task, model = s.task, self.config.model
        scripted = None
        if model.is_scripted:
            scripted = {"solution": s.found.solution, "workdir": container.WORKDIR}
        try:
            s.tokens["agent"] = self._register(task.id, model, scripted)
            tool_model, tool_script = model, None
            if scripted is not None:  # the agent's own model calls: the task's vision fixtures, or the default
                tool_model, tool_script = Model.scripted(VISION), {"fixtures": s.found.vision}
            s.tokens["tools"] = self._register(ledger_name(task.id, "tools"), tool_model, tool_script)
        except ValueError as exc:
            hint = ("; give it a behaviour in --scripted-fixtures DIR/<task id>/solve.sh"
                    if "reference solution" in str(exc) else "")
            raise container.TaskSetupError(f"{task.id}: the gateway refused the model: {exc}{hint}") from None

    def _plan(self, s: TaskRun) -> None:
        cfg, task = self.config, s.task
        docker_args = self.harness.get_docker_args(task.id)
        # as released, a harness with the image helper (Codex) has OPENROUTER_* whatever the task's Env says
        always = image_helper.ENV if self.harness.image_helper else ()
        docker_args["environment"] = {**docker_args.get("environment", {}),
                                      **self._task_env(task, s.tokens.get("tools", ""), always)}
        s.plan = services.plan(task, s.ws_dir)  # before any container: a wrong config is one sentence
        s.result.warmup_moved = s.plan.moved
        # warmup lines may reach package registries: on a locked run they run on the open bridge, the agent never
        # does (the internet network reaches them already)
        locked = cfg.network_mode == "locked" and cfg.network not in (None, "none")
        s.ws_args = dict(labels={**self.labels, LABEL_INSTANCE: task.id, LABEL_ROLE: "agent"},
                         mem_limit=cfg.mem_limit, pids_limit=cfg.pids_limit,
                         network="bridge" if s.plan.warmup and locked else cfg.network,
                         read_only={str(s.ws_dir / "exec"): grader.APP}, **docker_args)

    def _setup(self, s: TaskRun) -> None:
        cfg, task, first_network = self.config, s.task, s.ws_args["network"]
        ws = self.workspace_factory(s.task_image, **s.ws_args)
        services.declare(self.client, ws, s.plan, self.progress)  # a pod's services container, before it starts
        s.ws = s.stack.enter_context(ws)
        s.result.node = getattr(ws, "node", "")
        # services first: their ports are theirs before any process of the task could bind them
        s.car = services.start(self.client, ws, s.plan, s.work / services.AUDIT_DIR, s.ws_args["labels"],
                               self.progress)
        if s.car is not None:
            s.result.timings["services"] = round(s.car.start_seconds, 3)
            s.stack.callback(services.stop, s.car)  # on every path out, before the container goes (a no-op if done)
        container.put_tree(ws, s.ws_dir / "exec", container.WORKDIR)
        if (s.ws_dir / "tmp").is_dir():
            container.put_tree(ws, s.ws_dir / "tmp", f"{container.WORKDIR}/tmp")
        ws.exec(["chmod", "-R", "u+w", container.WORKDIR])  # as released: the copy is writable
        s.ctx = AgentContext(task.id, {"task": task.id}, ws, s.work, cfg.model.spec, s.deadline, workdir=container.WORKDIR)
        if self.gateway is not None:
            s.ctx.gateway_url, s.ctx.gateway_token = self.gateway.url, s.tokens["agent"]
        container.run_warmup(ws, task, s.plan.warmup)
        if s.image_helper:  # as released: after the warmup, before the agent
            image_helper.install(ws, container.WORKDIR, cfg.model.spec)
        if first_network != cfg.network:
            container.lock_network(self.client, ws, cfg.network)

    def _agent(self, s: TaskRun) -> None:
        cfg = self.config
        try:  # skills after create_agent, which resets the harness's state folder
            skills = (lambda: container.copy_skills(s.ws, s.task, s.suite, cfg.harness_name)) if self.options.skills \
                else None
            s.run = container.agent_phase(self.harness, s.ctx, s.prompt, cfg.disk_limit, after_create=skills)
        finally:
            if s.car is not None:  # the audit is complete: no process of the agent is left to call
                services.stop(s.car)

    def _agent_usage(self, s: TaskRun) -> None:
        if "agent" not in s.tokens:
            return
        result = s.result
        usage, s.agent_records = self._usage(s.tokens.pop("agent"))
        tool_usage, _ = self._usage(s.tokens.pop("tools"))
        result.usage, result.tool_usage = vars(usage), vars(tool_usage)
        if self.config.model.is_scripted and s.found.vision_default and tool_usage.requests:
            result.warnings.append(f"the scripted vision default answered {tool_usage.requests} of the "
                                   "agent's own model call(s) (no vision.json for this task)")
        result.cost_usd = self.prices.cost_usd(usage + tool_usage, self.config.model.spec)

    def _agent_end(self, s: TaskRun) -> None:
        run, result = s.run, s.result
        # empty when the agent deleted the harness's output files in its container: say so
        (s.work / "agent.log").write_text(run.output or f"(no harness output was left: {run.message or run.finish_reason})\n")
        result.finish_reason, result.harness_usage = run.finish_reason, run.harness_usage
        if run.message and run.finish_reason in ("error", "disk_limit"):
            result.error = run.message
        if self.gateway is not None:  # the same rule as Claw-SWE-Bench's (provider.py): raises an error
            try:
                result.finish_reason = self.provider_outcome(s.agent_records, result) or result.finish_reason
            except InfraError as exc:  # its sentence, not the harness's exit message
                result.finish_reason, result.error = "provider_error", str(exc)
                raise

    def _transcript(self, s: TaskRun) -> None:
        """The agent's container is gone: nothing it started can touch what follows. The transcript is the
        gateway's record of the agent's calls (the trajectory's record), not anything the agent wrote."""
        messages: list[dict] = []
        if self.gateway is not None:
            calls = transcript.recorded_calls(self.gateway.state_dir, s.task.id, s.agent_records)
            messages, notes = transcript.from_calls(calls)
            s.result.warnings += notes
        (s.work / "transcript.jsonl").write_text(transcript.to_jsonl(transcript.session_lines(messages)))
        grader.keep_grading_inputs(s.work, s.task, s.ws_dir)
