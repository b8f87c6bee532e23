"""Scoring with the official SWE-bench 5 evaluator, in a fresh container from the instance image.

swebench's `run_instance` does the work (patch application with its fallbacks, eval script, log parser,
`get_eval_report`). Around it we add only what a benchmark run needs: the evaluation container carries the
run's labels and no network, stops at once (its PID 1 ignores SIGTERM, so `docker stop` would wait 15 s),
and its logs land in the instance's folder. An evaluator crash is an infrastructure error, never a fail.
"""
from __future__ import annotations

import atexit
import json
import logging
import shutil
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import docker.errors
import swebench.harness.run_evaluation as swe_run
from swebench.harness.constants import APPLY_PATCH_FAIL, END_TEST_OUTPUT, LOG_INSTANCE, LOG_REPORT, LOG_TEST_OUTPUT
from swebench.harness.utils import make_test_spec

from pytest_clawswe.errors import InfraError
from pytest_clawswe.labels import LABEL_ROLE
from pytest_clawswe.run.item.result import ERROR
from pytest_clawswe.swe.grading.eval_output import FramedEval
from pytest_clawswe.swe.results.run_dir import APPLY_FAILED, RESOLVED, UNRESOLVED


@dataclass
class Score:
    outcome: str  # RESOLVED | UNRESOLVED | APPLY_FAILED | ERROR
    resolved: bool | None
    patch_applied: bool | None
    message: str = ""
    report: dict | None = None


class _Containers:
    """docker's containers collection, with our settings added to every container swebench creates; a container
    made ahead (EvalContainer) is handed out for the create of its name."""

    def __init__(self, containers, extra: dict, ready=None, framed: bool = True):
        self._containers, self._extra, self._ready, self._framed = containers, extra, ready, framed
        self.made: FramedEval | None = None  # the evaluation's container, its test output framed (eval_output.py)

    def get(self, name, *args, **kwargs):
        if self._ready is not None:  # swebench looks for a ghost of its container: the one made ahead is none
            raise docker.errors.NotFound(f"{name}: the evaluation's container was made ahead")
        return self._containers.get(name, *args, **kwargs)

    def create(self, *args, **kwargs):
        if self._ready is not None:  # run_instance creates one container: this one (whatever name it got)
            container, self._ready = self._ready, None
        else:
            kwargs["labels"] = {**(kwargs.get("labels") or {}), **self._extra["labels"]}
            for key, value in self._extra.items():
                if key != "labels":
                    kwargs.setdefault(key, value)
            container = self._containers.create(*args, **kwargs)
        if not self._framed:  # made ahead: framed when the evaluation takes it
            return container
        self.made = FramedEval(container)
        return self.made

    def __getattr__(self, name):
        return getattr(self._containers, name)


class _EvalClient:
    def __init__(self, client, extra: dict, ready=None, framed: bool = True):
        self._client = client
        self.containers = _Containers(client.containers, extra, ready, framed)

    def __getattr__(self, name):
        return getattr(self._client, name)


def _remove_container(client, container, logger) -> None:
    """swebench's cleanup_container, through the client it was given: its own runs `docker stop` and `docker rm`
    as commands, which reach DOCKER_HOST's engine (not another --docker-host) and cost two processes per item.
    The container's stop signal is SIGKILL: a forced removal is what the stop would have done. It runs beside
    the rest of the item (joined before the next evaluation and at exit); the run's sweep finds what a killed
    process left."""
    if container is None:
        return
    _REMOVALS[:] = [t for t in _REMOVALS if t.is_alive()]
    thread = threading.Thread(target=_remove_now, args=(container,), name="clawswe-eval-remove", daemon=True)
    thread.start()
    _REMOVALS.append(thread)


_REMOVALS: list[threading.Thread] = []


def _remove_now(container) -> None:
    try:
        container.remove(force=True)
    except (docker.errors.DockerException, OSError):
        pass


