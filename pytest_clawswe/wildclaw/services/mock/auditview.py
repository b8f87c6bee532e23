"""The audit log (one JSONL file per service) and the view `GET /<service>/audit` gives graders.

The live server and the replay server both build the view from the log with `view()`, so a task
re-graded offline reads exactly what it would have read live. Standard library only.

A line of the log is ASCII-escaped JSON ending in b"\\n", and it is read back by splitting at b"\\n" only:
whatever a call holds (U+2028, U+0085, ...), writer and reader agree on where each record ends. A line
that does not parse (cut by a kill) is reported in the view's `unreadable_lines`; the lines after it are
read as usual.

The audit is bounded per task (every service of the sidecar together): at most `max_calls` calls and
`max_mb` MiB of log. A call that finds either used up is refused (429) and recorded without its body (the
first REFUSALS_KEPT of them as lines, every one in the count of limits.json), so the grader sees that the
agent flooded the services.
"""
from __future__ import annotations

import json
import os
import threading
from pathlib import Path

# Lists every view carries even when empty: the keys released graders read.
EFFECT_KEYS = {
    "gmail": ("sent_messages", "drafts", "triggered_replies"),
    "calendar": ("created_events", "deleted"),
    "contacts": (),
    "slack": ("sent_messages", "drafts", "triggered_replies"),
    "search": ("queries", "refused_queries"),
}
INJECTED_ERRORS = ("429", "500")  # faults that answer instead of the service: the call never happened
# Per task. Real tasks make tens to hundreds of calls of a few KiB; these leave two orders of magnitude.
MAX_CALLS = 10_000
MAX_MB = 64
REFUSALS_KEPT = 1000  # refused calls recorded as lines (~300 bytes each); later ones are only counted
LIMITS_FILE = "limits.json"


def log_path(audit_dir: str | os.PathLike, service: str) -> Path:
    return Path(audit_dir) / f"{service}.jsonl"


def audit_line(record: dict) -> bytes:
    """One record as one line: ASCII JSON, so b"\\n" is its only line break and it ends it."""
    return (json.dumps(record, ensure_ascii=True, sort_keys=True) + "\n").encode("ascii")


class AuditLog:
    """Appends one JSON line per call; a line is written whole before the answer leaves the service."""

    def __init__(self, path: str | os.PathLike):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        self._lock = threading.Lock()
        self.records: list[dict] = []

    def append(self, record: dict) -> int:
        """Write the record; the bytes it took."""
        line = audit_line(record)
        with self._lock:
            os.write(self._fd, line)  # one write(2) on an O_APPEND file: never interleaved
            self.records.append(record)
        return len(line)

    def close(self) -> None:
        os.close(self._fd)


class AuditBudget:
    """The task's audit limits, shared by its services; the refusals are counted in audit_dir/limits.json."""

    def __init__(self, audit_dir: str | os.PathLike, max_calls: int = MAX_CALLS, max_mb: float = MAX_MB):
        self.path = Path(audit_dir) / LIMITS_FILE
        self.max_calls, self.max_bytes = int(max_calls), int(float(max_mb) * 2**20)
        self.calls = self.bytes = self.refused = 0
        self._save()

    def take(self) -> str | None:
        """Room for one more call (counted now), or what is used up: "calls" or "bytes"."""
        if self.calls >= self.max_calls:
            return "calls"
        if self.bytes >= self.max_bytes:
            return "bytes"
        self.calls += 1
        return None

    def wrote(self, n: int) -> None:
        self.bytes += n

    def refuse(self) -> bool:
        """Count a refused call; True while its record is still kept as a line."""
        self.refused += 1
        self._save()
        return self.refused <= REFUSALS_KEPT

    def state(self) -> dict:
        return {"max_calls": self.max_calls, "max_bytes": self.max_bytes, "refused": self.refused}

    def _save(self) -> None:
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text(json.dumps(self.state()))
        os.replace(tmp, self.path)  # a copy taken meanwhile reads the old file or the new, never half


def read_limits(audit_dir: str | os.PathLike) -> dict | None:
    path = Path(audit_dir) / LIMITS_FILE
    try:
        return json.loads(path.read_text()) if path.is_file() else None
    except ValueError:
        return None


def read_audit(path: str | os.PathLike) -> tuple[list[dict], list[dict]]:
    """The records of a log, and the lines that did not parse ({line, bytes, text}); never stops early."""
    path = Path(path)
    records: list[dict] = []
    broken: list[dict] = []
    if not path.exists():
        return records, broken
    with open(path, "rb") as fh:  # binary: a line ends at b"\\n" and nowhere else
        for number, line in enumerate(fh, start=1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
                if not isinstance(record, dict):
                    raise ValueError("not a JSON object")
                records.append(record)
            except ValueError:  # a line cut by a kill, or not ours: said, and the next line is read
                broken.append({"line": number, "bytes": len(line), "text": line[:200].decode("utf-8", "replace")})
    return records, broken


def read_log(path: str | os.PathLike) -> list[dict]:
    """The records of a log (read_audit says which lines did not parse)."""
    return read_audit(path)[0]


def view(service: str, records: list[dict], extra: dict | None = None, *, limits: dict | None = None,
         unreadable: list[dict] | None = None) -> dict:
    """The released audit shape: `calls` (endpoint, request_body, response_body, ...) plus the lists of
    what was sent or created; ours adds the status, time and fault of every call, `injected_faults`,
    `refused_calls` (calls refused once the audit was full), `audit_limit` and `unreadable_lines`."""
    out: dict = {"service": service, "calls": [], "injected_faults": [], "refused_calls": []}
    for key in EFFECT_KEYS.get(service, ()):
        out[key] = []
    for r in records:
        if r.get("refused"):  # never reached the service
            out["refused_calls"].append({k: r.get(k) for k in ("seq", "endpoint", "status", "refused",
                                                               "request_bytes", "time")})
            continue
        if r.get("fault"):
            out["injected_faults"].append({k: r.get(k) for k in ("seq", "endpoint", "fault", "status", "time")})
        if r.get("fault") in INJECTED_ERRORS:
            continue
        out["calls"].append({
            "seq": r.get("seq"), "endpoint": r.get("endpoint"), "request_body": r.get("request"),
            "response_body": r.get("response"), "status": r.get("status"), "timestamp": r.get("time"),
            "fault": r.get("fault"),
        })
        for key, items in (r.get("effects") or {}).items():
            out.setdefault(key, []).extend(items)
    if service == "search":
        out["query_count"] = len(out["queries"])
    if limits is not None:  # the task's, all services together: refused counts every refusal, kept or not
        out["audit_limit"] = {**limits, "full": bool(limits.get("refused"))}
    out["unreadable_lines"] = list(unreadable or [])
    out.update(extra or {})
    return out
