"""One benchmark item from start to finish: workspace, agent, patch, score, artifacts.

An instance's folder is written in a temporary folder and renamed into place when the item ends, so a
crash at any moment leaves each instance either complete or absent, never half-written.
"""
from __future__ import annotations

import errno
import json
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path

import docker.errors

from .errors import InfraError
from .harness import AgentRun, Harness, TaskContext
from .instances import Instance, load_row
from .labels import LABEL_INSTANCE, LABEL_ROLE, LABEL_RUN, owner_label
from .patch import collect_patch, scrub_artifacts
from .prepare import check_purged, prepared_image
from .results import ERROR, METADATA, InstanceResult, instance_dir, write_atomic
from .workspace import DiskWatch, Workspace

RETRIES_ON_HARNESS_ERROR = 1  # the paper's setting
DISK_ERRNOS = {errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EACCES}


def _infra_error_of(exc: OSError, where: Path) -> InfraError:
    if exc.errno in DISK_ERRNOS:  # the run dir is full or unwritable: retrying cannot help
        return InfraError(f"cannot write artifacts to {where} ({exc.strerror}); free space or fix "
                          "permissions, then resume the run", retryable=False)
    # what docker-py raises when the engine goes away mid-call (requests' ConnectionError is an OSError)
    return InfraError(f"the Docker engine stopped answering ({type(exc).__name__}: {exc})")


@dataclass
class RunConfig:
    """Everything a worker needs to run items; identical in the controller and every xdist worker."""

    run_id: str
    run_dir: Path
    harness_name: str
    model: str
    budget_s: float = 3600.0
    eval_timeout_s: float = 1800.0
    mem_limit: str | None = "8g"
    pids_limit: int | None = 300
    disk_limit: int | None = 20 * 2**30  # bytes an agent's container may write; None: no limit
    dataset_revision: str | None = None
    harness_options: dict = field(default_factory=dict)
    harness_spec: str = ""  # what to load: an installed name, module:Class or file.py:Class
    prices_file: str | None = None  # extra or overriding model prices (see prices.py)
    prices_sha256: str | None = None  # the prices file's digest: a resume must price alike
    network: str | None = None  # agent containers' Docker network; None = the default bridge (open)

    @property
    def model_label(self) -> str:
        return f"{self.harness_name}/{self.model}" if self.model else self.harness_name


