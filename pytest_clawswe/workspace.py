"""One container per benchmark item, through the Docker SDK.

The interface is kept to start, exec, copy in/out and remove so that another engine could sit behind it.
Every container carries the run's labels, so `clawswe clean` finds what a killed run left behind.
"""
from __future__ import annotations

import io
import shlex
import tarfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

import docker
import docker.errors

from .engine import docker_client  # noqa: F401  (its old home)
from .errors import InfraError
from .labels import LABEL_INSTANCE, LABEL_OWNER, LABEL_ROLE, LABEL_RUN, owner_alive, owner_label  # noqa: F401

MAX_EXEC_OUTPUT = 8 * 2**20  # bytes of a deadline exec's output kept (its tail)


@dataclass
class ExecResult:
    exit_code: int | None  # None: killed at the deadline
    stdout: str
    seconds: float
    stderr: str = ""

    @property
    def output(self) -> str:
        return self.stdout + self.stderr

    @property
    def timed_out(self) -> bool:
        return self.exit_code is None


class DiskWatch:
    """Stops every process in a container once its writable layer outgrows `limit` bytes.

    Docker's overlay2 has no per-container quota on most hosts, so the limit is held by polling: an agent
    may overshoot it by what it writes in one interval before it is stopped."""

    def __init__(self, ws: "Workspace", limit: int | None, interval: float = 5.0):
        self.ws, self.limit, self.interval = ws, limit, interval
        self.tripped_at: int | None = None  # the size that tripped it
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, name="clawswe-disk-watch", daemon=True)

    def __enter__(self) -> "DiskWatch":
        if self.limit:
            self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join()

    def _watch(self) -> None:
        while not self._stop.wait(self.interval):
            try:
                size = self.ws.disk_used()
                if size > self.limit:
                    self.tripped_at = max(size, self.tripped_at or 0)
                    self.ws.kill_all()  # again on every poll while over: nothing may write on
            except (docker.errors.DockerException, InfraError, OSError):
                pass  # the container went away or the daemon hiccuped: the agent phase sees it itself


def create_locked_network(client, name: str, labels: dict[str, str]) -> None:
    """An internal network: its containers reach the host's address on it (the model gateway listens
    there) and each other, but no route leads out: no package mirror, no GitHub, no outside DNS."""
    try:
        client.networks.get(name)
    except docker.errors.NotFound:
        try:
            client.networks.create(name, driver="bridge", internal=True, labels={**labels, **owner_label()})
        except docker.errors.APIError as exc:
            if exc.status_code != 409:  # another process made it first
                raise InfraError(f"could not create the run's network {name}: {exc}") from exc


