"""Per-instance accounting on disk: DIR/usage/<instance_id>.jsonl, one JSON line per model request
(a gateway with several worker processes: worker k > 0 writes DIR/usage/<instance_id>@w<k>.jsonl, so no
two processes ever append to one file; readers take them all).

Every line is appended, flushed and fsynced before the request it counts is answered (or, when
streamed, before the gateway lets go of it), so a crash of the gateway or of the run loses nothing
already counted. The writes are group-committed (Ledger): every record committed while a group is
being synced goes into the next group, and each touched file is synced once per group. The event loop
never waits on an fsync, and a thousand requests a second cost tens of fsyncs, not a thousand. A line holds no secret: no key, no token, no prompt; every string in it is bounded.
"""
from __future__ import annotations

import asyncio
import json
import os
from collections import OrderedDict, defaultdict
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timezone
from pathlib import Path

from pytest_clawswe.files import ends_with_newline, safe_name
from pytest_clawswe.gateway import fastjson
from pytest_clawswe.usage import Usage

# fdatasync: the appended bytes and the new file size, without the timestamps fsync also writes
_sync = getattr(os, "fdatasync", os.fsync)
USAGE_FIELDS = ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens")
MAX_FIELD_CHARS = 200  # any string a request chose (its model name...) is cut to this in a record


def usage_path(state_dir: str | Path, instance_id: str, worker: int = 0) -> Path:
    # "@" never occurs in a safe name: one instance's worker files cannot be another instance's file
    suffix = f"@w{worker}" if worker else ""
    return Path(state_dir) / "usage" / f"{safe_name(instance_id)}{suffix}.jsonl"


def usage_paths(state_dir: str | Path, instance_id: str) -> list[Path]:
    """Every file holding records of the instance: worker 0's, then the other workers'."""
    first = usage_path(state_dir, instance_id)
    return [first, *sorted(first.parent.glob(f"{safe_name(instance_id)}@w*.jsonl"))]


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
    own 502: provider unreachable, no key), that failed inside the gateway, or that the provider failed
    (a `failure` kind: 401/402/429..., an error event; counted apart, see failed_requests) is no agent turn."""
    return int(record.get("status") or 0) < 500 and not record.get("failure")


def failed_requests(records) -> dict[str, int]:
    """Requests the provider failed (or the ceiling refused), by kind: counted apart from the turns."""
    counts: dict[str, int] = {}
    for r in records:
        if r.get("failure"):
            counts[r["failure"]] = counts.get(r["failure"], 0) + 1
    return dict(sorted(counts.items()))


def provider_cost(records) -> float | None:
    """The sum of what the provider itself said the requests cost (OpenRouter), None when it said nothing."""
    costs = [float(r["provider_cost_usd"]) for r in records if isinstance(r.get("provider_cost_usd"), (int, float))]
    return sum(costs) if costs else None


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
    """Group commit on the event loop. `commit(record)` gives a future, done once the record is on disk.

    Records committed while a group's fsyncs are under way wait on the loop and go together into the next
    group: one write() per file (on the loop: it only copies into the page cache), then the fdatasyncs in
    SYNC_THREADS threads, side by side (the filesystem's journal commits them together: 30 files take ~2 ms
    instead of ~60 ms one after another; 8 threads syncing a share each beat one thread per file, and cost
    8 hand-offs per group, not one per file). Only the syncs leave the loop: no thread takes the interpreter lock per record
    (a writer thread fed one record at a time cost more CPU than the write itself). Files stay open."""

    MAX_OPEN = 512
    SYNC_THREADS = 8

    def __init__(self, state_dir: str | Path, worker: int = 0) -> None:
        self.state_dir = Path(state_dir)
        self.worker = worker
        self._pending: list[tuple[dict, asyncio.Future]] = []
        self._busy = False  # a group is being written or synced
        self._fds: OrderedDict[Path, int] = OrderedDict()
        self._syncers = ThreadPoolExecutor(self.SYNC_THREADS, thread_name_prefix="clawswe-fsync")

    def _fd(self, path: Path) -> int:
        fd = self._fds.pop(path, None)
        if fd is None:
            path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o644)
            if os.fstat(fd).st_size and not ends_with_newline(path):  # a process killed mid-line wrote here
                os.write(fd, b"\n")
            while len(self._fds) >= self.MAX_OPEN:  # no sync is under way when a group starts
                os.close(self._fds.popitem(last=False)[1])
        self._fds[path] = fd
        return fd

    def _write(self, records: list[dict]) -> list[int]:
        """Append the records (one write per file); the descriptors to sync."""
        by_path: dict[Path, list[bytes]] = defaultdict(list)
        for record in records:
            by_path[usage_path(self.state_dir, record["instance_id"], self.worker)].append(fastjson.dumps(record))
        fds = []
        for path, lines in by_path.items():
            fd = self._fd(path)
            data = b"\n".join(lines) + b"\n"
            while data:  # a regular file takes it all at once; a short write is carried on, never dropped
                data = data[os.write(fd, data):]
            fds.append(fd)
        return fds

    def commit(self, record: dict) -> asyncio.Future:
        """Queue the record now (on the running loop); the future is done once it is on disk."""
        loop = asyncio.get_running_loop()
        future = loop.create_future()
        self._pending.append((record, future))
        if not self._busy:
            self._busy = True
            loop.call_soon(self._start_group, loop)  # the records of this loop iteration join the group
        return future

    def _start_group(self, loop) -> None:
        group, self._pending = self._pending, []
        try:
            fds = self._write([record for record, _ in group])
        except BaseException as exc:  # the waiters learn it; the next group tries again
            self._finish(loop, group, exc)
            return
        shares = [fds[i::self.SYNC_THREADS] for i in range(min(len(fds), self.SYNC_THREADS))]
        syncs = [loop.run_in_executor(self._syncers, _sync_all, share) for share in shares]
        gathered = asyncio.gather(*syncs)
        gathered.add_done_callback(lambda done: self._finish(
            loop, group, asyncio.CancelledError() if done.cancelled() else done.exception()))

    def _finish(self, loop, group, exc: BaseException | None) -> None:
        for _, future in group:
            _settle(future, exc)
        if self._pending:
            loop.call_soon(self._start_group, loop)
        else:
            self._busy = False

    def close(self) -> None:
        """Write and sync what is still pending (blocking: the gateway is stopping), then close the files."""
        group, self._pending = self._pending, []
        error: BaseException | None = None
        try:
            for fd in self._write([record for record, _ in group]):
                _sync(fd)
        except BaseException as exc:
            error = exc
        for _, future in group:
            _settle(future, error)
        self._syncers.shutdown(wait=True)  # a group's syncs under way finish first
        for fd in self._fds.values():
            os.close(fd)
        self._fds.clear()


def _sync_all(fds: list[int]) -> None:
    for fd in fds:
        _sync(fd)


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
    return read_lines(usage_paths(state_dir, instance_id), attempt)


def read_lines(paths: list[Path], attempt: int | None = None) -> list[dict]:
    """The JSON lines of one instance's files (one per gateway worker: the ledger's, the recorder's), all
    attempts or one, in time order; a torn line (a process killed mid-write) is skipped."""
    records, files = [], 0
    for path in paths:
        if not path.is_file():
            continue
        files += 1
        with open(path, encoding="utf-8") as fh:
            for line in fh:
                try:
                    record = json.loads(line)
                except ValueError:
                    continue
                if isinstance(record, dict) and (attempt is None or record.get("attempt") == attempt):
                    records.append(record)
    if files > 1:  # stable: one file's order stays within a millisecond
        records.sort(key=lambda r: str(r.get("ts") or ""))
    return records
