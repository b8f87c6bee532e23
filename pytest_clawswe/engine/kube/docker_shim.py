"""A Docker client's face over pods, for code written against docker-py that must run on a cluster unchanged.

SWE-bench's `run_instance` (and the benchmark's own staging around it) grades in a container it creates,
starts, copies files into, execs in (one exec with its own timeout: `client.api.exec_create/exec_start/
exec_inspect`) and removes. Given this client, each of those calls is the same operation on a pod: the
container is a pod from the same image (its registry name), with the settings the caller asked for (user,
added capabilities, memory limit, labels, no network), the copies are tar streams through exec, and an exec's
`Pid` is the process's own (it writes it before it runs), so a caller's `kill -TERM <pid>` finds it (on Docker
the Pid is the host's; swebench's stop at its timeout is made one that works either way: swe/grading/eval_output.py).
The grading code, its eval script, log parser and report are swebench's own, byte for byte.
What it does not cover raises NotImplementedError: nothing is faked silently.
"""
from __future__ import annotations

import secrets
import shlex
import threading
from typing import Any

import docker.errors
from docker.models.containers import ExecResult

from pytest_clawswe.engine.kube import pod_exec
from pytest_clawswe.engine.kube.cluster import ApiError, dns_label
from pytest_clawswe.engine.kube.pod_spec import SANDBOX, pod_body
from pytest_clawswe.engine.kube.pod_status import wait_running
from pytest_clawswe.engine.workspace import MAX_EXEC_OUTPUT
from pytest_clawswe.errors import InfraError
from pytest_clawswe.labels import LABEL_INSTANCE, LABEL_ROLE, owner_label

PID_DIR = "/tmp/.clawswe-exec"  # where an exec writes its pid (exec_inspect's Pid)
_UNTAR = 'mkdir -p -- "$1" && head -c "$2" | tar -x -f - -C "$1"'


class PodDockerClient:
    """containers.create/get, images.get and api.exec_* as docker-py has them, on pods of the run's namespace."""

    def __init__(self, site, labels: dict[str, str] | None = None):
        self.site = site
        self.labels = labels or {}
        self.containers = _Containers(self)
        self.images = _Images(self)
        self.api = _Api(self)
        self.made: dict[str, "PodContainer"] = {}  # id -> the containers (pods) made through this client


class _Images:
    def __init__(self, client: PodDockerClient):
        self._client = client

    def get(self, name: str):
        """The image as the registry serves it (pushed from this machine's engine if need be)."""
        return _Image(self._client.site.image_ref(name))

    def pull(self, name: str, *args, **kwargs):
        return self.get(name)


class _Image:
    def __init__(self, ref: str):
        self.ref, self.id, self.tags = ref, ref, [ref]


class _Containers:
    def __init__(self, client: PodDockerClient):
        self._client = client

    def get(self, name: str, *args, **kwargs):
        raise docker.errors.NotFound(f"{name}: a pod is made fresh for every create")

    def create(self, image: str, command=None, name: str | None = None, user: str | None = None,
               labels: dict | None = None, cap_add=None, mem_limit=None, network_disabled: bool = False,
               detach: bool = True, stop_signal=None, platform=None, **unknown) -> "PodContainer":
        if unknown:
            raise NotImplementedError(f"container settings a pod does not take here: {sorted(unknown)}")
        argv = shlex.split(command) if isinstance(command, str) else list(command or ["sleep", "infinity"])
        made = PodContainer(self._client, image, argv, name or "", user, {**self._client.labels, **(labels or {})},
                            tuple(cap_add or ()), mem_limit, network_disabled)
        self._client.made[made.id] = made
        return made

    def list(self, *args, **kwargs):
        return []


