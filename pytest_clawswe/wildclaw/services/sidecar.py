"""The services sidecar: one container beside the agent's, in its network namespace and nothing else.

    sidecar = start_sidecar(client, agent_container, config, fixtures_dir, audit_dir, labels=run_labels)
    ... the agent runs; localhost:9100.. answer inside its container ...
    stop_sidecar(sidecar)        # audit logs copied to audit_dir, sidecar removed

Shared: only the network namespace (`network_mode=container:<agent>`), so `localhost:91xx` works as the
released tasks expect. Not shared: files (own image; fixtures copied into the sidecar only), processes
(own PID namespace: the agent sees no service process, so it cannot kill one or find it by port), users.
The audit is copied out through the Docker API, not a host bind mount, so a remote daemon works too, and
streamed to disk as it comes (it can be tens of MiB: auditview's limits).
Start the sidecar before the agent's first process: then the ports are the services' before anything of
the agent could bind them.
"""
from __future__ import annotations

import io
import json
import shutil
import tarfile
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

import docker.errors

from pytest_clawswe.engine.framing.chunks import ChunkReader
from pytest_clawswe.errors import InfraError
from pytest_clawswe.labels import LABEL_ROLE, owner_label
from pytest_clawswe.wildclaw.services.sidecar_image import ensure_sidecar_image
from pytest_clawswe.wildclaw.services.mock import PORTS

ROLE = "wildclaw-services"
KNOWN = set(PORTS)
_HEALTH = """
import sys, urllib.request
for port in sys.argv[1:]:
    urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2).read()
"""


@dataclass
class Sidecar:
    container: object  # docker Container
    audit_dir: Path
    ports: dict[str, int]
    start_seconds: float = 0.0
    config: dict = field(default_factory=dict)
    stopped: bool = False


def check_config(config: dict | None, fixtures_dir: Path) -> dict:
    """The task's service config, completed; a ValueError of one sentence if it is wrong.

    None: the fixtures folder's own config.json (or {}: every service that has a fixture file)."""
    fixtures_dir = Path(fixtures_dir)
    if not fixtures_dir.is_dir():
        raise ValueError(f"the services' fixtures folder {fixtures_dir} does not exist")
    if config is None:
        path = fixtures_dir / "config.json"
        try:
            config = json.loads(path.read_text()) if path.is_file() else {}
        except ValueError as exc:
            raise ValueError(f"{path} is not valid JSON ({exc})") from None
    if not isinstance(config, dict):
        raise ValueError(f"the task's service config must be a mapping, not {type(config).__name__}")  # noqa: TRY004 -- callers catch ValueError for every config error
    config = dict(config)
    services = config.get("services") or sorted(
        {p.stem for p in fixtures_dir.iterdir() if p.suffix in (".json", ".yaml", ".yml")} & KNOWN
        | ({"search"} if (fixtures_dir / "search").is_dir() else set()))
    unknown = set(services) - KNOWN
    if unknown:
        raise ValueError(f"unknown service(s) {', '.join(sorted(unknown))} in the task's service config; "
                         f"known: {', '.join(sorted(KNOWN))}")
    if not services:
        raise ValueError(f"no service to start: name them in the config or put fixtures in {fixtures_dir}")
    rate = config.get("error_rate", 0.0)
    if not isinstance(rate, (int, float)) or not 0 <= rate <= 1:
        raise ValueError(f"error_rate must be a number between 0 and 1, not {rate!r}")
    budget = config.get("search_budget")
    if budget is not None and (not isinstance(budget, int) or budget < 0):
        raise ValueError(f"search_budget must be a whole number of queries, not {budget!r}")
    calls, mb = config.get("audit_max_calls"), config.get("audit_max_mb")
    if calls is not None and (isinstance(calls, bool) or not isinstance(calls, int) or calls < 1):
        raise ValueError(f"audit_max_calls must be a whole number of calls above 0, not {calls!r}")
    if mb is not None and (isinstance(mb, bool) or not isinstance(mb, (int, float)) or not 0 < mb <= 1024):
        raise ValueError(f"audit_max_mb must be a number of MiB above 0 and at most 1024, not {mb!r}")
    return {**config, "services": list(services), "host": "127.0.0.1"}


def _container_id(agent) -> str:
    agent = getattr(agent, "container", agent)  # a Workspace, a Container, or an id
    return getattr(agent, "id", agent)


