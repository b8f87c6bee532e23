"""A Claw-SWE-Bench instance's run as named phases (run/item/phases.py), a mixin of InstanceRunner.

In order, in the setup stage: load (the dataset row, the prompt), prepare_image (the instance image and the prepared
one), harness, container_start (made ahead or new), purge_check, register (the evaluation's container, the context,
the gateway token); in the agent stage: agent (attempts with retries), agent_end, patch (collected, cleaned),
container_remove, patch_files; in the verify stage: score (swebench in the container made ahead), verdict. The timed ones keep their seconds under their names in
metadata.json's timings (as swe/benchmark.py's timing_phases read them).
"""
from __future__ import annotations

import threading
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pytest_clawswe.engine.workspace import BaseWorkspace
from pytest_clawswe.errors import InfraError
from pytest_clawswe.harness.adapter import AgentContext, AgentRun
from pytest_clawswe.harness.deadline import Deadline
from pytest_clawswe.labels import LABEL_INSTANCE
from pytest_clawswe.run.item.phases import AGENT, ALWAYS, NEVER, SETUP, VERIFY, Phase, staged
from pytest_clawswe.swe.dataset import Instance, load_row
from pytest_clawswe.swe.instance.patch import collect_patch, scrub_artifacts
from pytest_clawswe.swe.instance.prepare import check_purged, prepared_image
from pytest_clawswe.swe.instance.prompt import instance_prompt
from pytest_clawswe.swe.results.run_dir import InstanceResult


@dataclass
class InstanceRun:
    """What the phases of one instance hand on to each other."""

    instance: Instance
    work: Path
    result: InstanceResult
    stack: ExitStack  # the agent's sandbox, removed beside the evaluation when it closes
    deadline: Deadline  # made once by the runner (items.new_deadline), read by every phase
    row: dict = field(default_factory=dict)
    prompt: str = ""
    image: str = ""
    ws: Any = None
    made_ahead: bool = False
    ctx: AgentContext | None = None
    run: AgentRun | None = None
    provider_end: str | InfraError | None = None
    patch: Any = None
    graded: Any = None


