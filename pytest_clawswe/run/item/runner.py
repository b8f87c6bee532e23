"""What every benchmark's runner shares: an item's result file and whether a resume keeps it, the run's
Docker labels, the harness's lifetime, the atomic commit of an item's folder, and the infrastructure retry.

An item's folder is written as a hidden partial folder and renamed into place when the item ends, so a crash
at any moment leaves each item either complete or absent, never half-written. A benchmark's runner
(swe/instance/runner.py for Claw-SWE-Bench, wildclaw/task_runner.py) subclasses ItemRunner: it says where its results live
(`item_dir`, `RESULT_FILE`, `result_type`, `_write_result`) and how one item runs (`new_result`, `run_phases`,
and where it holds something, `before_commit` and `after_item`); `_run_once` is the one template around them.
"""
from __future__ import annotations

import errno
import json
import re
import shutil
import sys
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

import docker.errors
import pytest

from pytest_clawswe.errors import HardStop, InfraError, ItemError, StageTimeout
from pytest_clawswe.labels import LABEL_INSTANCE, LABEL_RUN, owner_label
from pytest_clawswe.run.item.phases import causes, phase_of
from pytest_clawswe.run.item.result import ERROR

if TYPE_CHECKING:
    from pytest_clawswe.gateway.control.run_gateway import RunGateway
    from pytest_clawswe.run.item.made_ahead import Ahead

DISK_ERRNOS = {errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EACCES}


def disk_or_engine_error(exc: OSError, where: Path) -> InfraError:
    """An OSError while an item ran: the run folder's disk (retrying cannot help), or the engine going away."""
    if exc.errno in DISK_ERRNOS:  # the run dir is full or unwritable: retrying cannot help
        return InfraError(f"cannot write artifacts to {where} ({exc.strerror}); free space or fix "
                          "permissions, then resume the run", retryable=False)
    # what docker-py raises when the engine goes away mid-call (requests' ConnectionError is an OSError)
    return InfraError(f"the Docker engine stopped answering ({type(exc).__name__}: {exc})")


# The infrastructure retry, for every benchmark: an InfraError that is retryable (a daemon hiccup, an
# evaluator crash; not a missing image or a full disk) re-runs the whole item once from scratch.
INFRA_RETRIES = 1


def progress(message: str) -> None:
    """A line for the terminal from any process of the run (xdist captures workers' stdout, not stderr)."""
    print(f"[clawswe] {message}", file=sys.__stderr__, flush=True)


def _stage_error_first(exc: BaseException) -> None:
    """A stage that ran over its limit had the item's containers removed: a cleanup that then failed on them (and
    replaced the stage's error on the way out) is a consequence. Raise the stage's error, the cleanup's as a note."""
    behind = next((e for e in causes(exc.__context__) if isinstance(e, StageTimeout)), None)
    if behind is not None:
        behind.add_note(f"then, cleaning up: {type(exc).__name__}: {exc}")
        raise behind from None


# pytest-timeout's own sentence when it stops a test (its signal method raises pytest's Failed with it)
_HARD_STOP = re.compile(r"^Timeout \(>([0-9.]+)s\) from pytest-timeout")


def hard_stop(exc: BaseException) -> HardStop | None:
    """The item's error when `exc` is pytest-timeout's stop of it (the hard stop: every stage's own limit was
    passed and what the step waited on was not ended), as one sentence that says what to do; None otherwise."""
    found = _HARD_STOP.match(str(exc))
    if found is None or not isinstance(exc, pytest.fail.Exception):
        return None
    phase = phase_of(exc)
    stopped = HardStop(f"the item ran past its hard stop of {float(found[1]):g} s (every stage's own limit and a "
                       f"margin){f' in phase {phase}' if phase else ''}: a step waited on what its stage's stop "
                       "could not end (a machine-wide image build or pull, a Docker engine that stopped "
                       "answering); check that the engine answers (docker info), then --resume")
    stopped.__cause__ = exc  # (its phase is exc's: phase_of follows the cause)
    return stopped


