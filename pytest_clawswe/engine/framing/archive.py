"""Reading a sandbox path's archive as the engine streams it: framed at both ends, links noted, never followed.

The engine answers a copy out with a tar stream. Python's tarfile takes a stream that ends early, or that turns to
garbage after its first member, for a complete archive (it stops quietly), and a stream whose first members were
lost starts at a later, valid header: either way files would vanish without a word and be graded as absent. So
the stream is framed: its first member must be the path asked for (the engine names it by its last part) and it
must end with tar's end-of-archive marker (two zero blocks) and nothing else. A stream cut at either end is read
once more, then it is an InfraError, never a verdict.

Links are never created on this side: a symlink (where it points is the sandbox's business, and a link into a
place the grader fills later, ground truth, would hand it over) and a device are left out, a hard link to a file of
the same archive is restored as a copy of that file (its bytes came in the archive: nothing is followed); each is
noted in the report with its name and target.
"""
from __future__ import annotations

import shutil
import tarfile
from pathlib import Path, PurePosixPath

from pytest_clawswe.engine.framing.chunks import ChunkReader
from pytest_clawswe.engine.framing.reread import Cut, read_whole
from pytest_clawswe.engine.workspace import CopyReport

END_MARKER = 2 * tarfile.BLOCKSIZE  # what Go's archive/tar (the engine's) writes at the end, all zeros
_TAIL = 64 * 1024  # bytes of the stream kept to check its end; a longer trailer is not an archive's end


class ArchiveCut(Cut):
    """The stream lost its beginning or its end (said which)."""


def check_end(tap: ChunkReader, end_offset: int) -> None:
    """The archive's last member ended at `end_offset`: what follows must be the end marker, zeros, and the stream's
    end (the stream read to its end first)."""
    tap.drain()
    trailer = tap.bytes_from(end_offset)
    if trailer is None or len(trailer) < END_MARKER or trailer.strip(b"\0"):
        raise ArchiveCut(f"its end was lost: {tap.total - end_offset} byte(s) after the last member, "
                         f"not tar's {END_MARKER}-byte end marker")


def extract(chunks, name: str, dest_dir: Path, max_bytes: int, *, keep_listing: int = 1000) -> CopyReport:
    """Extract one archive the engine streams for a path whose last part is `name` into dest_dir: regular files and
    folders; links and devices as the module says. Files past max_bytes in all are left out (listed, at most
    `keep_listing`, then the stream is not read further). ArchiveCut when the stream is not framed at both ends."""
    tap = ChunkReader(chunks, keep_tail=_TAIL)  # counts the bytes, keeps the last _TAIL to check the end
    report = CopyReport()
    extracted: set[str] = set()
    stopped_early = False

    def members(tar):  # lazily, in stream order: extractall takes each member as it is read
        nonlocal stopped_early
        for n, member in enumerate(tar):
            if n == 0 and member.name.rstrip("/") != name:
                raise ArchiveCut(f"its beginning was lost: it starts at {member.name!r}, not at {name!r}")
            if member.issym():
                report.symlinks.append({"path": member.name, "target": member.linkname})
                continue
            if member.islnk():
                report.hardlinks.append({"path": member.name, "target": member.linkname,
                                         "restored": member.linkname in extracted})
                continue
            if not (member.isfile() or member.isdir()):
                report.special.append({"path": member.name, "type": _kind(member)})
                continue
            if report.bytes + member.size > max_bytes:
                report.left_out.append(member.name)
                if len(report.left_out) > keep_listing:
                    stopped_early = True
                    return  # stop reading: what is left is not copied anyway
                continue
            report.bytes += member.size
            if member.isfile():
                extracted.add(member.name)
            yield member

    try:
        with tarfile.open(fileobj=tap, mode="r|") as tar:
            # extractall, not extract: it sets a folder's mode only after filling it
            tar.extractall(dest_dir, members=members(tar), filter="data")
            end_offset = tar.offset
    except tarfile.ReadError as exc:
        raise ArchiveCut(f"it is not a whole archive ({exc})") from None
    if not stopped_early:
        check_end(tap, end_offset)
    for link in report.hardlinks:  # the target's bytes came in this archive: a copy, not a link on this side
        if link["restored"]:
            target, copy = _inside(dest_dir, link["target"]), _inside(dest_dir, link["path"])
            if target is None or copy is None or not target.is_file():
                link["restored"] = False
                continue
            copy.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(target, copy)
            report.bytes += target.stat().st_size
    return report


def copy_framed(open_stream, path: str, dest_dir: Path, max_bytes: int) -> CopyReport | None:
    """`open_stream()` gives the engine's (chunks, close) for `path`, None when the path does not exist, or the
    report itself when nothing needs reading (a single file larger than the cap, known from the engine's stat). Read
    framed (extract); a cut stream is read once more, then InfraError. What a failed reading left is removed."""
    name = PurePosixPath(path).name or "."
    target = dest_dir / name
    existed = target.exists()

    def read_once() -> CopyReport | None:
        opened = open_stream()
        if opened is None or isinstance(opened, CopyReport):
            return opened  # missing, or answered without reading (a single file past the cap)
        chunks, close = opened
        dest_dir.mkdir(parents=True, exist_ok=True)
        try:
            return extract(chunks, name, dest_dir, max_bytes)
        except ArchiveCut:
            if not existed:
                shutil.rmtree(target, ignore_errors=True) if target.is_dir() else target.unlink(missing_ok=True)
            raise
        finally:
            close()

    return read_whole(read_once, f"the engine's archive of {path}")


def _kind(member: tarfile.TarInfo) -> str:
    if member.isfifo():
        return "fifo"
    if member.ischr() or member.isblk():
        return "device"
    return "other"


def _inside(root: Path, name: str) -> Path | None:
    """root/name when name stays inside root (an archive's own names only), else None."""
    path = PurePosixPath(name)
    if path.is_absolute() or ".." in path.parts:
        return None
    return root.joinpath(*path.parts)