def _payload(config: dict, fixtures_dir: Path) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        data = json.dumps(config).encode()
        info = tarfile.TarInfo("config.json")
        info.size, info.mode, info.mtime = len(data), 0o644, int(time.time())
        tar.addfile(info, io.BytesIO(data))
        for path in sorted(Path(fixtures_dir).rglob("*")):
            if path.is_file() and not path.is_symlink():
                member = tar.gettarinfo(str(path), arcname=str(PurePosixPath("fixtures", *path.relative_to(fixtures_dir).parts)))
                member.uid = member.gid = 0
                member.mode = 0o644
                with open(path, "rb") as fh:
                    tar.addfile(member, fh)
    return buf.getvalue()


def start_sidecar(client, agent, config: dict | None, fixtures_dir: str | Path, audit_dir: str | Path, *,
                  labels: dict[str, str], image: str | None = None, timeout: float = 60.0,
                  progress=lambda line: None) -> Sidecar:
    """Start the services beside the running `agent` container and wait until every one answers health.

    `labels`: the run's labels (clawswe.run, clawswe.instance), so `clawswe clean` finds a leftover.
    Raises ValueError for a wrong config (before anything is created), InfraError if the sidecar fails."""
    config = check_config(config, Path(fixtures_dir))
    image = image or ensure_sidecar_image(client, progress)
    ports = {name: int({**PORTS, **(config.get("ports") or {})}[name]) for name in config["services"]}
    begin = time.monotonic()
    try:
        container = client.containers.create(
            image, network_mode=f"container:{_container_id(agent)}",
            labels={**labels, LABEL_ROLE: ROLE, **owner_label()},
            mem_limit="512m", pids_limit=64, cap_drop=["ALL"], security_opt=["no-new-privileges"],
        )
    except docker.errors.ImageNotFound as exc:
        raise InfraError(f"the services image {image} is missing; build it first", retryable=False) from exc
    except (docker.errors.DockerException, OSError) as exc:
        raise InfraError(f"could not create the services sidecar: {exc}") from exc
    sidecar = Sidecar(container, Path(audit_dir), ports, config=config)
    try:
        if not container.put_archive("/srv", _payload(config, Path(fixtures_dir))):
            raise InfraError("could not copy the fixtures into the services sidecar")
        container.start()
        _wait_healthy(container, ports, timeout)
    except BaseException as exc:
        logs = _logs(container)
        _remove(container)  # on every path, Ctrl-C included: nothing is left running
        if not isinstance(exc, (InfraError, docker.errors.DockerException, OSError)):
            raise
        raise InfraError(f"the services sidecar did not come up: {exc}; its log ends: {logs}") from exc
    sidecar.start_seconds = time.monotonic() - begin
    progress(f"services up in {sidecar.start_seconds:.1f} s: {', '.join(f'{n}:{p}' for n, p in ports.items())}")
    return sidecar


def _wait_healthy(container, ports: dict[str, int], timeout: float) -> None:
    deadline = time.monotonic() + timeout
    cmd = ["/opt/wcs/bin/python", "-c", _HEALTH, *map(str, ports.values())]
    while True:
        container.reload()
        if container.status not in ("created", "running"):
            raise InfraError(f"the services exited ({container.status})")
        # the server's ready line first (a cheap read), then one real health call per service
        if b'"ready"' in container.logs(stderr=False) and container.exec_run(cmd, user="wcs").exit_code == 0:
            return
        if time.monotonic() > deadline:
            raise InfraError(f"the services did not answer health within {timeout:.0f} s")
        time.sleep(0.05)


def copy_audit(sidecar: Sidecar) -> Path:
    """Copy the audit logs (one JSONL per service, meta.json, limits.json) out into sidecar.audit_dir, streamed
    from the engine to disk a chunk at a time; may run mid-task."""
    try:
        stream, _ = sidecar.container.get_archive("/srv/audit")
    except (docker.errors.DockerException, OSError) as exc:
        raise InfraError(f"could not copy the audit out of the services sidecar: {exc}") from exc
    sidecar.audit_dir.mkdir(parents=True, exist_ok=True)
    try:
        with tarfile.open(fileobj=ChunkReader(stream), mode="r|") as tar:  # a stream: nothing held whole
            for member in tar:
                parts = PurePosixPath(member.name).parts[1:]  # drop the leading audit/
                if member.isfile() and len(parts) == 1 and not parts[0].startswith("."):
                    with open(sidecar.audit_dir / parts[0], "wb") as out:
                        shutil.copyfileobj(tar.extractfile(member), out, 2**20)
    except (tarfile.TarError, docker.errors.DockerException, OSError) as exc:
        raise InfraError(f"the audit's copy out of the services sidecar broke off: {exc}") from exc
    finally:
        stream.close()
    return sidecar.audit_dir


