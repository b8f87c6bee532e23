"""What a run has on a Docker engine (test helper): the containers, networks and volumes with the run's label,
found by the run's id or by its folder (the id read from its run.json)."""
import json
from pathlib import Path

from polling import wait_until

from pytest_clawswe.labels import LABEL_RUN


def run_id_of(run_dir: Path) -> str | None:
    """The id of the run in `run_dir` (None until the run has written its run.json)."""
    found = run_dir / "run.json"
    return json.loads(found.read_text())["run_id"] if found.is_file() else None


def _label(run: Path | str) -> str:
    run_id = run if isinstance(run, str) else run_id_of(run)
    assert run_id, f"no run.json in {run}"
    return f"{LABEL_RUN}={run_id}"


def run_containers(docker_client, run: Path | str, role: str = "", running: bool = False) -> list:
    """The run's containers (`run`: its id, or its folder), only those of `role` if given, only the running ones if
    `running` (else the stopped ones too)."""
    labels = [_label(run)] + ([f"clawswe.role={role}"] if role else [])
    return docker_client.containers.list(all=not running, filters={"label": labels})


def wait_for_running(docker_client, run_dir: Path, role: str, count: int = 1, timeout: float = 300) -> str:
    """Wait until the run in `run_dir` has `count` running containers of `role` (its run.json written first): the
    run's id."""
    def ran() -> str:
        run_id = run_id_of(run_dir)
        return run_id if run_id and len(run_containers(docker_client, run_id, role, running=True)) >= count else ""

    return wait_until(ran, timeout, f"{count} {role} container(s) of the run ran at once")


def left_containers(docker_client, run_dir: Path) -> list:
    """The containers of the run in `run_dir` still on the engine, running or not: none after a run."""
    return run_containers(docker_client, run_dir)


def run_objects(docker_client, run: Path | str, volumes: bool = True) -> list:
    """Every container, network and (unless `volumes` is false) volume of the run still on the engine."""
    label = {"label": _label(run)}
    found = docker_client.containers.list(all=True, filters=label) + docker_client.networks.list(filters=label)
    return found + (docker_client.volumes.list(filters=label) if volumes else [])