class InstancePhases:
    """The phase steps; `self` is the InstanceRunner (its attributes, for the type checker, below)."""

    config: Any
    harness: Any
    client: Any
    eval_client: Any
    gateway: Any
    health: Any
    swe: Any  # SweOptions (InstanceRunner.swe)
    prices: Any
    progress: Any
    labels: Any
    ahead: Any
    _lease: Any
    _eval_ahead: Any
    _removals: list[threading.Thread]
    # and its methods the phases call
    _ensure_harness: Any
    _ensure_instance_image: Any
    _take_ahead: Any
    _new_workspace: Any
    _start_ahead: Any
    _agent_phase: Any
    provider_outcome: Any

    def phases(self) -> list[Phase]:
        return [*staged(SETUP, Phase("load", self._load_row, NEVER), Phase("prepare_image", self._prepare_image),
                        Phase("harness", lambda s: self._ensure_harness(), NEVER),
                        Phase("container_start", self._container_start), Phase("purge_check", self._purge_check),
                        Phase("register", self._register, NEVER)),
                *staged(AGENT, Phase("agent", self._agent, ALWAYS, after=self._agent_usage),
                        Phase("agent_end", self._agent_end, NEVER), Phase("patch", self._patch),
                        Phase("container_remove", lambda s: s.stack.close()),
                        Phase("patch_files", self._patch_files, NEVER)),
                *staged(VERIFY, Phase("score", self._score), Phase("verdict", self._verdict, NEVER))]

    def _load_row(self, s: InstanceRun) -> None:
        s.row = load_row(s.instance, self.swe.dataset_revision)
        s.result.base_commit = s.row["base_commit"]
        s.result.image = s.row["image"]
        s.prompt = instance_prompt(self.harness, s.row)
        (s.work / "prompt.txt").write_text(s.prompt)

    def _prepare_image(self, s: InstanceRun) -> None:
        row, images = s.row, s.result.images
        self._lease.acquire(row["image"])  # before the image is made ready: no other item removes it meanwhile
        images["instance"] = "failed"  # until it is ready: a miss that could not be made
        images["instance"] = self._ensure_instance_image(s.instance, row)
        labels = {**self.labels, LABEL_INSTANCE: s.instance.instance_id}  # the setup stage's stop finds its container
        s.image, prep_s = prepared_image(self.client, row["image"], row["base_commit"], s.instance.setup_gitignore,
                                         labels, progress=self.progress, purge=self.swe.purge)
        images["prepared"] = "made" if prep_s else "hit"

    def _container_start(self, s: InstanceRun) -> None:
        made_ahead = self._take_ahead(s.instance, s.image, s.result.timings)
        s.made_ahead = made_ahead is not None
        ws = made_ahead if made_ahead is not None else self._new_workspace(s.instance, s.image)
        s.ws = s.stack.enter_context(_RemovedBeside(ws, self._removals, started=s.made_ahead))
        s.result.node = getattr(s.ws, "node", "")  # a cluster's: the node the scheduler chose

    def _purge_check(self, s: InstanceRun) -> None:
        if self.swe.purge and not s.made_ahead:  # (made ahead: proven there, in this container)
            check_purged(s.ws, s.row["base_commit"])  # proven again on every item, cached image or not

    def _register(self, s: InstanceRun) -> None:
        # the evaluation's container is made and started while the agent works: off the item's critical path
        from pytest_clawswe.swe.grading.scoring import EvalContainer

        cfg, instance_id = self.config, s.instance.instance_id
        self._eval_ahead = EvalContainer(self.eval_client, s.row, cfg.run_id,
                                         {**self.labels, LABEL_INSTANCE: instance_id}, cfg.mem_limit)
        s.ctx = ctx = AgentContext(instance_id, s.row, s.ws, s.work, cfg.model.spec, s.deadline)
        if self.gateway is not None:
            address = s.ws.address(cfg.network)  # the token works from this sandbox only
            ctx.gateway_url, ctx.gateway_token = self.gateway.register(instance_id, s.row, ctx.workdir,
                                                                       address=address)
        self._start_ahead()  # the next item's container, while this agent works

    def _agent(self, s: InstanceRun) -> None:
        s.run = self._agent_phase(s.ctx, s.prompt, s.result)

    def _agent_usage(self, s: InstanceRun) -> None:
        if self.gateway is not None:  # counted even when the agent phase blew up
            s.result.usage = self.gateway.usage(s.instance.instance_id)
        s.result.cost_usd = self.prices.cost_usd(s.result.usage, self.config.model.spec)

    def _agent_end(self, s: InstanceRun) -> None:
        run, result = s.run, s.result
        (s.work / "agent.log").write_text(run.output)
        if self.ahead is not None:  # the agent ended sooner than after_s: now, while the patch is read and graded
            self.ahead.hurry()
        result.finish_reason = run.finish_reason
        if self.gateway is not None:  # raised below, once the patch is saved: a provider failure is no verdict
            try:
                s.provider_end = self.provider_outcome(self.gateway.records.pop(s.instance.instance_id, []), result)
            except InfraError as exc:
                s.provider_end = exc
            if isinstance(s.provider_end, str):
                result.finish_reason = s.provider_end
        result.harness_usage = run.harness_usage
        # e.g. bare: "the diff did not apply"; the disk watch: how much the agent wrote
        if run.message and run.finish_reason in ("error", "stop", "disk_limit"):
            result.error = run.message
        if result.finish_reason == "cost_limit":
            result.error = f"stopped: the instance reached --max-instance-cost ${self.config.max_instance_cost:g}"

    def _patch(self, s: InstanceRun) -> None:
        ws, workdir, base = s.ws, s.ctx.workdir, s.row["base_commit"]
        ws.kill_all()  # again: backup_session and delete_agent ran the adapter's own commands
        for path in self.harness.workspace_artifacts:
            ws.copy_out(f"{workdir}/{path}", s.work / "workspace_artifacts")
        scrub_artifacts(ws, self.harness.workspace_artifacts, workdir, base)
        s.patch = collect_patch(ws, base, workdir, gitignore=s.instance.setup_gitignore)

    def _patch_files(self, s: InstanceRun) -> None:
        patch, result, work = s.patch, s.result, s.work
        (work / "patch.raw.diff").write_text(patch.raw)
        (work / "patch.diff").write_text(patch.clean)
        if patch.dropped:
            (work / "patch.dropped.txt").write_text("\n".join(patch.dropped) + "\n")
        result.patch_lines = patch.changed_lines
        if patch.timed_out and not result.error:
            result.error = patch.dropped[0]
        if patch.is_empty and result.finish_reason == "stop":
            result.finish_reason = "empty"
        if isinstance(s.provider_end, InfraError):
            result.finish_reason = "provider_error"
            raise s.provider_end

    def _score(self, s: InstanceRun) -> None:
        from pytest_clawswe.swe.grading.scoring import score  # swebench takes a second to import: only items that run pay it

        cfg = self.config
        s.graded = score(self.eval_client, s.row, s.patch.clean, run_id=cfg.run_id, model_label=cfg.model_label,
                         eval_dir=s.work / "eval", labels={**self.labels, LABEL_INSTANCE: s.instance.instance_id},
                         timeout=self.swe.eval_timeout_s, mem_limit=cfg.mem_limit, ahead=self._eval_ahead)

    def _verdict(self, s: InstanceRun) -> None:
        result, graded = s.result, s.graded
        result.outcome, result.resolved, result.patch_applied = graded.outcome, graded.resolved, graded.patch_applied
        if self.health is not None:  # the tests-flip check: the failing PASS_TO_PASS tests against the base commit
            from pytest_clawswe.swe.health.marks import check_tests

            check_tests(result, s.row, graded.report, self.health)
        if graded.message and not result.error:
            result.error = graded.message if graded.outcome != "resolved" else ""


class _RemovedBeside:
    """The agent's workspace, started on entry and removed on exit in a thread (joined when the item ends): the
    removal runs beside the evaluation, off the item's critical path."""

    def __init__(self, ws: BaseWorkspace, pending: list[threading.Thread], started: bool = False):
        self.ws, self.pending, self.started = ws, pending, started

    def __enter__(self) -> BaseWorkspace:
        return self.ws if self.started else self.ws.start()

    def __exit__(self, *exc) -> None:
        removal = threading.Thread(target=self.ws.remove, name="clawswe-workspace-remove", daemon=True)
        removal.start()
        self.pending.append(removal)
