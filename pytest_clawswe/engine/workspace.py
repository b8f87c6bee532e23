"""The workspace interface: what the runner and the harness adapters may do with an item's sandbox.

One item runs in one workspace. The Docker implementation is workspace.Workspace; another engine (a remote
Docker host, a Kubernetes pod: see docs/scale-out.md) implements this class and nothing above it changes.
Every read of what the agent produced is bounded here, in the interface, so no engine can forget it: an
agent that prints or writes without end costs the host at most the cap, never its memory.
"""
from __future__ import annotations

import abc
import io
import tarfile
import time
from dataclasses import dataclass, field
from pathlib import Path

MAX_EXEC_OUTPUT = 8 * 2**20  # bytes of a command's output kept (its tail)
MAX_READ_BYTES = 64 * 2**20  # bytes of one file read back from a workspace (its tail)
MAX_COPY_BYTES = 512 * 2**20  # bytes of files copied out of (or into) a workspace in one call


@dataclass
class CopyReport:
    """What one copy out brought, and what it left out (every engine's copy_out answers with one). Truthy: the
    path existed."""

    left_out: list[str] = field(default_factory=list)  # member names past the size cap
    symlinks: list[dict] = field(default_factory=list)  # {"path", "target"}: left out, never created here
    hardlinks: list[dict] = field(default_factory=list)  # {"path", "target", "restored"}: a copy of the target
    special: list[dict] = field(default_factory=list)  # {"path", "type"}: devices, fifos: left out
    bytes: int = 0

    def links(self) -> dict:
        return {"symlinks": self.symlinks, "hardlinks": self.hardlinks, "special": self.special}


class OutputTail:
    """The last `cap` bytes of a stream, in bounded memory (every engine's exec keeps its output so)."""

    def __init__(self, cap: int):
        self.cap, self.buf, self.truncated = cap, bytearray(), False

    def add(self, data: bytes | None) -> None:
        if data:
            self.buf += data
            if len(self.buf) > 2 * self.cap:  # trim in batches, not on every chunk
                del self.buf[:-self.cap]
                self.truncated = True

    def value(self) -> bytes:
        if len(self.buf) > self.cap:
            del self.buf[:-self.cap]
            self.truncated = True
        return bytes(self.buf)


def tar_for_copy_in(src: Path, max_bytes: int = MAX_COPY_BYTES) -> bytes:
    """A host file or folder as the tar archive every engine's copy_in puts into the sandbox; refused (one
    sentence, not retried) when its files hold more than max_bytes."""
    from pytest_clawswe.errors import InfraError

    src = Path(src)
    files = [src] if src.is_file() else [p for p in src.rglob("*") if p.is_file() and not p.is_symlink()]
    size = sum(p.stat().st_size for p in files)
    if size > max_bytes:
        raise InfraError(f"{src} holds {size} bytes, more than the {max_bytes} a copy into a workspace "
                         "may carry", retryable=False)
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        tar.add(str(src), arcname=src.name)
    return buf.getvalue()


def tar_of_file(name: str, data: bytes, mode: int = 0o644) -> bytes:
    """One file, `name` holding `data`, as the tar archive every engine's write_file puts into the sandbox."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        info = tarfile.TarInfo(name)
        info.size, info.mode, info.mtime = len(data), mode, int(time.time())
        tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


@dataclass
class ExecResult:
    exit_code: int | None  # None: killed at the deadline
    stdout: str
    seconds: float
    stderr: str = ""
    truncated: bool = False  # more output than the cap: only its tail is kept

    @property
    def output(self) -> str:
        return self.stdout + self.stderr

    @property
    def timed_out(self) -> bool:
        return self.exit_code is None


class BaseWorkspace(abc.ABC):
    """A sandbox for one item with /testbed in it. Use as a context manager: removed on every path.

    Engine failures raise InfraError (the item errors, never fails); what the agent does never does."""

    @abc.abstractmethod
    def start(self) -> "BaseWorkspace":
        """Create and start the sandbox; idle until commands are run in it."""

    def running(self) -> bool:
        """Whether the sandbox still runs (an agent may stop its own, e.g. by killing its keep-alive process)."""
        return True

    @abc.abstractmethod
    def remove(self) -> None:
        """Remove the sandbox and everything in it; never raises (a sweep finds what a failure leaves)."""

    @abc.abstractmethod
    def exec(self, cmd: str | list[str], *, workdir: str = "/", env: dict | None = None, user: str = "root",
             check: bool = False, timeout: float | None = None,
             max_output: int = MAX_EXEC_OUTPUT) -> ExecResult:
        """Run a command (a string goes to bash -c). With a timeout, every process in the sandbox is killed
        at the deadline. At most `max_output` bytes of output are kept (the tail). `check`: a non-zero exit
        raises InfraError."""

    @abc.abstractmethod
    def kill_all(self) -> None:
        """Kill every process in the sandbox but its keep-alive: nothing the agent started survives."""

    @abc.abstractmethod
    def write_file(self, path: str, data: bytes | str, mode: int = 0o644) -> None:
        """Create or replace one file (parents are created)."""

    @abc.abstractmethod
    def copy_in(self, src: Path, dest_dir: str, max_bytes: int = MAX_COPY_BYTES) -> None:
        """Copy a host file or folder into dest_dir; more than max_bytes raises InfraError."""

    @abc.abstractmethod
    def read_file(self, path: str, max_bytes: int = MAX_READ_BYTES) -> bytes | None:
        """A file's bytes (at most max_bytes: its tail), or None when it is not a regular file."""

    @abc.abstractmethod
    def copy_out(self, path: str, dest_dir: Path, max_bytes: int = MAX_COPY_BYTES) -> CopyReport | None:
        """Copy a file or folder into dest_dir on the host: no symlink or device is created (each is noted in the
        report, with its target), a hard link to a file copied too becomes a copy of it; files past max_bytes in
        all are left out and listed in dest_dir/COPY_TRUNCATED.txt. None when path does not exist. What the
        engine sends is read framed at both ends (engine/framing/archive.py): cut twice, InfraError."""

    @abc.abstractmethod
    def changes(self) -> list[tuple[str, str]]:
        """What was added, changed or deleted on top of the sandbox's image: (path, "added" | "changed" |
        "deleted"), read from outside (nothing inside the sandbox is run)."""

    @abc.abstractmethod
    def mounts(self) -> list[str]:
        """The paths something is mounted at (not the sandbox's own files)."""

    @abc.abstractmethod
    def put_archive(self, dest_dir: str, data) -> None:
        """Extract a tar archive (bytes or a file object) the runner made into dest_dir, from outside."""

    @abc.abstractmethod
    def disk_used(self) -> int:
        """Bytes the sandbox wrote on top of its image."""

    @abc.abstractmethod
    def address(self, network: str | None) -> str:
        """The sandbox's address on `network` (None: the engine's default), which its gateway token is bound
        to; "" when it has none there (then the token is not bound)."""

    def __enter__(self) -> "BaseWorkspace":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.remove()