class PodContainer:
    """A docker-py Container whose container is a pod (created at start())."""

    def __init__(self, client: PodDockerClient, image: str, command: list[str], name: str, user: str | None,
                 labels: dict, cap_add: tuple, mem_limit, network_disabled: bool):
        self.client = client
        self.image = image
        site = client.site
        role = labels.get(LABEL_ROLE, "eval")
        self.name = dns_label(f"cw-{role}-{labels.get(LABEL_INSTANCE, name)}"[:50]).rstrip("-") + "-" + \
            secrets.token_hex(3)
        self.id = self.name
        self.attrs: dict[str, Any] = {"Config": {"User": user or ""}, "Name": name}
        self.node = ""
        self._body = pod_body(self.name, site.image_ref(image), labels={**labels, **owner_label()},
                              network="none" if network_disabled else None, mem_limit=mem_limit, environment=None,
                              extra_hosts=None, cap_drop=(), bundles=[], stopper=False, command=command,
                              user=user, cap_add=cap_add)
        self.created = False

    def start(self) -> None:
        if self.created:  # started already (made ahead: scoring.EvalContainer); Docker's start is a no-op then
            return
        site = self.client.site
        site.cluster.call("core", "create_namespaced_pod", site.namespace, self._body)
        self.created = True
        try:
            self.node = wait_running(site.cluster, site.namespace, self.name, [SANDBOX])["node"]
        except BaseException:
            self.remove(force=True)
            raise

    def exec_run(self, cmd, workdir: str | None = None, user: str | None = None, detach: bool = False,
                 environment=None, stdout: bool = True, stderr: bool = True, **unknown) -> ExecResult:
        if unknown:
            raise NotImplementedError(f"exec settings a pod does not take here: {sorted(unknown)}")
        argv = self._argv(cmd, workdir, user, environment)
        site = self.client.site
        if detach:
            stream = pod_exec.open_exec(site.cluster, site.namespace, self.name, SANDBOX, argv, 65536)
            threading.Thread(target=pod_exec.pump, args=(stream,), daemon=True, name="clawswe-pod-exec").start()
            return ExecResult(None, None)
        stream = pod_exec.run(site.cluster, site.namespace, self.name, SANDBOX, argv, MAX_EXEC_OUTPUT, merge=True)
        return ExecResult(stream.code, stream.out.value())

    def _argv(self, cmd, workdir, user, environment) -> list[str]:
        if user not in (None, "", "root", "0", "0:0") and user != self.attrs["Config"]["User"]:
            raise NotImplementedError(f"an exec as {user!r} in a pod that runs as {self.attrs['Config']['User']!r}")
        argv = shlex.split(cmd) if isinstance(cmd, str) else list(cmd)
        env = [f"{k}={v}" for k, v in (environment or {}).items()] if isinstance(environment, dict) else \
            list(environment or [])
        return ["env", *(["-C", workdir] if workdir else []), *env, *argv]

    def put_archive(self, path: str, data: bytes) -> bool:
        site = self.client.site
        stream = pod_exec.run(site.cluster, site.namespace, self.name, SANDBOX,
                              ["sh", "-c", _UNTAR, "sh", path, str(len(data))], 65536, stdin=data, merge=True)
        if stream.code != 0:
            raise docker.errors.APIError(f"copy into {path} in pod {self.name} failed: "
                                         f"{stream.out.value()[-300:].decode(errors='replace')}")
        return True

    def remove(self, force: bool = False, **kwargs) -> None:
        if not self.created:
            return
        self.created = False
        site = self.client.site
        try:
            site.cluster.call("core", "delete_namespaced_pod", self.name, site.namespace, grace_period_seconds=0,
                              _request_timeout=30)
        except (ApiError, InfraError, OSError):
            pass

    def stop(self, *args, **kwargs) -> None:
        self.remove(force=True)

    def kill(self, *args, **kwargs) -> None:
        self.remove(force=True)

    def reload(self) -> None:
        pass

    @property
    def status(self) -> str:
        return "running" if self.created else "removed"


class _Api:
    """The low-level calls swebench's exec_run_with_timeout makes: exec_create, exec_start, exec_inspect."""

    def __init__(self, client: PodDockerClient):
        self._client = client
        self._execs: dict[str, dict] = {}

    def exec_create(self, container, cmd, workdir=None, environment=None, user="", **kwargs) -> dict:
        target = container if isinstance(container, PodContainer) else self._find(container)
        exec_id = secrets.token_hex(8)
        pid_file = f"{PID_DIR}/{exec_id}"
        argv = target._argv(cmd, workdir, user or None, environment)
        # the process writes its pid, then becomes the command: exec_inspect's Pid is the command's own
        wrapped = ["sh", "-c", f'mkdir -p {PID_DIR} && echo $$ > {pid_file} && exec "$@"', "sh", *argv]
        self._execs[exec_id] = {"container": target, "argv": wrapped, "pid_file": pid_file, "stream": None}
        return {"Id": exec_id}

    def exec_start(self, exec_id: str, stream: bool = False, demux: bool = False, **kwargs):
        entry = self._execs[exec_id]
        target: PodContainer = entry["container"]
        site = self._client.site
        opened = pod_exec.open_exec(site.cluster, site.namespace, target.name, SANDBOX, entry["argv"],
                                    MAX_EXEC_OUTPUT, merge=True)
        entry["stream"] = opened
        chunks = _chunks(opened, demux)
        if stream:
            return chunks
        if demux:
            pairs = list(chunks)
            return (b"".join(p[0] or b"" for p in pairs), b"".join(p[1] or b"" for p in pairs))
        return b"".join(chunks)

    def exec_inspect(self, exec_id: str) -> dict:
        entry = self._execs[exec_id]
        opened = entry["stream"]
        pid = 0
        target: PodContainer = entry["container"]
        result = target.exec_run(["cat", entry["pid_file"]])
        if result.exit_code == 0 and result.output.strip().isdigit():
            pid = int(result.output.strip())
        running = opened is not None and not opened.ended.is_set()
        return {"Pid": pid, "Running": running, "ExitCode": None if running or opened is None else opened.code}

    def _find(self, container_id: str) -> PodContainer:
        if container_id not in self._client.made:
            raise NotImplementedError(f"exec_create for a container this client did not make: {container_id}")
        return self._client.made[container_id]


def _chunks(stream, demux: bool = False):
    """The exec's output as docker-py's stream yields it, chunk by chunk, as it comes: merged, or with `demux`
    (stdout, None) / (None, stderr) pairs; a stream cut before its exit status (the node or the API server went
    away) raises InfraError: partial test output is never graded."""
    ws = stream.ws
    status = b""
    try:
        while True:
            is_open = ws.is_open()
            if is_open:
                ws.update(timeout=1)
            for channel in (pod_exec.STDOUT, pod_exec.STDERR):
                data = ws.read_channel(channel)
                if data:
                    yield ((data, None) if channel == pod_exec.STDOUT else (None, data)) if demux else data
            status += ws.read_channel(pod_exec.ERROR) or b""
            if not is_open:
                break
    finally:
        try:
            ws.close()
        except Exception:  # noqa: BLE001
            pass
        stream.code, message = pod_exec.exit_code(status)
        stream.failure = message if stream.code is None else ""
        stream.ended.set()
    if stream.code is None:
        raise InfraError(f"an exec of the evaluation was cut: {stream.failure}")
