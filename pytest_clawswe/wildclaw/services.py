"""A WildClawBench task's mock services: which to start, from what, and where their audit goes.

A task declares services with a `services/` folder in its workspace folder (next to exec/ and gt/, so the
agent never gets it): `config.json` ({"services", "error_rate", "error_seed", "search_budget"}) and the
fixtures (`gmail.yaml`, `calendar.yaml`, `contacts.yaml`, `slack.yaml`, `search/corpus.jsonl`). A released
task whose Warmup starts a mock service from its workspace gets that service in the sidecar instead: the
line is taken out of the warmup, its fixture file is loaded into the sidecar, and the result says so.
The sidecar runs beside the agent's container (its network namespace only) from before the warmup until
the agent is done; its audit log lands in the task's run folder as audit/.
"""
from __future__ import annotations

import json
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from .agent import TaskSetupError
from .taskfile import Task

SERVICES_DIR = "services"  # in the task's workspace folder
AUDIT_DIR = "audit"  # in the task's run folder


@dataclass
class Plan:
    warmup: list[str]  # the lines still run in the agent's container
    fixtures: Path | None = None  # what the sidecar loads; None: no services
    config: dict = field(default_factory=dict)
    moved: list[dict] = field(default_factory=list)  # released warmup lines now served by the sidecar
    scratch: Path | None = None  # a folder we made for moved fixtures, removed at stop


def plan(task: Task, ws_dir: Path) -> Plan:
    """The task's services, checked before any container exists (TaskSetupError: one sentence)."""
    from ..wildclaw_services.sidecar import check_config
    from ..wildclaw_services.warmup import host_fixture, split_warmup

    declared = ws_dir / SERVICES_DIR
    split = split_warmup(task.warmup)
    if not declared.is_dir() and not split.moved:
        return Plan(list(task.warmup))
    out = Plan(split.keep, fixtures=declared if declared.is_dir() else None)
    config: dict = {}
    try:
        if declared.is_dir() and (declared / "config.json").is_file():
            config = json.loads((declared / "config.json").read_text())
    except ValueError as exc:
        raise TaskSetupError(f"{task.id}: {declared / 'config.json'} is not valid JSON ({exc})") from None
    if split.moved:
        # the moved services' fixtures are copied next to the declared ones, in a folder of our own
        scratch = Path(tempfile.mkdtemp(prefix="clawswe-services-"))
        if declared.is_dir():
            shutil.copytree(declared, scratch, dirs_exist_ok=True)
        names = list(config.get("services") or [])
        for m in split.moved:
            entry = {"line": m.line, "service": m.service, "fixture": m.fixture}
            if m.fixture:
                try:
                    src = host_fixture(m.fixture, ws_dir)
                except ValueError as exc:
                    shutil.rmtree(scratch, ignore_errors=True)
                    raise TaskSetupError(f"{task.id}: {exc}") from None
                if not src.is_file():
                    shutil.rmtree(scratch, ignore_errors=True)
                    raise TaskSetupError(f"{task.id}: the warmup starts {m.service} with {m.fixture}, which is "
                                         f"not in {ws_dir}")
                shutil.copyfile(src, scratch / f"{m.service}{src.suffix or '.json'}")
            names.append(m.service)
            out.moved.append(entry)
        config["services"] = sorted(set(names))
        out.fixtures, out.scratch = scratch, scratch
    try:
        out.config = check_config(config or None, out.fixtures)
    except ValueError as exc:
        if out.scratch:
            shutil.rmtree(out.scratch, ignore_errors=True)
        raise TaskSetupError(f"{task.id}: the task's services: {exc}") from None
    return out


def start(client, ws, plan: Plan, audit_dir: Path, labels: dict, progress):
    """The sidecar beside the agent's container, or None when the task has no services."""
    if plan.fixtures is None:
        return None
    from ..wildclaw_services.sidecar import start_sidecar

    try:
        return start_sidecar(client, ws, plan.config, plan.fixtures, audit_dir, labels=labels, progress=progress)
    finally:
        if plan.scratch:  # copied into the sidecar (or failed): not needed any more
            shutil.rmtree(plan.scratch, ignore_errors=True)


def stop(car) -> Path:
    from ..wildclaw_services.sidecar import stop_sidecar

    return stop_sidecar(car)
