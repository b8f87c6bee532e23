"""One Claw-SWE-Bench item from start to finish: workspace, agent, patch, score, artifacts.

What every benchmark's runner shares (the atomic instance folder, resume, labels, the infrastructure retry)
is item_runner.ItemRunner's.
"""
from __future__ import annotations

import functools
import threading
import time
from contextlib import ExitStack
from collections.abc import Callable
from dataclasses import asdict, fields
from pathlib import Path
from typing import TYPE_CHECKING

from pytest_clawswe.engine.images.cache_level import ImageLease, release_images
from pytest_clawswe.engine.sandbox.docker_workspace import Workspace
from pytest_clawswe.engine.images.cache import enforce
from pytest_clawswe.engine.workspace import BaseWorkspace
from pytest_clawswe.errors import InfraError
from pytest_clawswe.harness.adapter import AgentContext, AgentRun, Harness
from pytest_clawswe.labels import LABEL_INSTANCE, LABEL_ROLE
from pytest_clawswe.run.item.agent import run_attempt
from pytest_clawswe.run.config import RunConfig
from pytest_clawswe.run.item.runner import ItemRunner
from pytest_clawswe.run.item.phases import run_phases, stage_limits
from pytest_clawswe.swe.dataset import Instance, load_row
from pytest_clawswe.swe.instance.phases import InstancePhases, InstanceRun
from pytest_clawswe.swe.items import new_deadline
from pytest_clawswe.swe.options import SweOptions
from pytest_clawswe.swe.instance.patch import reset_tree
from pytest_clawswe.swe.instance.prepare import cached_prepared_image, check_purged
from pytest_clawswe.swe.results.run_dir import METADATA, InstanceResult, instance_dir
from pytest_clawswe.usage import Usage

if TYPE_CHECKING:
    from pytest_clawswe.swe.grading.scoring import EvalContainer

# The retry policy, all of it (here and in item_runner.py, nowhere else):
# - a harness error (finish reason "error") is re-run only with --retries N (RunConfig.retries; default 0, as
#   the released code: its DEFAULT_MAX_RETRIES is never read), in the same container from the prepared tree,
#   within the same agent budget: a retry gets what the earlier attempts left, never a fresh budget;
# - whatever the attempts, the last one's patch is collected and graded, an error's too;
# - an infrastructure error (InfraError, retryable) re-runs the whole item once from scratch
#   (item_runner.INFRA_RETRIES, the same for every benchmark).
# Every attempt's tokens and cost are counted in metadata.json. The budget, its retry minimum and every other
# time limit of an instance are its Deadline's (items.new_deadline, made once per item).