class Workspace:
    """A running container for one item. Use as a context manager: the container is removed on every path."""

    def __init__(self, client: docker.DockerClient, image: str, *, labels: dict[str, str],
                 name: str | None = None, mem_limit: str | None = "8g", pids_limit: int | None = 300,
                 network: str | None = None, volumes_from: list[str] | None = None,
                 environment: dict[str, str] | None = None, extra_hosts: dict[str, str] | None = None):
        self.client = client
        self.image = image
        self.container = None
        self._create = dict(
            image=image, name=name, labels={**labels, **owner_label()},
            # tini as PID 1: reaps agents' zombies and lets the container stop at once.
            init=True, command=["sleep", "infinity"], entrypoint=[],
            mem_limit=mem_limit, memswap_limit=mem_limit, pids_limit=pids_limit,
            network=network, volumes_from=volumes_from or None,
            environment=environment or {}, extra_hosts=extra_hosts or None,
        )

    def start(self) -> "Workspace":
        try:
            # created, then started: a start that fails (a daemon restarting) leaves nothing behind
            self.container = self.client.containers.create(
                **{k: v for k, v in self._create.items() if v is not None})
            self.container.start()
        except docker.errors.ImageNotFound as exc:
            raise InfraError(f"image {self.image} is missing; build or pull it first", retryable=False) from exc
        except (docker.errors.DockerException, OSError) as exc:
            self.remove()
            raise InfraError(f"could not start a container from {self.image}: {exc}") from exc
        # The one child of tini at start is the container's keep-alive process: kill_all spares it.
        found = self.exec(["sh", "-c", _FIND_MAIN_PID])
        self._main_pid = found.output.strip() or "2"
        return self

    def __enter__(self) -> "Workspace":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.remove()

    def remove(self) -> None:
        if self.container is None:
            return
        try:
            self.container.remove(force=True)
        except (docker.errors.DockerException, OSError):
            # gone already, or the daemon is (requests' errors are OSErrors): the run's final sweep or
            # `clawswe clean` finds the container by its labels later
            pass
        self.container = None

    # -- exec ------------------------------------------------------------------------------------
    def exec(self, cmd: str | list[str], *, workdir: str = "/", env: dict | None = None,
             user: str = "root", check: bool = False, timeout: float | None = None) -> ExecResult:
        """Run a command; with a timeout, every process in the container is killed at the deadline.

        The default workdir is / rather than the image's: an agent may have deleted /testbed."""
        argv = ["bash", "-c", cmd] if isinstance(cmd, str) else cmd
        if timeout is not None:
            return self._exec_with_deadline(argv, workdir=workdir, env=env, user=user, timeout=timeout)
        start = time.monotonic()
        try:
            code, (out, err) = self.container.exec_run(argv, workdir=workdir, environment=env, user=user,
                                                       demux=True)
        except docker.errors.DockerException as exc:
            raise InfraError(f"exec in container failed: {exc}") from exc
        result = ExecResult(code, (out or b"").decode("utf-8", "replace"), time.monotonic() - start,
                            (err or b"").decode("utf-8", "replace"))
        if check and code != 0:
            raise InfraError(f"command failed in container (exit {code}): {_short(argv)}\n{result.output[-2000:]}")
        return result

    def _exec_with_deadline(self, argv, *, workdir, env, user, timeout) -> ExecResult:
        # Detached exec writing to a file in the container, polled: the deadline is ours, not the
        # client socket's, and a kill inside the container reaches processes the agent forked.
        log = "/tmp/.clawswe-exec.log"
        wrapped = ["sh", "-c", f'exec "$@" >{log} 2>&1', "sh", *argv]
        api = self.client.api
        start = time.monotonic()
        try:
            exec_id = api.exec_create(self.container.id, wrapped, workdir=workdir, environment=env, user=user)["Id"]
            api.exec_start(exec_id, detach=True)
            code, delay = None, 0.05
            while time.monotonic() - start < timeout:
                info = api.exec_inspect(exec_id)
                if not info["Running"]:
                    code = info["ExitCode"]
                    break
                time.sleep(delay)
                delay = min(delay * 1.5, 1.0)
            if code is None:
                self.kill_all()
        except docker.errors.DockerException as exc:
            raise InfraError(f"exec in container failed: {exc}") from exc
        # only the tail: an agent that prints without end must not fill the host's memory
        output = self.exec(["sh", "-c", f"tail -c {MAX_EXEC_OUTPUT} {log} 2>/dev/null; rm -f {log}"]).stdout
        return ExecResult(code, output, time.monotonic() - start)

    def disk_used(self) -> int:
        """Bytes in the container's writable layer (what it added or changed on top of its image)."""
        # the list endpoint, not inspect: only it takes size=True in the SDK
        found = self.client.api.containers(all=True, size=True, filters={"id": self.container.id})
        if not found:
            raise InfraError(f"container {self.container.short_id} is gone")
        return found[0].get("SizeRw") or 0

    def kill_all(self) -> None:
        """Kill every process in the container but tini and its keep-alive child: no agent process survives.

        One fork-free pass per exec, repeated from the host: inside, a fork can fail when the agent has
        used up the pid limit, so the waiting between passes happens here."""
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                result = self.container.exec_run(["sh", "-c", _KILL_PASS, "sh", self._main_pid], user="root")
                if result.exit_code == 0:
                    return
                if result.exit_code not in (1,):  # the pass itself could not run: make room for it
                    self._raise_pids_limit()
            except docker.errors.APIError:
                self._raise_pids_limit()
            time.sleep(0.1)
        raise InfraError("processes in the container survived SIGKILL for 10 s")

    def _raise_pids_limit(self) -> None:
        # the Docker API updates PidsLimit in place; docker-py has no argument for it
        api = self.client.api
        limit = api.inspect_container(self.container.id)["HostConfig"].get("PidsLimit") or 0
        if limit > 0:
            api._raise_for_status(api._post_json(api._url("/containers/{0}/update", self.container.id),
                                                 data={"PidsLimit": limit + 64}))

    # -- files -----------------------------------------------------------------------------------
    def write_file(self, path: str, data: bytes | str, mode: int = 0o644) -> None:
        if isinstance(data, str):
            data = data.encode()
        p = PurePosixPath(path)
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w") as tar:
            info = tarfile.TarInfo(p.name)
            info.size, info.mode, info.mtime = len(data), mode, int(time.time())
            tar.addfile(info, io.BytesIO(data))
        self.exec(["mkdir", "-p", str(p.parent)], check=True)
        if not self.container.put_archive(str(p.parent), buf.getvalue()):
            raise InfraError(f"could not copy {path} into the container")

    def copy_in(self, src: Path, dest_dir: str) -> None:
        """Copy a host file or folder into dest_dir in the container."""
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w") as tar:
            tar.add(str(src), arcname=Path(src).name)
        self.exec(["mkdir", "-p", dest_dir], check=True)
        self.container.put_archive(dest_dir, buf.getvalue())

    def read_file(self, path: str) -> bytes | None:
        try:
            stream, _ = self.container.get_archive(path)
        except docker.errors.NotFound:
            return None
        with tarfile.open(fileobj=io.BytesIO(b"".join(stream))) as tar:
            member = tar.next()
            if member is None or not member.isfile():
                return None
            return tar.extractfile(member).read()

    def copy_out(self, path: str, dest_dir: Path) -> bool:
        """Copy a container file or folder into dest_dir on the host; False when it does not exist."""
        try:
            stream, _ = self.container.get_archive(path)
        except docker.errors.NotFound:
            return False
        dest_dir.mkdir(parents=True, exist_ok=True)
        with tarfile.open(fileobj=io.BytesIO(b"".join(stream))) as tar:
            safe = [m for m in tar.getmembers() if not (m.issym() or m.islnk() or m.isdev())]
            tar.extractall(dest_dir, members=safe, filter="data")
        return True


_FIND_MAIN_PID = r"""
for d in /proc/[0-9]*; do
  p=${d#/proc/}; [ "$p" = "$$" ] && continue
  read -r _ _ _ ppid _ < "$d/stat" 2>/dev/null && [ "$ppid" = 1 ] && { echo "$p"; exit 0; }
done
"""

# One pass, no fork (only shell builtins): exit 0 when nothing but PID 1, the keep-alive process and this
# script is left (a zombie counts until tini reaps it), else 1.
_KILL_PASS = r"""
main=$1; left=0
for d in /proc/[0-9]*; do
  p=${d#/proc/}
  case "$p" in 1|"$main"|"$$") continue ;; esac
  kill -9 "$p" 2>/dev/null && left=1
done
exit $left
"""


def _short(argv: list[str]) -> str:
    text = " ".join(shlex.quote(a) for a in argv)
    return text if len(text) < 200 else text[:200] + "..."