class Runner:
    def __init__(self, config: RunConfig, harness: Harness, client, progress=print):
        self.config = config
        self.harness = harness
        self.client = client
        self.progress = progress
        self.gateway = None  # a gateway.run.RunGateway when the harness calls a model
        from .prices import PriceBook

        self.prices = PriceBook.from_file(config.prices_file)
        self._harness_ready = False
        self.host_name = ""  # the Docker engine the items run on (engines.py), recorded in each result
        self.image_source = None  # another engine to load images from (engines.copy_image); None: this one

    def close(self) -> None:
        if self._harness_ready:
            self._harness_ready = False
            self.harness.teardown()

    @property
    def labels(self) -> dict[str, str]:
        return {LABEL_RUN: self.config.run_id, **owner_label()}

    def finished(self, instance_id: str) -> InstanceResult | None:
        """The final result of an earlier attempt in this run dir, if there is one (errors are not final)."""
        meta = instance_dir(self.config.run_dir, instance_id) / METADATA
        if not meta.is_file():
            return None
        result = InstanceResult.from_json(json.loads(meta.read_text()))
        return None if result.outcome == ERROR else result

    def run(self, instance: Instance) -> InstanceResult:
        cfg = self.config
        final_dir = instance_dir(cfg.run_dir, instance.instance_id)
        work = final_dir.with_name(f".{instance.instance_id}.partial")
        shutil.rmtree(work, ignore_errors=True)
        try:
            work.mkdir(parents=True)
        except OSError as exc:
            raise InfraError(f"cannot create {work} ({exc.strerror or exc}); free space or fix permissions",
                             retryable=False) from exc
        result = InstanceResult(instance.instance_id, run_id=cfg.run_id, harness=cfg.harness_name,
                                model=cfg.model, language=instance.language, repo=instance.repo,
                                image=instance.image, docker_host=self.host_name)
        timings = result.timings
        started = time.monotonic()
        try:
            try:
                self._run_phases(instance, work, result)
            except OSError as exc:
                raise _infra_error_of(exc, work.parent) from exc
            except docker.errors.DockerException as exc:
                raise InfraError(f"Docker failed: {exc}") from exc
        except InfraError as exc:
            result.outcome, result.resolved, result.error = ERROR, None, str(exc)
            raise
        except Exception as exc:  # bad data, an adapter bug: recorded as an error, then re-raised
            result.outcome, result.resolved = ERROR, None
            result.error = f"{type(exc).__name__}: {exc}"[:500]
            raise
        except BaseException as exc:  # Ctrl-C, the hard timeout: recorded as an error, then re-raised
            result.outcome, result.resolved = ERROR, None
            result.error = f"interrupted: {type(exc).__name__}: {exc}"[:500]
            raise
        finally:
            timings["total"] = round(time.monotonic() - started, 3)
            self._commit(work, final_dir, result)
        return result

    def _run_phases(self, instance: Instance, work: Path, result: InstanceResult) -> None:
        cfg, timings = self.config, result.timings
        row = load_row(instance, cfg.dataset_revision)
        result.base_commit = row["base_commit"]
        result.image = row["image"]
        prompt = self.harness.prompt(row)
        (work / "prompt.txt").write_text(prompt)

        t = time.monotonic()
        self._ensure_image(instance, row)
        image, prep_s = prepared_image(self.client, row["image"], row["base_commit"], instance.setup_gitignore,
                                       self.labels, progress=self.progress)
        timings["prepare_image"] = round(time.monotonic() - t, 3)

        if not self._harness_ready:
            self.harness.setup(self.client, cfg.run_id)
            self._harness_ready = True
        labels = {**self.labels, LABEL_INSTANCE: instance.instance_id, LABEL_ROLE: "agent"}
        docker_args = {"network": cfg.network, **self.harness.get_docker_args(instance.instance_id)}
        t = time.monotonic()
        ws = Workspace(self.client, image, labels=labels, mem_limit=cfg.mem_limit, pids_limit=cfg.pids_limit,
                       **docker_args)
        with ws:
            timings["container_start"] = round(time.monotonic() - t, 3)
            t = time.monotonic()
            check_purged(ws, row["base_commit"])  # proven again on every item, cached image or not
            timings["purge_check"] = round(time.monotonic() - t, 3)

            ctx = TaskContext(instance.instance_id, row, ws, work, cfg.model, cfg.budget_s)
            if self.gateway is not None:
                ctx.gateway_url, ctx.gateway_token = self.gateway.register(instance.instance_id, row, ctx.workdir)
            t = time.monotonic()
            try:
                run = self._agent_phase(ctx, prompt, result)
            finally:
                timings["agent"] = round(time.monotonic() - t, 3)
                if self.gateway is not None:  # counted even when the agent phase blew up
                    result.usage = self.gateway.usage(instance.instance_id)
                result.cost_usd = self.prices.cost_usd(result.usage, cfg.model)
            (work / "agent.log").write_text(run.output)
            result.finish_reason = run.finish_reason
            result.harness_usage = run.harness_usage
            # e.g. bare: "the diff did not apply"; the disk watch: how much the agent wrote
            if run.message and run.finish_reason in ("error", "stop", "disk_limit"):
                result.error = run.message

            t = time.monotonic()
            for path in self.harness.workspace_artifacts:
                ws.copy_out(f"{ctx.workdir}/{path}", work / "workspace_artifacts")
            scrub_artifacts(ws, self.harness.workspace_artifacts, ctx.workdir)
            patch = collect_patch(ws, row["base_commit"], ctx.workdir)
            timings["patch"] = round(time.monotonic() - t, 3)
            t = time.monotonic()
        timings["container_remove"] = round(time.monotonic() - t, 3)
        (work / "patch.raw.diff").write_text(patch.raw)
        (work / "patch.diff").write_text(patch.clean)
        if patch.dropped:
            (work / "patch.dropped.txt").write_text("\n".join(patch.dropped) + "\n")
        result.patch_lines = patch.changed_lines
        if patch.is_empty and result.finish_reason == "stop":
            result.finish_reason = "empty"

        from .scoring import score  # swebench takes a second to import: only items that run pay it

        t = time.monotonic()
        graded = score(self.client, row, patch.clean, run_id=cfg.run_id, model_label=cfg.model_label,
                       eval_dir=work / "eval", labels={**self.labels, LABEL_INSTANCE: instance.instance_id},
                       timeout=cfg.eval_timeout_s, mem_limit=cfg.mem_limit)
        timings["score"] = round(time.monotonic() - t, 3)
        result.outcome, result.resolved, result.patch_applied = graded.outcome, graded.resolved, graded.patch_applied
        if graded.message and not result.error:
            result.error = graded.message if graded.outcome != "resolved" else ""

    def _ensure_image(self, instance: Instance, row: dict) -> None:
        from .images import TASK_DIR, ImageError, ensure_image

        try:
            if self.image_source is not None:
                from .engines import copy_image, same_image

                ensure_image({**row, TASK_DIR: instance.task_dir}, self.image_source, progress=self.progress)
                if not same_image(self.image_source, self.client, row["image"]):
                    copy_image(self.image_source, self.client, row["image"], progress=self.progress)
            ensure_image({**row, TASK_DIR: instance.task_dir}, self.client, progress=self.progress)
        except ImageError as exc:
            raise InfraError(str(exc), retryable=False) from None

    def _agent_phase(self, ctx: TaskContext, prompt: str, result: InstanceResult) -> AgentRun:
        run = AgentRun("error")  # replaced by the first attempt
        for attempt in range(1 + RETRIES_ON_HARNESS_ERROR):
            result.attempts = attempt + 1
            if attempt:  # a retry starts from the prepared tree, not from the failed attempt's edits
                ctx.workspace.exec(f"git reset -q --hard {ctx.row['base_commit']} && git clean -fdq",
                                   workdir=ctx.workdir, check=True)
            self.harness.create_agent(ctx)
            run = None
            try:
                with DiskWatch(ctx.workspace, self.config.disk_limit) as disk:
                    run = self.harness.send_task(ctx, prompt)
                if disk.tripped_at:  # the agent's doing, like a timeout: graded as it stands, not retried
                    run = AgentRun("disk_limit", run.output, run.exit_code, run.harness_usage,
                                   message=f"stopped: the agent's container wrote {disk.tripped_at / 2**30:.1f} GiB, "
                                           f"over the disk limit of {self.config.disk_limit / 2**30:.1f} GiB")
            finally:
                if run is None or run.finish_reason in ("timeout", "disk_limit"):
                    ctx.workspace.kill_all()  # nothing of the agent may outlive its budget
                try:
                    self.harness.backup_session(ctx, ctx.artifacts_dir / "session")
                finally:
                    self.harness.delete_agent(ctx)
            if run.finish_reason != "error":
                break
        return run

    def _commit(self, work: Path, final_dir: Path, result: InstanceResult) -> None:
        try:
            self._write_final(work, final_dir, result)
        except OSError as exc:
            # the instance stays absent (its partial folder is hidden): a resume runs it again
            raise InfraError(f"cannot write the results of {result.instance_id} to {final_dir.parent} "
                             f"({exc.strerror or exc}); free space or fix permissions, then resume the run",
                             retryable=False) from exc

    def _write_final(self, work: Path, final_dir: Path, result: InstanceResult) -> None:
        write_atomic(work / METADATA, json.dumps(result.to_json(), indent=2) + "\n")
        old = final_dir.with_name(f".{final_dir.name}.old")
        shutil.rmtree(old, ignore_errors=True)
        if final_dir.exists():
            final_dir.rename(old)
        work.rename(final_dir)
        shutil.rmtree(old, ignore_errors=True)