@atexit.register
def join_removals(timeout: float = 30) -> None:
    for thread in list(_REMOVALS):
        thread.join(timeout)


class EvalContainer:
    """The evaluation's container, made and started by swebench's own create_container while the agent works
    (an idle `tail -f /dev/null` from the instance image, no network); score() hands it to run_instance in
    place of a new one, and discard() removes it when the item never gets there. It is made only once the agent
    has worked `after_s`: an agent that ends sooner (an empty patch, a crash) costs no container, and the
    evaluation makes its own as swebench does."""

    AFTER_S = 2.0

    def __init__(self, client, row: dict, run_id: str, labels: dict[str, str], mem_limit: str | None = None,
                 after_s: float = AFTER_S):
        self.client, self.row, self.run_id, self.after_s = client, row, run_id, after_s
        self.extra = _extra(labels, mem_limit)
        self.container: Any = None  # a docker Container, wrapped in eval_staging.MadeAhead
        self._cancel = threading.Event()
        self._thread = threading.Thread(target=self._make, name="clawswe-eval-ahead", daemon=True)
        self._thread.start()

    def _make(self) -> None:
        if self._cancel.wait(self.after_s):
            return
        logger = logging.getLogger("clawswe.eval-ahead")
        try:
            spec = make_test_spec(self.row)
            container = swe_run.create_container(spec, _EvalClient(self.client, self.extra, framed=False), self.run_id,
                                                 logger)
            container.start()
            from pytest_clawswe.swe.grading.eval_staging import MadeAhead

            # swebench's `mkdir -p` before each copy, and the eval script's copy, made now
            script = None if getattr(spec, "image_assets", None) else spec.eval_script
            self.container = MadeAhead(container, script)
        except Exception:  # noqa: BLE001  run_instance makes its own then, and reports what fails
            self.container = None

    def take(self):
        """The container when it is made (waits while it is being made); None when the agent ended sooner."""
        self._cancel.set()
        self._thread.join()
        container, self.container = self.container, None
        return container

    def discard(self) -> None:
        container = self.take()
        if container is not None:
            _remove_now(container)


def _extra(labels: dict[str, str], mem_limit: str | None) -> dict:
    extra = {"labels": {**labels, LABEL_ROLE: "eval"}, "network_disabled": True, "stop_signal": "SIGKILL"}
    if mem_limit:
        extra["mem_limit"] = mem_limit
    return extra


def empty_report(instance_id: str) -> dict:
    """The report swebench's grader gives a prediction with no patch (it is counted, not run)."""
    return {instance_id: {"patch_is_None": False, "patch_exists": False,
                          "patch_successfully_applied": False, "resolved": False}}


def score(client, row: dict, patch: str, *, run_id: str, model_label: str, eval_dir: Path,
          labels: dict[str, str], timeout: float | None = 1800, mem_limit: str | None = None,
          ahead: EvalContainer | None = None) -> Score:
    """Grade `patch` for the instance `row`; evaluator logs end up in eval_dir. `ahead`: its container, made
    while the agent worked (with the same labels and limits), is the one the evaluation runs in."""
    iid = row["instance_id"]
    eval_dir.mkdir(parents=True, exist_ok=True)
    ready = ahead.take() if ahead is not None else None
    if ready is not None and not patch.strip():
        _remove_now(ready)
    if not patch.strip():
        report = empty_report(iid)
        (eval_dir / LOG_REPORT).write_text(json.dumps(report, indent=2))
        return Score(UNRESOLVED, False, False, "the patch is empty", report)

    spec = make_test_spec(row)
    pred = {"instance_id": iid, "model_name_or_path": model_label, "model_patch": patch}
    extra = _extra(labels, mem_limit)
    # swebench writes under RUN_EVALUATION_LOG_DIR/<run_id>/<model>/<id>; point that into our run dir.
    scratch = eval_dir.parent / ".swebench"
    swe_run.RUN_EVALUATION_LOG_DIR = scratch
    swe_run.cleanup_container = _remove_container
    log_dir = scratch / run_id / model_label.replace("/", "__") / iid
    shutil.rmtree(log_dir, ignore_errors=True)  # its report cache must not answer for a new patch
    eval_client = _EvalClient(client, extra, ready)
    try:
        result = swe_run.run_instance(spec, pred, eval_client, run_id, timeout=int(timeout) if timeout else None)
    except Exception as exc:  # swebench raises only for machinery failures here
        raise InfraError(f"the SWE-bench evaluator crashed: {type(exc).__name__}: {exc}") from exc
    finally:
        if ready is not None and eval_client.containers._ready is not None:  # never handed out: it goes
            _remove_now(ready)
        if log_dir.is_dir():
            for item in log_dir.iterdir():
                shutil.move(str(item), eval_dir / item.name)
        shutil.rmtree(scratch, ignore_errors=True)

    made = eval_client.containers.made
    if made is not None and made.lost:  # whatever it says, it is not the whole test output
        raise InfraError(f"the evaluation's test output of {iid} came back without its beginning (the engine's "
                         f"stream cut it): not graded, the item is retried (see {eval_dir / LOG_TEST_OUTPUT})")
    return _verdict(iid, result, eval_dir, timeout)