class InstanceRunner(InstancePhases, ItemRunner):
    """Claw-SWE-Bench's runner: an instance's folder is instances/<id>/, its result metadata.json."""

    RESULT_FILE = METADATA
    result_type = InstanceResult

    def __init__(self, config: RunConfig, harness: Harness, client, progress=print):
        super().__init__(config, harness, client, progress)
        # how an item's sandbox is made: another engine puts its own BaseWorkspace here (docs/scale-out.md)
        self.workspace_factory: Callable[..., BaseWorkspace] = functools.partial(Workspace, client)
        self.host_name = ""  # the Docker engine the items run on (engine/hosts.py), recorded in each result
        self.image_source = None  # another engine to load images from (engines.copy_image); None: this one
        self.health = None  # the run's --health file (report/health.Health): its verdicts mark the results
        self.eval_client = client  # where the evaluation's container is made (a cluster's pods: engine/kube/)
        self.cache_level = config.cache_level  # the run's, auto resolved by the session (ClawSweBench.runner)
        self.swe = SweOptions()  # Claw-SWE-Bench's settings: ClawSweBench.runner gives the run's

    def item_dir(self, instance_id: str) -> Path:
        return instance_dir(self.config.run_dir, instance_id)

    def item_id(self, instance: Instance) -> str:
        return instance.instance_id

    def new_result(self, instance: Instance) -> InstanceResult:
        cfg = self.config
        self._lease = ImageLease()
        self._eval_ahead: EvalContainer | None = None
        self._removals: list[threading.Thread] = []
        result = InstanceResult(instance.instance_id, run_id=cfg.run_id, harness=cfg.harness_name,
                                model=cfg.model.spec, language=instance.language, repo=instance.repo,
                                image=instance.image, docker_host=self.host_name)
        if self.health is not None:  # from the start: an item that ends in an error is marked too
            from pytest_clawswe.swe.health.marks import mark

            mark(result, self.health)
        return result

    def before_commit(self, instance: Instance, result: InstanceResult, carried: InstanceResult | None) -> None:
        if carried is not None:
            _add_carried(result, carried)
        for removal in self._removals:  # the agent's container, removed beside the evaluation
            removal.join()
        if self._eval_ahead is not None:  # the item ended before its evaluation: its container goes
            self._eval_ahead.discard()
        budget = self.config.image_cache
        if budget or self.cache_level in ("base", "none"):  # an image a container still runs from is never removed:
            _join_eval_removals()
            self.stop_containers(instance.instance_id)  # what is left of the item's own (a removal lost under load)
        if budget:  # before the commit: metadata.json records what the budget removed
            result.images.update(enforce(self.client, self._lease, budget, self.progress))

    def after_item(self, instance: Instance) -> None:
        # the item is over, whatever its end: its images go if the cache level says so
        if not self.config.image_cache:
            release_images(self.client, self._lease, self.cache_level, self.progress)
        self._lease.release()

    def run_phases(self, instance: Instance, work: Path, result: InstanceResult) -> None:
        deadline = new_deadline(self.config, self.swe.eval_timeout_s)
        # past a stage's limit the item's containers go (the agent's, the preparation's, the evaluation's): what the
        # stage waits on returns. An image pull or build holds none: the hard stop is its backstop (run/item/phases.py)
        limits = stage_limits(deadline, lambda: self.stop_containers(instance.instance_id),
                              grace_s=self.harness.grace_s, count=lambda: self.count_containers(instance.instance_id),
                              verify_hint=f"the tests' own limit is --eval-timeout {self.swe.eval_timeout_s:g} (a test "
                                          "run past it is unresolved, as SWE-bench grades it): the evaluation's "
                                          "machinery hung; check the Docker engine, then --resume")
        with ExitStack() as stack:  # the agent's sandbox goes on every path out (instance_phases.py)
            run_phases(self.phases(), InstanceRun(instance, work, result, stack, deadline), result.timings, limits)

    def _sandbox(self, instance: Instance, image: str) -> dict:
        """Everything the agent's sandbox for `instance` is made of (the workspace factory's arguments)."""
        cfg = self.config
        return {"image": image, "labels": {**self.labels, LABEL_INSTANCE: instance.instance_id, LABEL_ROLE: "agent"},
                "mem_limit": cfg.mem_limit, "pids_limit": cfg.pids_limit, "network": cfg.network,
                **self.harness.get_docker_args(instance.instance_id)}

    def _new_workspace(self, instance: Instance, image: str) -> BaseWorkspace:
        """The agent's sandbox for `instance` from its prepared `image` (not started)."""
        spec = self._sandbox(instance, image)
        return self.workspace_factory(spec.pop("image"), **spec)

    def _ahead_key(self, instance: Instance, image: str) -> str:
        """What the sandbox is made of and how it was checked: one made ahead is taken only when this is the same
        at the item's start."""
        return repr((sorted(self._sandbox(instance, image).items()), self.swe.purge))

    def _start_ahead(self) -> None:
        """Make the next item's sandbox (started, its tree proven purged) in a thread once this agent has worked as
        long as the evaluation container waits (or when it ends), when that item's prepared image is there
        already: the container start and the purge check leave that item's critical path (run/item/made_ahead.py)."""
        from pytest_clawswe.run.item import made_ahead

        nxt = self.upcoming
        if not isinstance(nxt, Instance) or self.ahead is not None or not self._harness_ready or not made_ahead.enabled():
            return

        def make():
            if self.finished(nxt.instance_id) is not None:  # --resume keeps it: it never starts
                return None
            row = load_row(nxt, self.swe.dataset_revision)
            image = cached_prepared_image(self.client, row["image"], row["base_commit"], nxt.setup_gitignore,
                                          self.swe.purge)
            if image is None:  # it is prepared when its turn comes
                return None
            ws = self._new_workspace(nxt, image).start()
            try:
                if self.swe.purge:
                    check_purged(ws, row["base_commit"])
            except BaseException:
                ws.remove()
                raise
            return self._ahead_key(nxt, image), ws

        from pytest_clawswe.swe.grading.scoring import EvalContainer

        self.ahead = made_ahead.Ahead(nxt.instance_id, make, lambda ws: ws.remove(), after_s=EvalContainer.AFTER_S)

    def _take_ahead(self, instance: Instance, image: str, timings: dict) -> BaseWorkspace | None:
        """The sandbox made ahead for this item when it is what the item would make now; None otherwise."""
        made = self.ahead
        if made is None or made.item_id != instance.instance_id:  # (a retry of this item: it stays for the next)
            return None
        self.ahead = None
        ws = made.take(instance.instance_id, self._ahead_key(instance, image))
        if ws is not None:
            timings["made_ahead"] = made.seconds
        return ws

    def _ensure_harness(self) -> None:
        if not self._harness_ready and self.image_source is not None:
            from pytest_clawswe.engine.hosts import transfer

            for tag in self.harness.images():  # the harness's bundle, built on the first engine only
                transfer(self.image_source, self.client, tag, self._registry(), self.progress)
        super()._ensure_harness()

    def _registry(self):
        if self.config.registry is None:
            return None
        from pytest_clawswe.engine.images.registry import ImageRegistry

        return ImageRegistry(self.config.registry, self.progress)

    def _ensure_instance_image(self, instance: Instance, row: dict) -> str:
        """The instance image ready on this engine; returns how: hit (it was there), made (built or pulled
        here), or from the first engine: loaded (save | load), registry (pulled), pushed (pushed, pulled)."""
        from pytest_clawswe.swe.instance.images import TASK_DIR, ImageError, ensure_instance_image, is_ready

        spec = {**row, TASK_DIR: instance.task_dir}
        try:
            if is_ready(spec, self.client):
                return "hit"
            if self.image_source is not None:
                from pytest_clawswe.engine.hosts import transfer

                ensure_instance_image(spec, self.image_source, progress=self.progress)
                how = transfer(self.image_source, self.client, row["image"], self._registry(), self.progress)
                ensure_instance_image(spec, self.client, progress=self.progress)
                return how
            ensure_instance_image(spec, self.client, progress=self.progress)
            return "made"
        except ImageError as exc:
            raise InfraError(str(exc), retryable=False) from None

    def _agent_phase(self, ctx: AgentContext, prompt: str, result: InstanceResult) -> AgentRun:
        """Attempts until one does not end in a harness error, --retries allows no more, or the budget is
        spent. Each attempt gets what is left of the agent budget (its harness's wrapper adds grace_s)."""
        deadline, started = ctx.deadline, time.monotonic()
        attempts: list[dict] = []
        run = AgentRun("error")  # replaced by the first attempt
        for attempt in range(1 + max(0, self.config.retries)):
            if attempt and not deadline.retry_allowed(started):
                break
            result.attempts = attempt + 1
            if attempt:  # a retry starts from the prepared tree, not from the failed attempt's edits
                reset_tree(ctx.workspace, ctx.row["base_commit"], ctx.workdir)
            before, t = self._usage_now(ctx), time.monotonic()
            # a retry's harness gets what is left when it starts (its reset and set-up count against it)
            run, ran = self._attempt(ctx, prompt, started if attempt else None)
            attempts.append(self._attempt_record(ctx, attempt + 1, run, ran.budget_s, time.monotonic() - t, before))
            if run.finish_reason != "error":
                break
        if len(attempts) > 1:  # the harness's own counts summed over the attempts, and each attempt's figures
            run.harness_usage = _sum_numbers([a["harness_usage"] for a in attempts])
            run.harness_usage["attempts"] = attempts
        return run

    def _attempt(self, ctx: AgentContext, prompt: str, since: float | None = None) -> tuple[AgentRun, AgentContext]:
        return run_attempt(self.harness, ctx, prompt, self.config.disk_limit, since=since)

    def _usage_now(self, ctx: AgentContext):
        """The gateway's count for the instance so far (a peek; None without a gateway)."""
        if self.gateway is None or not ctx.gateway_token:
            return None
        return self.gateway.client.usage(ctx.gateway_token)

    def _attempt_record(self, ctx: AgentContext, number: int, run: AgentRun, budget_s: float, seconds: float,
                        before) -> dict:
        record = {"attempt": number, "finish_reason": run.finish_reason, "message": run.message,
                  "budget_s": round(budget_s, 3), "seconds": round(seconds, 3),
                  "harness_usage": dict(run.harness_usage)}
        after = self._usage_now(ctx)
        if after is not None:
            spent = Usage(*(getattr(after, f.name) - getattr(before, f.name) for f in fields(Usage)))
            record["usage"] = asdict(spent)
            record["cost_usd"] = self.prices.cost_usd(spent, self.config.model.spec)
        return record


def _join_eval_removals() -> None:
    import sys

    # not imported: no evaluation ran in this process (its name is spelled whole: a test holds it to the module's place)
    scoring = sys.modules.get("pytest_clawswe.swe.grading.scoring")
    if scoring is not None:
        scoring.join_removals()


def _sum_numbers(dicts: list[dict]) -> dict:
    total: dict = {}
    for d in dicts:
        for key, value in d.items():
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                total[key] = total.get(key, 0) + value
    return total


def _add_carried(result: InstanceResult, carried: InstanceResult) -> None:
    """Count the usage and cost of an item attempt that an infrastructure error ended."""
    result.usage = result.usage + carried.usage
    if carried.cost_usd is not None and result.cost_usd is not None:
        result.cost_usd += carried.cost_usd
    result.attempts += carried.attempts