def stop_sidecar(sidecar: Sidecar) -> Path:
    """Copy the audit out, then remove the sidecar (also when the copy fails: it is raised after).
    A second call does nothing more."""
    if sidecar.stopped:
        return sidecar.audit_dir
    try:
        return copy_audit(sidecar)
    finally:
        sidecar.stopped = True
        _remove(sidecar.container)


def _logs(container) -> str:
    try:
        return container.logs(tail=5).decode("utf-8", "replace").strip()[-600:] or "(empty)"
    except (docker.errors.DockerException, OSError):
        return "(no log)"


def _remove(container) -> None:
    try:
        container.remove(force=True)
    except (docker.errors.DockerException, OSError):
        pass  # gone already; `clawswe clean` finds a leftover by its run label


# -- the grader's side: the audit served from the saved log ------------------------------------------------

REPLAY_ROOT = "/opt/clawswe-replay"


def _readable(member: tarfile.TarInfo) -> tarfile.TarInfo:
    member.uid = member.gid = 0
    member.uname = member.gname = "root"
    member.mode = 0o644
    return member


def start_replay(workspace, audit_dir: str | Path, python: str = "python3", timeout: float = 30.0) -> None:
    """Serve `GET /<service>/audit` from a saved audit folder inside a grader container (a Workspace),
    at the same localhost ports, so the released graders read it unchanged. Needs only python3 there."""
    from pytest_clawswe.wildclaw.services import MOCK_DIR

    # one tar, spooled to disk and streamed to the engine: the audit is never held whole in memory here
    with tempfile.TemporaryFile(prefix="clawswe-replay-") as spool:
        with tarfile.open(fileobj=spool, mode="w") as tar:
            for folder in ("mock", "audit"):
                info = tarfile.TarInfo(folder)
                info.type, info.mode, info.mtime = tarfile.DIRTYPE, 0o755, int(time.time())
                tar.addfile(info)
            for name in ("__init__.py", "auditview.py", "replay.py"):
                tar.add(str(MOCK_DIR / name), arcname=f"mock/{name}", recursive=False, filter=_readable)
            for path in sorted(Path(audit_dir).iterdir()):
                if path.is_file() and not path.is_symlink():
                    tar.add(str(path), arcname=f"audit/{path.name}", recursive=False, filter=_readable)
        spool.seek(0)
        workspace.exec(["mkdir", "-p", REPLAY_ROOT], check=True)
        workspace.put_archive(REPLAY_ROOT, spool)
    # the image's Python, isolated (-I -S): nothing the agent left in the grader's container (a user site, a
    # usercustomize) runs in the server the graders trust; only our folder is added to its path
    run = f"import runpy, sys; sys.path.insert(0, {REPLAY_ROOT!r}); runpy.run_module('mock.replay', run_name='__main__', alter_sys=True)"
    argv = [python, "-I", "-S", "-c", run, "--audit-dir", f"{REPLAY_ROOT}/audit"]
    if hasattr(workspace, "exec_detached"):  # a pod (--kubernetes): the exec API has no detached start
        workspace.exec_detached(argv, workdir=REPLAY_ROOT)
    else:
        api = workspace.client.api
        exec_id = api.exec_create(workspace.container.id, argv, workdir=REPLAY_ROOT)["Id"]
        api.exec_start(exec_id, detach=True)
    meta = Path(audit_dir) / "meta.json"
    services = json.loads(meta.read_text())["services"] if meta.is_file() else []
    probe = ["sh", "-c", " && ".join(
        f"{python} -I -S -c \"import urllib.request;urllib.request.urlopen('http://127.0.0.1:{PORTS[s]}/{s}/audit')\""
        for s in services) or "true"]
    deadline = time.monotonic() + timeout
    while workspace.exec(probe).exit_code != 0:
        if time.monotonic() > deadline:
            raise InfraError(f"the audit replay did not answer within {timeout:.0f} s")
        time.sleep(0.1)