def _verdict(iid: str, result, eval_dir: Path, timeout: float | None) -> Score:
    """The Score of swebench's run_instance `result` (None: it gave no report), read with its logs in eval_dir."""
    log_text = _read(eval_dir / LOG_INSTANCE)
    if result is None:
        if APPLY_PATCH_FAIL in log_text:
            return Score(APPLY_FAILED, False, False, "the patch does not apply to the base commit")
        if "Test timed out" in log_text:
            return Score(UNRESOLVED, False, True, f"the tests timed out after {timeout:g} s" if timeout else "the tests timed out")
        tail = log_text.strip().splitlines()[-1:] or ["no log"]
        raise InfraError(f"the SWE-bench evaluator failed for {iid}: {tail[0][:300]} "
                         f"(log: {eval_dir / LOG_INSTANCE})")
    report = result[1]
    entry = report[iid]
    if entry.get("infra_failure"):
        raise InfraError(f"the evaluation environment broke for {iid} "
                         f"({entry.get('infra_failure_reason')}); see {eval_dir / LOG_TEST_OUTPUT}")
    if not entry.get("patch_successfully_applied") and END_TEST_OUTPUT not in _read(eval_dir / LOG_TEST_OUTPUT):
        # the eval script always prints the end marker: without it the run was cut off (container stopped or
        # killed, e.g. by Ctrl-C), which says nothing about the patch
        raise InfraError(f"the evaluation of {iid} stopped before its tests finished (its container was stopped); "
                         "a resumed run grades it again")
    if not entry.get("patch_successfully_applied"):
        # swebench marks "applied" only when the test log parsed: no parseable output means the tests never ran
        return Score(UNRESOLVED, False, True, "the tests produced no parseable output (build broken?)", report)
    if entry.get("resolved"):
        return Score(RESOLVED, True, True, "", report)
    return Score(UNRESOLVED, False, True, _failing_tests(entry), report)

def _failing_tests(entry: dict) -> str:
    status = entry.get("tests_status") or {}
    f2p = status.get("FAIL_TO_PASS", {}).get("failure", [])
    p2p = status.get("PASS_TO_PASS", {}).get("failure", [])
    parts = []
    if f2p:
        parts.append(f"{len(f2p)} FAIL_TO_PASS test(s) still fail (e.g. {f2p[0]})")
    if p2p:
        parts.append(f"{len(p2p)} PASS_TO_PASS test(s) broke (e.g. {p2p[0]})")
    return "; ".join(parts) or "not resolved"


def _read(path: Path) -> str:
    return path.read_text(errors="replace") if path.is_file() else ""


__all__ = ["Score", "score", "ERROR"]
