"""Files in and out of a pod's sandbox (PodFiles, a part of PodWorkspace), and what the sandbox changed.

In: a tar stream through exec (as `kubectl cp` does), its length given to `head -c` (the v4 channel protocol
cannot close stdin), extracted by the container's own tar. Out: from the stopper container, under
/proc/<the sandbox's keep-alive>/root, with the stopper's own tools (the image's, under a read-only root): an agent
that deleted its shell or tar still has its files read. A copy out is read framed at both ends, as the Docker
archive is (engine/framing/archive.py). What the sandbox changed (`changes`) is the difference between its root and the
stopper's, which is the same image untouched: every entry's type, size, modification time, mode, owner and link
target, listed with find and compared with comm there, so only the differences cross the wire; an entry changed
with all of those kept is not seen (Docker's list reads the overlay's upper layer).
"""
from __future__ import annotations

import io
import itertools
from pathlib import Path, PurePosixPath
from typing import Any

from pytest_clawswe.engine.framing.archive import copy_framed
from pytest_clawswe.engine.kube import pod_exec
from pytest_clawswe.engine.kube.pod_spec import SANDBOX, STOPPER
from pytest_clawswe.engine.workspace import MAX_COPY_BYTES, MAX_READ_BYTES, CopyReport, tar_for_copy_in, tar_of_file
from pytest_clawswe.errors import InfraError

# $1: a folder, $2: bytes of tar on stdin: extracted there (the parents made first)
UNTAR = 'mkdir -p -- "$1" && head -c "$2" | tar -x -f - -C "$1"'

# $1: the sandbox's keep-alive, $2: a path in the sandbox, $3: bytes. "F" then the file's tail, or "N".
_READ = r"""f=/proc/$1/root$2
if [ -f "$f" ] && [ ! -h "$f" ]; then printf F; exec tail -c "$3" -- "$f"; fi
printf N"""

# $1: the sandbox's keep-alive, $2: a path in the sandbox. "F" then a tar of it, or "N" when it does not exist.
_COPY_OUT = r"""r=/proc/$1/root; p=$2
[ -e "$r$p" ] || [ -h "$r$p" ] || { printf N; exit 0; }
printf F; cd "$r$(dirname -- "$p")" && exec tar -c -f - -- "$(basename -- "$p")"
"""

# $1: the sandbox's keep-alive. The entries that differ between the stopper's root (the image) and the sandbox's:
# comm's first column is the image's side, its second (after a tab) the sandbox's. NUL-separated (any name).
_CHANGES = r"""p=$1
list() { cd "$1" && find . -xdev \( -path ./proc -o -path ./sys -o -path ./dev \) -prune -o \
  -printf '%p\t%y %s %T@ %m %U %G %l\0' 2>/dev/null | LC_ALL=C sort -z; }
LC_ALL=C comm -z -3 <(list /) <(list "/proc/$p/root")
"""


class PodFiles:
    """The file side of PodWorkspace (site, name, _sandbox_pid and exec_in are the workspace's)."""

    site: Any
    name: str
    _sandbox_pid: str

    def exec_in(self, container: str, argv: list[str], stdin=None, cap: int = 0, merge: bool = True):
        raise NotImplementedError

    def write_file(self, path: str, data: bytes | str, mode: int = 0o644) -> None:
        if isinstance(data, str):
            data = data.encode()
        p = PurePosixPath(path)
        self.put_archive(str(p.parent), tar_of_file(p.name, data, mode))

    def copy_in(self, src: Path, dest_dir: str, max_bytes: int = MAX_COPY_BYTES) -> None:
        self.put_archive(dest_dir, tar_for_copy_in(src, max_bytes))

    def put_archive(self, dest_dir: str, data, container: str = SANDBOX) -> None:
        """Extract a tar archive (bytes or a file object, streamed) into dest_dir of one of the pod's containers."""
        if isinstance(data, (bytes, bytearray)):
            size, source = len(data), io.BytesIO(data)
        else:
            start = data.tell()
            size = data.seek(0, io.SEEK_END) - start
            data.seek(start)
            source = data
        stream = self.exec_in(container, ["sh", "-c", UNTAR, "sh", dest_dir, str(size)], stdin=source)
        if stream.code != 0:
            raise InfraError(f"could not copy into {dest_dir} in pod {self.name} (exit {stream.code}): "
                             f"{stream.out.value()[-500:].decode(errors='replace')}")

    def read_file(self, path: str, max_bytes: int = MAX_READ_BYTES) -> bytes | None:
        stream = self.exec_in(STOPPER, ["sh", "-c", _READ, "sh", self._sandbox_pid, path, str(max_bytes)],
                              cap=max_bytes + 1, merge=False)
        data = stream.out.value()
        if stream.code != 0 or not data.startswith(b"F"):
            return None
        return data[1:]

    def copy_out(self, path: str, dest_dir: Path, max_bytes: int = MAX_COPY_BYTES) -> CopyReport | None:
        """A file or folder of the sandbox into dest_dir, read framed (engine/framing/archive.py); None when it does not
        exist."""
        site = self.site

        def open_stream():
            stream = pod_exec.open_exec(site.cluster, site.namespace, self.name, STOPPER,
                                        ["sh", "-c", _COPY_OUT, "sh", self._sandbox_pid, path], 65536)
            chunks = pod_exec.stdout_chunks(stream)
            first = next((c for c in chunks if c), b"")
            if first[:1] != b"F":
                stream.ws.close()
                return None
            return itertools.chain([first[1:]], chunks), stream.ws.close

        report = copy_framed(open_stream, path, Path(dest_dir), max_bytes)
        if report is not None and report.left_out:
            (Path(dest_dir) / "COPY_TRUNCATED.txt").write_text(
                f"more than {max_bytes} bytes under {path}: these were left out\n" + "\n".join(report.left_out) + "\n")
        return report

    def changes(self) -> list[tuple[str, str]]:
        stream = self.exec_in(STOPPER, ["bash", "-c", _CHANGES, "bash", self._sandbox_pid], cap=256 * 2**20,
                              merge=False)
        if stream.code != 0 or stream.out.truncated:
            raise InfraError(f"could not read what pod {self.name}'s sandbox changed (exit {stream.code}): "
                             f"{stream.err.value()[-300:].decode(errors='replace')}")
        image: set[str] = set()
        sandbox: set[str] = set()
        for entry in stream.out.value().split(b"\0"):
            if not entry:
                continue
            side = sandbox if entry.startswith(b"\t") else image
            path = entry.lstrip(b"\t").split(b"\t", 1)[0].decode("utf-8", "surrogateescape")
            if path != ".":
                side.add("/" + path.removeprefix("./"))
        return sorted([(p, "changed") for p in image & sandbox] + [(p, "added") for p in sandbox - image]
                      + [(p, "deleted") for p in image - sandbox])

    def mounts(self) -> list[str]:
        stream = self.exec_in(STOPPER, ["cat", f"/proc/{self._sandbox_pid}/mountinfo"], cap=4 * 2**20, merge=False)
        points = []
        for line in stream.out.value().decode("utf-8", "replace").splitlines():
            fields = line.split(" ")
            if len(fields) > 4 and fields[4] != "/":
                points.append(_unescape(fields[4]))
        return sorted(set(points))


def _unescape(field: str) -> str:
    """mountinfo's octal escapes (\\040 for a space)."""
    return bytes(field, "utf-8").decode("unicode_escape").encode("latin-1").decode("utf-8", "replace")
