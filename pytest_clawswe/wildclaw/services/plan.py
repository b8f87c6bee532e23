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

from pytest_clawswe.wildclaw.task.container import TaskSetupError
from pytest_clawswe.wildclaw.task.file import Task

SERVICES_DIR = "services"  # in the task's workspace folder
AUDIT_DIR = "audit"  # in the task's run folder


@dataclass
class Plan:
    warmup: list[str]  # the lines still run in the agent's container
    declared: Path | None = None  # the task's services/ folder, if any
    config: dict = field(default_factory=dict)  # checked; None-free
    moved: list[dict] = field(default_factory=list)  # released warmup lines now served by the sidecar
    moved_files: list[tuple[Path, str]] = field(default_factory=list)  # (fixture on the host, name in the sidecar)

    @property
    def wanted(self) -> bool:
        return bool(self.declared or self.moved)


def plan(task: Task, ws_dir: Path) -> Plan:
    """The task's services, checked before any container exists (TaskSetupError: one sentence)."""
    from pytest_clawswe.wildclaw.services.sidecar import check_config
    from pytest_clawswe.wildclaw.services.warmup import host_fixture, split_warmup

    declared = ws_dir / SERVICES_DIR
    split = split_warmup(task.warmup)
    if not declared.is_dir() and not split.moved:
        return Plan(list(task.warmup))
    out = Plan(split.keep, declared=declared if declared.is_dir() else None)
    config: dict = {}
    try:
        if declared.is_dir() and (declared / "config.json").is_file():
            config = json.loads((declared / "config.json").read_text())
    except ValueError as exc:
        raise TaskSetupError(f"{task.id}: {declared / 'config.json'} is not valid JSON ({exc})") from None
    if split.moved:
        names = list(config.get("services") or [])
        for m in split.moved:
            if m.fixture:
                try:
                    src = host_fixture(m.fixture, ws_dir)
                except ValueError as exc:
                    raise TaskSetupError(f"{task.id}: {exc}") from None
                if not src.is_file():
                    raise TaskSetupError(f"{task.id}: the warmup starts {m.service} with {m.fixture}, which is "
                                         f"not in {ws_dir}")
                out.moved_files.append((src, f"{m.service}{src.suffix or '.json'}"))
            names.append(m.service)
            out.moved.append({"line": m.line, "service": m.service, "fixture": m.fixture})
        config["services"] = sorted(set(names))
    try:
        out.config = check_config(config or None, out.declared or ws_dir)
    except ValueError as exc:
        raise TaskSetupError(f"{task.id}: the task's services: {exc}") from None
    return out


def declare(client, ws, plan: Plan, progress) -> None:
    """Before the agent's sandbox starts: a pod (--kubernetes) gets the services as a container of its own
    (pod_sidecar.py); a Docker container needs nothing yet (its sidecar joins it once it runs)."""
    if plan.wanted and hasattr(ws, "add_companion"):
        from pytest_clawswe.wildclaw.services import pod_sidecar
        from pytest_clawswe.wildclaw.services.sidecar_image import ensure_sidecar_image

        pod_sidecar.declare(ws, ws.site.image_ref(ensure_sidecar_image(client, progress)))


def start(client, ws, plan: Plan, audit_dir: Path, labels: dict, progress):
    """The sidecar beside the agent's container, or None when the task has no services."""
    if not plan.wanted:
        return None
    from pytest_clawswe.wildclaw.services.sidecar import start_sidecar

    # the sidecar's fixtures: the declared folder plus the moved services' files, in a folder of our own
    with tempfile.TemporaryDirectory(prefix="clawswe-services-") as tmp:
        fixtures = Path(tmp)
        if plan.declared:
            shutil.copytree(plan.declared, fixtures, dirs_exist_ok=True)
        for src, name in plan.moved_files:
            shutil.copyfile(src, fixtures / name)
        if getattr(ws, "companions", None):  # a pod: its services container was declared (declare())
            from pytest_clawswe.wildclaw.services import pod_sidecar

            return pod_sidecar.start(ws, plan.config, fixtures, audit_dir, progress=progress)
        return start_sidecar(client, ws, plan.config, fixtures, audit_dir, labels=labels, progress=progress)


def stop(car) -> Path:
    from pytest_clawswe.wildclaw.services.sidecar import stop_sidecar

    if hasattr(car.container, "exec_in"):  # the services container of a pod
        from pytest_clawswe.wildclaw.services import pod_sidecar

        return pod_sidecar.stop(car)
    return stop_sidecar(car)
