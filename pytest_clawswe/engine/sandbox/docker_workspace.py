"""One container per benchmark item, through the Docker SDK: the Docker implementation of engine/workspace.py.

Every container carries the run's labels, so `clawswe clean` finds what a killed run left behind.
"""
from __future__ import annotations

import shlex
import tarfile
import threading
import time
from pathlib import Path, PurePosixPath

import docker
import docker.errors

from pytest_clawswe.engine.framing.archive import copy_framed
from pytest_clawswe.engine.framing.chunks import ChunkReader, TooBig
from pytest_clawswe.engine.workspace import (
    MAX_COPY_BYTES,
    MAX_EXEC_OUTPUT,
    MAX_READ_BYTES,
    BaseWorkspace,
    CopyReport,
    ExecResult,
    OutputTail,
    tar_for_copy_in,
    tar_of_file,
)
from pytest_clawswe.errors import InfraError
from pytest_clawswe.labels import owner_label


class DiskWatch:
    """Stops every process in a container once its writable layer outgrows `limit` bytes.

    Docker's overlay2 has no per-container quota on most hosts, so the limit is held by polling: an agent
    may overshoot it by what it writes in one interval before it is stopped."""

    def __init__(self, ws: BaseWorkspace, limit: int | None, interval: float = 5.0):
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


# Default capabilities no harness uses. NET_RAW: raw sockets (ARP/ICMP spoofing of the bridge, ping sweeps of
# the run network); MKNOD: device nodes; AUDIT_WRITE: the host's audit log; SETFCAP and SETPCAP: file and
# process capability changes (a root agent planting a capability-carrying binary). What stays (CHOWN,
# DAC_OVERRIDE, FOWNER, FSETID, KILL, SETGID, SETUID, NET_BIND_SERVICE, SYS_CHROOT) is what package managers,
# git, npm, pip and repositories' test suites use (apt drops to its _apt user; a test may bind port 80).
DROPPED_CAPABILITIES = ("NET_RAW", "MKNOD", "AUDIT_WRITE", "SETFCAP", "SETPCAP")


