"""Per-instance accounting on disk: DIR/usage/<instance_id>.jsonl, one JSON line per model request
(a gateway with several worker processes: worker k > 0 writes DIR/usage/<instance_id>@w<k>.jsonl, so no
two processes ever append to one file; readers take them all).

Every line is appended, flushed and fsynced before the request it counts is answered (or, when
streamed, before the gateway lets go of it), so a crash of the gateway or of the run loses nothing
already counted. The writes are group-committed by one writer thread: every record queued while a
write is under way goes into the next write, and each touched file is synced once per group. The
event loop never waits on the disk, and a thousand requests a second cost tens of fsyncs, not a
thousand. A line holds no secret: no key, no token, no prompt; every string in it is bounded.
"""
from __future__ import annotations

import asyncio
import json
import os
import queue
import re
import threading
from collections import OrderedDict, defaultdict
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timezone
from pathlib import Path

from pytest_clawswe.results import Usage

from . import fastjson

# fdatasync: the appended bytes and the new file size, without the timestamps fsync also writes
_sync = getattr(os, "fdatasync", os.fsync)
USAGE_FIELDS = ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens")
MAX_FIELD_CHARS = 200  # any string a request chose (its model name...) is cut to this in a record


def _safe(instance_id: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]", "_", instance_id) or "_"


def usage_path(state_dir: str | Path, instance_id: str, worker: int = 0) -> Path:
    # "@" never occurs in a safe name: one instance's worker files cannot be another instance's file
    suffix = f"@w{worker}" if worker else ""
    return Path(state_dir) / "usage" / f"{_safe(instance_id)}{suffix}.jsonl"


def usage_paths(state_dir: str | Path, instance_id: str) -> list[Path]:
    """Every file holding records of the instance: worker 0's, then the other workers'."""
    first = usage_path(state_dir, instance_id)
    return [first, *sorted(first.parent.glob(f"{_safe(instance_id)}@w*.jsonl"))]


def bounded(value: str, limit: int = MAX_FIELD_CHARS) -> str:
    """A string the agent controls, cut so that one record stays small whatever it sent."""
    return value if len(value) <= limit else value[:limit] + f"...[{len(value) - limit} more chars]"


def make_record(instance_id: str, attempt: int, protocol: str, stream: bool, model: str, status: int,
                latency_s: float, usage: Usage | None, **extra) -> dict:
    usage = usage or Usage()
    record = {
        "ts": datetime.now(timezone.utc).isoformat(timespec="milliseconds"),
        "instance_id": instance_id,
        "attempt": attempt,
        "protocol": protocol,
        "stream": stream,
        "model": model,
        "status": status,
        "latency_s": round(latency_s, 4),
    }
    record.update({f: getattr(usage, f) for f in USAGE_FIELDS})
    record.update({k: bounded(v) if isinstance(v, str) else v for k, v in extra.items() if v not in (None, "")})
    return record


def is_turn(record: dict) -> bool:
    """A request the model answered (or began to answer). One the gateway could not deliver (its
    own 502: provider unreachable, no key) or that failed inside the gateway is no agent turn."""
    return int(record.get("status") or 0) < 500


def usage_of(records) -> Usage:
    """Totals over records (dicts as written above): one request per model turn."""
    total = Usage()
    for r in records:
        total += Usage(int(is_turn(r)), *(int(r.get(f) or 0) for f in USAGE_FIELDS))
    return total


def _write_group(state_dir: Path, records: list[dict]) -> None:
    by_path: dict[Path, list[str]] = defaultdict(list)
    for record in records:
        by_path[usage_path(state_dir, record["instance_id"])].append(json.dumps(record, separators=(",", ":")))
    for path, lines in by_path.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "a", encoding="utf-8") as fh:
            fh.write("\n".join(lines) + "\n")
            fh.flush()
            os.fsync(fh.fileno())


