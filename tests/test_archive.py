"""Reading the engine's archive of a path (engine/framing/archive.py): framed at both ends, links noted and never followed.

Pure logic: the archives are made here with tarfile, as the engine's stream would carry them (in chunks). The
same reading against a real container (and an engine stream cut on purpose) is in test_workspace.py.
"""
from __future__ import annotations

import io
import tarfile

import pytest

from pytest_clawswe.engine.framing.archive import ArchiveCut, copy_framed, extract
from pytest_clawswe.errors import InfraError


def archive(*members: tuple) -> bytes:
    """A tar of (name, kind, data-or-target) members: kind "dir", "file", "sym", "hard"."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for name, kind, data in members:
            info = tarfile.TarInfo(name)
            if kind == "dir":
                info.type, info.mode = tarfile.DIRTYPE, 0o755
                tar.addfile(info)
            elif kind == "file":
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))
            else:
                info.type = tarfile.SYMTYPE if kind == "sym" else tarfile.LNKTYPE
                info.linkname = data
                tar.addfile(info)
    return buf.getvalue()


WORKSPACE = archive(("tmp_workspace", "dir", None), ("tmp_workspace/results", "dir", None),
                    ("tmp_workspace/results/a.txt", "file", b"answer\n"),
                    ("tmp_workspace/results/b.txt", "hard", "tmp_workspace/results/a.txt"),
                    ("tmp_workspace/results/peek", "sym", "/tmp_workspace/gt/secret.txt"),
                    ("tmp_workspace/z.txt", "file", b"last\n"))


def chunks(data: bytes, size: int = 700):
    return [data[i:i + size] for i in range(0, len(data), size)]


def header_offset(data: bytes, name: str) -> int:
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        return next(m.offset for m in tar.getmembers() if m.name == name)


def test_a_whole_archive_is_extracted_with_its_links_noted_and_never_followed(tmp_path):
    report = extract(chunks(WORKSPACE), "tmp_workspace", tmp_path, 10**6)
    root = tmp_path / "tmp_workspace"
    assert (root / "results" / "a.txt").read_bytes() == b"answer\n" and (root / "z.txt").is_file()
    # the hard link's second name is a copy of the first's bytes (they came in the archive)
    copy = root / "results" / "b.txt"
    assert copy.read_bytes() == b"answer\n" and not copy.is_symlink() and copy.stat().st_nlink == 1
    assert report.hardlinks == [{"path": "tmp_workspace/results/b.txt", "target": "tmp_workspace/results/a.txt",
                                 "restored": True}]
    # the symlink (into gt/: the attack) is not made, and is noted with its target
    assert not (root / "results" / "peek").exists() and not (root / "results" / "peek").is_symlink()
    assert report.symlinks == [{"path": "tmp_workspace/results/peek", "target": "/tmp_workspace/gt/secret.txt"}]


def test_a_stream_without_its_first_member_is_not_taken_for_a_smaller_archive(tmp_path):
    later = WORKSPACE[header_offset(WORKSPACE, "tmp_workspace/results"):]  # starts at a valid later header
    with pytest.raises(ArchiveCut, match="beginning was lost"):
        extract(chunks(later), "tmp_workspace", tmp_path, 10**6)
    with pytest.raises(ArchiveCut):  # or mid-block: garbage where a header should be
        extract(chunks(WORKSPACE[300:]), "tmp_workspace", tmp_path / "b", 10**6)


def test_a_stream_that_ends_early_is_not_taken_for_a_smaller_archive(tmp_path):
    cut = WORKSPACE[:header_offset(WORKSPACE, "tmp_workspace/z.txt")]  # ends cleanly at a member boundary
    with pytest.raises(ArchiveCut, match="end was lost"):
        extract(chunks(cut), "tmp_workspace", tmp_path, 10**6)
    with pytest.raises(ArchiveCut):  # or anything but zeros after the end marker
        extract(chunks(WORKSPACE + b"x" * 10), "tmp_workspace", tmp_path / "b", 10**6)


def test_a_cut_stream_is_read_again_then_an_infrastructure_error(tmp_path):
    answers = [WORKSPACE[512:], WORKSPACE]

    def open_stream():
        data = answers.pop(0)
        return chunks(data), lambda: None

    report = copy_framed(open_stream, "/tmp_workspace", tmp_path, 10**6)
    assert report is not None and (tmp_path / "tmp_workspace" / "z.txt").is_file() and not answers

    always_cut = tmp_path / "cut"
    with pytest.raises(InfraError, match="came back cut twice"):
        copy_framed(lambda: (chunks(WORKSPACE[:1024]), lambda: None), "/tmp_workspace", always_cut, 10**6)
    assert not (always_cut / "tmp_workspace").exists()  # what a cut reading left is gone
    assert copy_framed(lambda: None, "/nowhere", tmp_path, 10) is None


def test_files_past_the_cap_are_left_out_and_listed(tmp_path):
    data = archive(("out", "dir", None), ("out/a", "file", b"a" * 600), ("out/b", "file", b"b" * 600),
                   ("out/c", "file", b"c" * 100))
    report = extract(chunks(data), "out", tmp_path, 1000)
    assert report.left_out == ["out/b"] and (tmp_path / "out" / "c").is_file() and report.bytes == 700


def test_one_chunk_reader_serves_a_capped_read_a_tail_check_and_a_plain_stream():
    """engine/framing/chunks.py, the one reader of the engine's chunks: the Docker workspace's read_file (a cap),
    the copy out's end check (a kept tail) and the services' audit (neither)."""
    from pytest_clawswe.engine.framing.chunks import ChunkReader, TooBig

    data = archive(("a.txt", "file", b"x" * 3000))
    chunks = [data[i:i + 700] for i in range(0, len(data), 700)]
    with tarfile.open(fileobj=ChunkReader(iter(chunks)), mode="r|") as tar:
        member = tar.next()
        assert tar.extractfile(member).read() == b"x" * 3000
    with pytest.raises(TooBig), tarfile.open(fileobj=ChunkReader(iter(chunks), limit=2000), mode="r|") as tar:
        tar.extractfile(tar.next()).read()
    tail = ChunkReader(iter([b"", *chunks]), keep_tail=1024)
    tail.drain()
    assert tail.total == len(data)
    assert tail.bytes_from(len(data) - 1024) == data[-1024:]
    assert tail.bytes_from(0) is None  # no longer kept