def _record(result, error: str, exc: BaseException) -> None:
    """An item's end as an error: the sentence, the exception's class and the phase it happened in."""
    result.fail(error)
    result.error_type = type(exc).__name__
    result.error_phase = phase_of(exc)


class ItemRunner:
    """Runs one item of a benchmark at a time; one per pytest process (closed at the end of the run)."""

    RESULT_FILE = "result.json"  # in the item's folder, written last: its presence means the item ended
    # errors that end the item as an error result without raising (a task's setup, its grader): the item is a
    # pytest error all the same (BenchmarkItem), but nothing is retried
    ITEM_ERRORS: tuple[type[BaseException], ...] = (ItemError,)
    result_type: Any = None  # a dataclass with from_json(), to_json() and an `outcome` ("error" is not final)

    def __init__(self, config, harness, client, progress=print) -> None:
        self.config = config  # a runner.RunConfig
        self.harness = harness
        self.client = client
        self.progress = progress
        self.gateway: RunGateway | None = None  # when the harness calls a model (join_run_gateway)
        self.benchmark = None  # the Benchmark class whose items these are (set by Benchmark.runner)
        from pytest_clawswe.prices import PriceBook

        self.prices = PriceBook.from_file(config.prices_file)
        self._harness_ready = False
        # the result of the attempt running now (set by _run_once): an infrastructure retry carries its usage
        self._last_result: Any = None
        # the target of the item this process runs next (the session sets it; None: the last one, or unknown),
        # and what was made ahead for it (run/item/made_ahead.py)
        self.upcoming: Any = None
        self.ahead: Ahead | None = None
        self.pod_site: Any = None  # a cluster's (--kubernetes: engine/kube/site.py): the item's sandboxes are pods

    # -- what a benchmark fills in ------------------------------------------------------------------
    def item_dir(self, item_id: str) -> Path:
        """The final folder of one item in the run folder."""
        raise NotImplementedError

    def item_id(self, item) -> str:
        """The id of what run() takes (an Instance, a Task)."""
        raise NotImplementedError

    def new_result(self, item):
        """The item's result before it runs (an ItemResult of the benchmark's type; outcome ERROR until set)."""
        raise NotImplementedError

    def run_phases(self, item, work: Path, result) -> None:
        """Run the item, writing its files into `work` (its partial folder) and its verdict into `result`."""
        raise NotImplementedError

    def before_commit(self, item, result, carried) -> None:
        """After the item ended (whatever its end), before its folder is committed; `carried` is the result of
        an earlier attempt an infrastructure error ended (None on the first)."""

    def after_item(self, item) -> None:
        """After the commit (or its failure): release what the item held."""

    def _run_once(self, item, carried):
        """One attempt of the item, committed whatever its end: every end is recorded in its result (an
        ITEM_ERRORS exception ends it as an error result; anything else is recorded, then raised on)."""
        item_id = self.item_id(item)
        work, final = self._partial_folder(item_id)
        result = self.new_result(item)
        self._last_result = result
        started = time.monotonic()
        result.started_at = datetime.now(timezone.utc).isoformat(timespec="milliseconds")
        try:
            try:
                try:
                    self.run_phases(item, work, result)
                except Exception as exc:
                    _stage_error_first(exc)
                    raise
            except self.ITEM_ERRORS as exc:
                _record(result, str(exc), exc)
            except OSError as exc:
                raise disk_or_engine_error(exc, work.parent) from exc
            except docker.errors.DockerException as exc:
                raise InfraError(f"Docker failed: {exc}") from exc
        except InfraError as exc:
            _record(result, str(exc), exc)
            raise
        except Exception as exc:  # bad data, an adapter bug: recorded as an error, then raised on
            _record(result, f"{type(exc).__name__}: {exc}"[:500], exc)
            raise
        except BaseException as exc:  # Ctrl-C, the hard timeout: recorded as an error, then raised on
            stopped = hard_stop(exc)
            if stopped is not None:  # one sentence of ours instead of pytest-timeout's
                _record(result, str(stopped), stopped)
                raise stopped from exc
            _record(result, f"interrupted: {type(exc).__name__}: {exc}"[:500], exc)
            raise
        finally:
            result.timings["total"] = round(time.monotonic() - started, 3)
            try:
                self.before_commit(item, result, carried)
                self._commit(work, final, result, item_id)
            finally:
                self.after_item(item)
        return result

    def _write_result(self, work: Path, result) -> None:
        """Write the item's result file(s) into its partial folder (the result file last)."""
        from pytest_clawswe.files import write_atomic

        write_atomic(work / self.RESULT_FILE, json.dumps(result.to_json(), indent=2) + "\n")

    # -- shared ---------------------------------------------------------------------------------------
    def close(self) -> None:
        if self.ahead is not None:  # the item it was made for never ran
            self.ahead.discard()
            self.ahead = None
        if self._harness_ready:
            self._harness_ready = False
            self.harness.teardown()

    def join_run_gateway(self, engine: str = "") -> None:
        """Use the run's model gateway (the controller started it) when the harness calls a model; `engine`
        names another machine's engine whose agents reach it through that engine's relay (gateway/control/relay.py)."""
        if self.harness.needs_model:
            from pytest_clawswe.gateway.control.run_gateway import RunGateway

            cfg = self.config
            self.gateway = RunGateway(cfg.run_dir / "gateway", cfg.model, harness=cfg.harness_name,
                                      shaping=cfg.gateway_shaping, engine=engine)
            if getattr(cfg, "max_instance_cost", None):
                from pytest_clawswe.run.spending import unit_prices

                self.gateway.ceiling = {"usd": cfg.max_instance_cost,
                                        "prices": unit_prices(cfg.model.spec, cfg.prices_file) or [0, 0, 0, 0]}

    def provider_outcome(self, records: list[dict], result) -> str | None:
        """Read an ended agent's ledger lines (provider.py): the failed calls and the provider's own cost go
        into `result`; a provider failure raises provider.ProviderError (unless --grade-provider-failures:
        then "provider_error" is returned as the finish reason); "cost_limit" when the ceiling stopped it."""
        from pytest_clawswe.run.provider import judge

        outcome = judge(records)
        result.failed_requests = outcome.failed_requests
        result.provider_cost_usd = outcome.provider_cost_usd
        if outcome.failure is not None:
            if not getattr(self.config, "grade_provider_failures", False):
                raise outcome.failure
            return "provider_error"
        return "cost_limit" if outcome.cost_limit else None

    def _ensure_harness(self) -> None:
        """The harness's run-wide setup, once per process, before its first agent."""
        if not self._harness_ready:
            self.harness.setup(self.client, self.config.run_id)
            self._harness_ready = True

    def stop_containers(self, item_id: str) -> int | None:
        """Remove every container of the item on this runner's engine (found by the run's and the item's labels):
        what a stage past its limit waits on (an exec, an attach, a start) then returns (run/item/phases.py), and on
        a cluster its pods too. How many were found (0: the item waits on nothing of its own); None when neither the
        engine nor the cluster could say."""
        return self._item_containers(item_id, remove=True)

    def count_containers(self, item_id: str) -> int | None:
        """How many containers (on a cluster, and pods) of the item there are now, none touched; None when unknown."""
        return self._item_containers(item_id, remove=False)

    def _item_containers(self, item_id: str, remove: bool) -> int | None:
        counts = [self._engine_containers(item_id, remove)]
        if self.pod_site is not None:
            counts.append(self.pod_site.item_pods(self.config.run_id, item_id, delete=remove))
        known = [n for n in counts if n is not None]
        return sum(known) if known else None

    def _engine_containers(self, item_id: str, remove: bool) -> int | None:
        filters = {"label": [f"{LABEL_RUN}={self.config.run_id}", f"{LABEL_INSTANCE}={item_id}"]}
        try:
            found = self.client.containers.list(all=True, filters=filters)
        except (docker.errors.DockerException, OSError, AttributeError):
            return None
        for container in found if remove else ():
            try:
                container.remove(force=True)
            except (docker.errors.DockerException, OSError):
                pass  # gone already; the run's sweep finds what is left
        return len(found)

    @property
    def labels(self) -> dict[str, str]:
        """The labels of every Docker object of the run (`clawswe clean --run-id` finds them by these)."""
        return {LABEL_RUN: self.config.run_id, **owner_label()}

    def _load(self, item_id: str):
        path = self.item_dir(item_id) / self.RESULT_FILE
        if not path.is_file():
            return None
        return self.result_type.from_json(json.loads(path.read_text()))

    def finished(self, item_id: str):
        """The final result of an earlier attempt in this run folder, if there is one (errors are not final:
        a resume runs them again)."""
        result = self._load(item_id)
        return None if result is None or result.outcome == ERROR else result

    def error_result(self, item_id: str):
        """The error result an attempt that raised left on disk, or None (none, or unreadable)."""
        try:
            result = self._load(item_id)
        except (OSError, ValueError):
            return None
        return result if result is not None and result.outcome == ERROR else None

    def run(self, item):
        """Run one item; an infrastructure error re-runs it once from scratch (INFRA_RETRIES), the failed
        attempt handed to the next as `carried`."""
        carried = None
        for infra_attempt in range(1 + INFRA_RETRIES):
            self._last_result = None
            try:
                return self._run_once(item, carried)
            except InfraError as exc:
                if not exc.retryable or infra_attempt == INFRA_RETRIES:
                    raise
                self.progress(f"{self.item_id(item)}: {exc}; retrying once from scratch")
                carried = self._last_result
        raise AssertionError("unreachable")

    # True for a regrade's runner: the gateway's record of the agents' calls comes from the run it grades, gateway
    # or not (run/regrade/)
    records_kept = False

    def _write_trajectories(self, work: Path, result, item_id: str) -> None:
        """trajectory: <item>/trajectory/attempt-<n>.atif.json from the gateway's record (trajectory/store.py)."""
        if (self.gateway is not None or self.records_kept) and self.benchmark is not None:
            from pytest_clawswe.trajectory.store import write_quietly
            from pytest_clawswe.trajectory.view import write_viewer

            data = result.to_json()
            for path in write_quietly(self.config.run_dir, self.benchmark.name, item_id, work, data,
                                      self.benchmark.trajectory_outcome(work, data), prices=self.prices):
                try:
                    write_viewer(path)  # its page beside it: the reports link the last attempt's
                except (OSError, ValueError) as exc:
                    progress(f"{item_id}: could not write the trajectory page of {path.name} ({exc})")

    def _partial_folder(self, item_id: str) -> tuple[Path, Path]:
        """A fresh hidden folder to write the item in, and the final folder it becomes."""
        final = self.item_dir(item_id)
        work = final.with_name(f".{item_id}.partial")
        shutil.rmtree(work, ignore_errors=True)
        try:
            work.mkdir(parents=True)
        except OSError as exc:
            raise InfraError(f"cannot create {work} ({exc.strerror or exc}); free space or fix permissions",
                             retryable=False) from exc
        return work, final

    def _commit(self, work: Path, final: Path, result, item_id: str) -> None:
        """Write the result into the partial folder and rename it into place; on a disk error the item stays
        absent (its partial folder is hidden) and a resume runs it again."""
        try:
            self._write_result(work, result)
            self._write_trajectories(work, result, item_id)  # trajectory: every attempt's, from the gateway
            old = final.with_name(f".{final.name}.old")
            shutil.rmtree(old, ignore_errors=True)
            if final.exists():
                final.rename(old)
            work.rename(final)
            shutil.rmtree(old, ignore_errors=True)
        except OSError as exc:
            raise InfraError(f"cannot write the results of {item_id} to {final.parent} "
                             f"({exc.strerror or exc}); free space or fix permissions, then resume the run",
                             retryable=False) from exc
