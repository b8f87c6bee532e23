"""The services sidecar on a cluster: a second container of the task's pod (`--kubernetes`; docs/scale-out.md).

As on Docker (sidecar.py), it shares only the network with the agent (a pod's containers share one: the
released tasks' `localhost:91xx` works), not its files (its own image; the fixtures are copied into a volume of
its own, which the sandbox does not mount) nor its users (it runs as the image's `wcs` user). A pod has one
process namespace for the stopper's sake (engine/kube/pod_spec.py): the agent can list the services' processes
but neither signal them (the sandbox has no KILL capability beside a companion, and they are another user's)
nor read their files through /proc. The container waits for its fixtures before it starts the server; the audit
is read back through exec when the agent is done.
"""
from __future__ import annotations

import io
import tarfile
import time
from pathlib import Path, PurePosixPath

from pytest_clawswe.errors import InfraError
from pytest_clawswe.wildclaw.services.sidecar import _HEALTH, PORTS, Sidecar, _payload, check_config

CONTAINER = "services"
VOLUME = "services-in"
INBOX = "/srv/in"  # the fixtures and config, copied in before the server starts
SERVICES_UID = 10001  # the sidecar image's wcs user
_START = (f'while [ ! -e {INBOX}/.ready ]; do sleep 0.1; done; exec /opt/wcs/bin/python -m mock.app '
          f'--config {INBOX}/config.json --fixtures {INBOX}/fixtures --audit-dir /srv/audit')


def declare(ws, image_ref: str) -> None:
    """Add the services container to the pod `ws` (before it starts)."""
    ws.add_companion({
        "name": CONTAINER, "image": image_ref, "command": ["sh", "-c", _START],
        "resources": {"limits": {"memory": "512Mi"}, "requests": {"memory": "64Mi", "cpu": "50m"}},
        "securityContext": {"runAsUser": SERVICES_UID, "allowPrivilegeEscalation": False,
                            "capabilities": {"drop": ["ALL"]}},
        "volumeMounts": [{"name": VOLUME, "mountPath": INBOX}],
    }, ({"name": VOLUME, "emptyDir": {}},))


def start(ws, config: dict | None, fixtures_dir: Path, audit_dir: Path, timeout: float = 60.0,
          progress=lambda line: None) -> Sidecar:
    """Copy the fixtures in, let the server start, and wait until every service answers health."""
    config = check_config(config, Path(fixtures_dir))
    ports = {name: int({**PORTS, **(config.get("ports") or {})}[name]) for name in config["services"]}
    begin = time.monotonic()
    ws.put_archive(INBOX, _payload(config, Path(fixtures_dir)), container=CONTAINER)
    ws.exec_in(CONTAINER, ["touch", f"{INBOX}/.ready"])
    cmd = ["/opt/wcs/bin/python", "-c", _HEALTH, *map(str, ports.values())]
    deadline = time.monotonic() + timeout
    while ws.exec_in(CONTAINER, cmd, cap=65536).code != 0:
        if time.monotonic() > deadline:
            raise InfraError(f"the services did not answer health within {timeout:.0f} s")
        time.sleep(0.1)
    car = Sidecar(ws, Path(audit_dir), ports, config=config)
    car.start_seconds = time.monotonic() - begin
    progress(f"services up in {car.start_seconds:.1f} s: {', '.join(f'{n}:{p}' for n, p in ports.items())}")
    return car


def stop(car: Sidecar) -> Path:
    """Copy the audit out (the services stay until the pod goes). A second call does nothing more."""
    if car.stopped:
        return car.audit_dir
    car.stopped = True
    done = car.container.exec_in(CONTAINER, ["tar", "-c", "-f", "-", "-C", "/srv", "audit"], merge=False)
    if done.code != 0:
        raise InfraError(f"could not copy the audit out of the services container (exit {done.code})")
    car.audit_dir.mkdir(parents=True, exist_ok=True)
    with tarfile.open(fileobj=io.BytesIO(done.out.value())) as tar:
        for member in tar.getmembers():
            parts = PurePosixPath(member.name).parts[1:]  # drop the leading audit/
            if member.isfile() and len(parts) == 1:
                (car.audit_dir / parts[0]).write_bytes(tar.extractfile(member).read())
    return car.audit_dir