class Workspace(BaseWorkspace):
    """A running container for one item. Use as a context manager: the container is removed on every path."""

    def __init__(self, client: docker.DockerClient, image: str, *, labels: dict[str, str],
                 name: str | None = None, mem_limit: str | None = "8g", pids_limit: int | None = 300,
                 network: str | None = None, volumes_from: list[str] | None = None,
                 environment: dict[str, str] | None = None, extra_hosts: dict[str, str] | None = None,
                 cap_drop: tuple[str, ...] = DROPPED_CAPABILITIES, read_only: dict[str, str] | None = None):
        """`read_only`: host folder -> path in the container, mounted read-only (the engine must run on this
        machine: a benchmark that uses it refuses other engines)."""
        self.client = client
        self.image = image
        self.container = None
        self._create = dict(
            image=image, name=name, labels={**labels, **owner_label()},
            # tini as PID 1: reaps agents' zombies and lets the container stop at once.
            init=True, command=["sleep", "infinity"], entrypoint=[],
            mem_limit=mem_limit, memswap_limit=mem_limit, pids_limit=pids_limit,
            network=network, volumes_from=volumes_from or None,
            environment=environment or {}, extra_hosts=extra_hosts or None, cap_drop=list(cap_drop) or None,
            volumes={str(Path(host).resolve()): {"bind": dest, "mode": "ro"} for host, dest in read_only.items()}
            if read_only else None,
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
        return self  # no exec here: kill_all finds the keep-alive process itself, from outside

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
             user: str = "root", check: bool = False, timeout: float | None = None,
             max_output: int = MAX_EXEC_OUTPUT) -> ExecResult:
        """Run a command; with a timeout, every process in the container is killed at the deadline.

        The default workdir is / rather than the image's: an agent may have deleted /testbed."""
        argv = ["bash", "-c", cmd] if isinstance(cmd, str) else cmd
        if timeout is not None:
            result = self._exec_with_deadline(argv, workdir=workdir, env=env, user=user, timeout=timeout,
                                              max_output=max_output)
        else:
            start = time.monotonic()
            code, out, err, truncated = self._run_capped(argv, max_output, workdir=workdir, env=env, user=user)
            result = ExecResult(code, out.decode("utf-8", "replace"), time.monotonic() - start,
                                err.decode("utf-8", "replace"), truncated)
        if check and result.exit_code != 0:
            raise InfraError(f"command failed in container (exit {result.exit_code}): {_short(argv)}\n"
                             f"{result.output[-2000:]}")
        return result

    def _run_capped(self, argv: list[str], cap: int, **kwargs) -> tuple[int, bytes, bytes, bool]:
        """Run to the end, keeping at most `cap` bytes of stdout and of stderr (the tails): exec_run would
        hold all of an agent's output in memory."""
        api = self.client.api
        try:
            exec_id = api.exec_create(self.container.id, argv, workdir=kwargs.get("workdir"),
                                      environment=kwargs.get("env"), user=kwargs.get("user") or "")["Id"]
            out, err = OutputTail(cap), OutputTail(cap)
            for chunk_out, chunk_err in api.exec_start(exec_id, stream=True, demux=True):
                out.add(chunk_out)
                err.add(chunk_err)
            code = api.exec_inspect(exec_id)["ExitCode"]
        except docker.errors.DockerException as exc:
            raise InfraError(f"exec in container failed: {exc}") from exc
        return code, out.value(), err.value(), out.truncated or err.truncated

    def _exec_with_deadline(self, argv, *, workdir, env, user, timeout, max_output) -> ExecResult:
        # Attached and streamed by a thread into a bounded tail, polled here: the deadline is ours, not the
        # client socket's, and nothing but the command itself runs in the container (an agent may have
        # deleted its shell or filled its disk: no log file inside, no `sh` to read one back).
        api = self.client.api
        start = time.monotonic()
        tail = OutputTail(max_output)
        try:
            exec_id = api.exec_create(self.container.id, argv, workdir=workdir, environment=env, user=user)["Id"]
            stream = api.exec_start(exec_id, stream=True)  # stdout and stderr in order, as 2>&1 would
        except docker.errors.DockerException as exc:
            raise InfraError(f"exec in container failed: {exc}") from exc
        pumped = threading.Thread(target=_pump, args=(stream, tail), name="clawswe-exec-output", daemon=True)
        pumped.start()
        code, delay = None, 0.05
        try:
            while time.monotonic() - start < timeout:
                info = api.exec_inspect(exec_id)
                # an attached start returns before the process runs: not running and no exit code yet
                if not info["Running"] and info["ExitCode"] is not None:
                    code = info["ExitCode"]
                    break
                wait = max(0.0, min(delay, timeout - (time.monotonic() - start)))
                if pumped.is_alive():  # woken when the output ends, mostly the command's end: no poll's delay
                    pumped.join(timeout=wait)
                    if not pumped.is_alive():
                        delay = 0.01  # its exit code follows at once
                        continue
                else:
                    time.sleep(wait)
                delay = min(delay * 1.5, 1.0)
            if code is None:
                self.kill_all()
        except docker.errors.DockerException as exc:
            raise InfraError(f"exec in container failed: {exc}") from exc
        # the stream ends when every holder of the exec's output is gone; a background process the command
        # left may hold it on (until kill_all): what came so far is the output
        pumped.join(timeout=2)
        output = tail.value()
        return ExecResult(code, output.decode("utf-8", "replace"), time.monotonic() - start,
                          truncated=tail.truncated)

    def running(self) -> bool:
        try:
            self.container.reload()
        except docker.errors.NotFound:
            return False
        return self.container.status == "running"

    def address(self, network: str | None) -> str:
        from pytest_clawswe.engine.network.locked import container_address

        return container_address(self.container, network)

    def disk_used(self) -> int:
        """Bytes in the container's writable layer (what it added or changed on top of its image)."""
        # the list endpoint, not inspect: only it takes size=True in the SDK
        found = self.client.api.containers(all=True, size=True, filters={"id": self.container.id})
        if not found:
            raise InfraError(f"container {self.container.short_id} is gone")
        return found[0].get("SizeRw") or 0

    def kill_all(self) -> None:
        """Kill every process in the container but tini and its keep-alive child: no agent process survives.
        From outside the container (container_kill): it works after the agent deleted the container's shell,
        filled its disk or used up its pids limit."""
        from pytest_clawswe.engine.sandbox.container_kill import kill_all

        kill_all(self.client, self.container, self.image, self._create["labels"])

    # -- files -----------------------------------------------------------------------------------
    def write_file(self, path: str, data: bytes | str, mode: int = 0o644) -> None:
        if isinstance(data, str):
            data = data.encode()
        p = PurePosixPath(path)
        self.exec(["mkdir", "-p", str(p.parent)], check=True)
        if not self.container.put_archive(str(p.parent), tar_of_file(p.name, data, mode)):
            raise InfraError(f"could not copy {path} into the container")

    def copy_in(self, src: Path, dest_dir: str, max_bytes: int = MAX_COPY_BYTES) -> None:
        """Copy a host file or folder into dest_dir in the container."""
        archive = tar_for_copy_in(src, max_bytes)
        self.exec(["mkdir", "-p", dest_dir], check=True)
        self.container.put_archive(dest_dir, archive)

    def read_file(self, path: str, max_bytes: int = MAX_READ_BYTES) -> bytes | None:
        try:
            stream, stat = self.container.get_archive(path)
        except docker.errors.NotFound:
            return None
        try:
            if stat.get("size", 0) <= max_bytes:
                # room for the tar headers; a file that grows past the cap meanwhile ends the read
                with tarfile.open(fileobj=ChunkReader(stream, max_bytes + 2**20), mode="r|") as tar:
                    member = tar.next()
                    if member is None or not member.isfile():
                        return None
                    return tar.extractfile(member).read()
        except TooBig:
            pass
        finally:
            stream.close()
        # bigger than the cap: only its tail, read inside the container
        code, data, _, _ = self._run_capped(["tail", "-c", str(max_bytes), "--", path], max_bytes)
        return data if code == 0 else None

    def copy_out(self, path: str, dest_dir: Path, max_bytes: int = MAX_COPY_BYTES) -> CopyReport | None:
        """Copy a container file or folder into dest_dir on the host; None when it does not exist. The engine's
        archive is read framed at both ends (engine/framing/archive.py: a cut stream is read again, then InfraError)."""
        def open_stream():
            try:
                stream, stat = self.container.get_archive(path)
            except docker.errors.NotFound:
                return None
            close = getattr(stream, "close", lambda: None)
            if not (stat or {}).get("mode", 0) & _GO_TYPE_BITS and (stat or {}).get("size", 0) > max_bytes:
                close()  # one regular file past the cap: not streamed through only to be left out
                return CopyReport(left_out=[PurePosixPath(path).name])
            return stream, close

        report = copy_framed(open_stream, path, dest_dir, max_bytes)
        if report is not None and report.left_out:
            (dest_dir / "COPY_TRUNCATED.txt").write_text(
                f"more than {max_bytes} bytes under {path}: these were left out\n" + "\n".join(report.left_out) + "\n")
        return report

    def changes(self) -> list[tuple[str, str]]:
        """Read from the container's overlay layers when the engine keeps them on this machine (engine/sandbox/overlay.py:
        milliseconds; the engine's own diff of a large image takes seconds), else the engine's diff."""
        from pytest_clawswe.engine.sandbox.overlay import local_layers, upper_changes

        try:
            self.container.reload()
            layers = local_layers(self.container.attrs)
            if layers is not None:
                return upper_changes(*layers)
            diff = self.container.diff() or []
        except docker.errors.DockerException as exc:
            raise InfraError(f"could not read the container's changes: {exc}") from exc
        return [(d["Path"], _KINDS.get(d["Kind"], "changed")) for d in diff]

    def mounts(self) -> list[str]:
        self.container.reload()
        return [m["Destination"] for m in self.container.attrs.get("Mounts") or []]

    def put_archive(self, dest_dir: str, data) -> None:
        try:
            done = self.container.put_archive(dest_dir, data)
        except docker.errors.DockerException as exc:
            raise InfraError(f"could not copy into the container at {dest_dir}: {exc}") from exc
        if not done:
            raise InfraError(f"could not copy into the container at {dest_dir}")

    def commit(self, repository: str, tag: str, labels: dict[str, str]) -> None:
        """Save the container as an image (Docker only: how a prepared /testbed is kept between runs)."""
        try:
            self.container.commit(repository=repository, tag=tag, conf={"Labels": labels})
        except docker.errors.DockerException as exc:
            raise InfraError(f"could not save the prepared image {repository}:{tag}: {exc}") from exc


_KINDS = {0: "changed", 1: "added", 2: "deleted"}  # the engine's diff: Kind
# Go's os.FileMode type bits (dir, symlink, device, named pipe, socket, char device, irregular), as the engine's
# archive stat carries them: none set is a regular file
_GO_TYPE_BITS = (1 << 31) | (1 << 27) | (1 << 26) | (1 << 25) | (1 << 24) | (1 << 21) | (1 << 19)


def _pump(stream, tail: OutputTail) -> None:
    try:
        for chunk in stream:
            tail.add(chunk)
    except (docker.errors.DockerException, OSError, ValueError):
        pass  # the container went away: what came so far is kept


def _short(argv: list[str]) -> str:
    text = " ".join(shlex.quote(a) for a in argv)
    return text if len(text) < 200 else text[:200] + "..."