class Ledger:
    """The writer thread. `commit(record)` (async) returns once the record is on disk.

    A group touches one file per instance; their fsyncs run side by side (the filesystem's journal
    commits them together: 30 files take ~2 ms instead of ~40 ms one after another), and the files
    stay open between groups."""

    MAX_OPEN = 512

    def __init__(self, state_dir: str | Path, worker: int = 0) -> None:
        self.state_dir = Path(state_dir)
        self.worker = worker
        self._queue: queue.SimpleQueue = queue.SimpleQueue()
        self._files: OrderedDict[Path, object] = OrderedDict()
        self._syncers = ThreadPoolExecutor(64, thread_name_prefix="clawswe-fsync")
        self._thread = threading.Thread(target=self._run, name="clawswe-ledger", daemon=True)
        self._thread.start()

    def _file(self, path: Path):
        fh = self._files.pop(path, None)
        if fh is None:
            path.parent.mkdir(parents=True, exist_ok=True)
            fh = open(path, "ab")
            if fh.tell() and not _ends_with_newline(path):  # a process killed mid-line wrote here before
                fh.write(b"\n")
            while len(self._files) >= self.MAX_OPEN:
                self._files.popitem(last=False)[1].close()
        self._files[path] = fh
        return fh

    def _write(self, records: list[dict]) -> None:
        by_path: dict[Path, list[str]] = defaultdict(list)
        for record in records:
            by_path[usage_path(self.state_dir, record["instance_id"], self.worker)].append(fastjson.dumps(record))
        handles = []
        for path, lines in by_path.items():
            fh = self._file(path)
            fh.write(b"\n".join(lines) + b"\n")
            fh.flush()
            handles.append(fh)
        if len(handles) == 1:
            _sync(handles[0].fileno())
        else:
            list(self._syncers.map(lambda fh: _sync(fh.fileno()), handles))

    def append(self, record: dict, done: Callable[[BaseException | None], None]) -> None:
        self._queue.put((record, done))

    async def commit(self, record: dict) -> None:
        loop = asyncio.get_running_loop()
        future = loop.create_future()

        def done(exc: BaseException | None) -> None:
            loop.call_soon_threadsafe(_settle, future, exc)

        self.append(record, done)
        await future

    def write(self, record: dict) -> None:
        """Blocking form (no event loop)."""
        finished = threading.Event()
        errors: list[BaseException] = []
        self.append(record, lambda exc: (errors.append(exc) if exc else None, finished.set()))
        finished.wait()
        if errors:
            raise errors[0]

    def close(self) -> None:
        self._queue.put(None)
        self._thread.join(30)

    def _run(self) -> None:
        while True:
            item = self._queue.get()
            group = [item]
            while True:  # everything queued meanwhile goes into this write
                try:
                    group.append(self._queue.get_nowait())
                except queue.Empty:
                    break
            stop = any(i is None for i in group)
            group = [i for i in group if i is not None]
            error: BaseException | None = None
            try:
                if group:
                    self._write([record for record, _ in group])
            except BaseException as exc:  # the waiters learn it; the writer carries on
                error = exc
            for _, done in group:
                done(error)
            if stop:
                for fh in self._files.values():
                    fh.close()
                self._files.clear()
                self._syncers.shutdown()
                return


def _ends_with_newline(path: Path) -> bool:
    with open(path, "rb") as fh:
        fh.seek(-1, os.SEEK_END)
        return fh.read(1) == b"\n"


def _settle(future: asyncio.Future, exc: BaseException | None) -> None:
    if future.done():
        return
    if exc is None:
        future.set_result(None)
    else:
        future.set_exception(exc)


def append(state_dir: str | Path, record: dict) -> None:
    """One record, written and synced now (for callers without a Ledger)."""
    _write_group(Path(state_dir), [record])


def read_records(state_dir: str | Path, instance_id: str, attempt: int | None = None) -> list[dict]:
    """The records of one instance as written (all attempts, or one), every worker's file, in time order.
    A torn line is skipped."""
    records, files = [], 0
    for path in usage_paths(state_dir, instance_id):
        if not path.is_file():
            continue
        files += 1
        with open(path, encoding="utf-8") as fh:
            for line in fh:
                try:
                    record = json.loads(line)
                except ValueError:
                    continue
                if attempt is None or record.get("attempt") == attempt:
                    records.append(record)
    if files > 1:  # stable: one file's order stays within a millisecond
        records.sort(key=lambda r: str(r.get("ts") or ""))
    return records
