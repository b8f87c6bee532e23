"""Per-instance accounting on disk: DIR/usage/<instance_id>.jsonl, one JSON line per model request.

Each line is appended, flushed and synced before the response is finished, so a crash of the
gateway (or of the whole run) loses nothing already counted. A line holds no secret: no key, no
token, no prompt.
"""
from __future__ import annotations

import json
import os
import re
import threading
from datetime import datetime, timezone
from pathlib import Path

from pytest_clawswe.results import Usage

USAGE_FIELDS = ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens")


def usage_path(state_dir: str | Path, instance_id: str) -> Path:
    safe = re.sub(r"[^A-Za-z0-9._-]", "_", instance_id) or "_"
    return Path(state_dir) / "usage" / f"{safe}.jsonl"


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
    record.update({k: v for k, v in extra.items() if v not in (None, "")})
    return record


_lock = threading.Lock()


def append(state_dir: str | Path, record: dict) -> None:
    path = usage_path(state_dir, record["instance_id"])
    path.parent.mkdir(parents=True, exist_ok=True)
    line = json.dumps(record, separators=(",", ":")) + "\n"
    with _lock, open(path, "a", encoding="utf-8") as fh:
        fh.write(line)
        fh.flush()
        os.fsync(fh.fileno())


def usage_of(records) -> Usage:
    """Totals over records (dicts as written above): one request per record."""
    total = Usage()
    for r in records:
        total += Usage(1, *(int(r.get(f) or 0) for f in USAGE_FIELDS))
    return total


def read_records(state_dir: str | Path, instance_id: str, attempt: int | None = None) -> list[dict]:
    """The records of one instance as written (all attempts, or one). A torn last line is skipped."""
    path = usage_path(state_dir, instance_id)
    if not path.is_file():
        return []
    records = []
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if attempt is None or record.get("attempt") == attempt:
            records.append(record)
    return records
