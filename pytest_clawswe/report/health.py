"""Item health: which items of a dataset cannot be trusted, read from a health file, and Pass@1 both ways.

A benchmark's health check writes the file (Claw-SWE-Bench: `clawswe health`, swe/health/cli.py); runs mark
the items it calls unhealthy, and `clawswe compare --exclude-unhealthy FILE` leaves them out of the pairs.
What the core reads of it is benchmark-neutral:

    {"format": 1, "kind": "clawswe-health", "dataset": "...", "repeat": 3,
     "items": {"<item id>": {"verdict": "healthy" | "flaky" | "broken" | "too_slow" | "unknown",
                             "reasons": ["gold resolved 1/3", ...], ...what the check adds}}}

An item the file does not name, or calls "unknown" (no run of the check ended), is not unhealthy: it is
counted with the healthy ones and said so.
"""
from __future__ import annotations

import hashlib
import json
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from pytest_clawswe.errors import UserError

KIND, FORMAT = "clawswe-health", 1
HEALTHY, FLAKY, BROKEN, TOO_SLOW, UNKNOWN = "healthy", "flaky", "broken", "too_slow", "unknown"
VERDICTS = (HEALTHY, FLAKY, BROKEN, TOO_SLOW, UNKNOWN)
UNHEALTHY = (FLAKY, BROKEN, TOO_SLOW)  # in this order of weight: a report lists them so


class HealthFileError(UserError):
    """The health file cannot be read: one sentence saying what to give instead."""


@dataclass(frozen=True)
class Health:
    """A health file as read: each item's verdict and why."""

    path: Path
    dataset: str
    items: dict[str, dict]
    sha256: str
    data: dict = field(repr=False, default_factory=dict)

    def verdict(self, item_id: str) -> str:
        """The item's verdict; "" when the file does not name it."""
        entry = self.items.get(item_id)
        return str(entry["verdict"]) if entry else ""

    def reason(self, item_id: str) -> str:
        entry = self.items.get(item_id) or {}
        return "; ".join(entry.get("reasons") or [])

    def unhealthy(self) -> dict[str, str]:
        """item id -> verdict, for every item the file calls unhealthy."""
        return {i: e["verdict"] for i, e in sorted(self.items.items()) if e["verdict"] in UNHEALTHY}

    def label(self) -> str:
        """What run.json records: the file and its digest (a resume must use the same)."""
        return f"{self.path} (sha256 {self.sha256[:12]})"


def load_health(path: str | Path, option: str = "--health") -> Health:
    """Read and check a health file; HealthFileError (one sentence, naming `option`) when it is not one."""
    path = Path(path)
    hint = "give a file `clawswe health` wrote"
    try:
        raw = path.read_bytes()
    except OSError as exc:
        what = "no such file" if not path.exists() else (exc.strerror or str(exc))
        raise HealthFileError(f"{option} {path}: {what}; {hint}") from None
    try:
        data = json.loads(raw)
    except ValueError as exc:
        raise HealthFileError(f"{option} {path} is not JSON ({exc}); {hint}") from None
    if not isinstance(data, dict) or data.get("kind") != KIND or not isinstance(data.get("items"), dict):
        raise HealthFileError(f"{option} {path} is not a health file (no \"kind\": \"{KIND}\" and items); {hint}")
    if data.get("format") != FORMAT:
        raise HealthFileError(f"{option} {path} has format {data.get('format')!r}, this version reads {FORMAT}; "
                              "write it again with this version's `clawswe health`")
    for item_id, entry in data["items"].items():
        if not isinstance(entry, dict) or entry.get("verdict") not in VERDICTS:
            raise HealthFileError(f"{option} {path}: item {item_id} has no verdict of {', '.join(VERDICTS)}; {hint}")
    return Health(path.resolve(), str(data.get("dataset", "")), data["items"], hashlib.sha256(raw).hexdigest(), data)


def counts(verdicts: dict[str, str]) -> str:
    """"flaky 1, broken 1" for the unhealthy verdicts among `verdicts` (id -> verdict); "" when none."""
    found = Counter(v for v in verdicts.values() if v in UNHEALTHY)
    return ", ".join(f"{v.replace('_', ' ')} {found[v]}" for v in UNHEALTHY if found[v])


@dataclass(frozen=True)
class BothWays:
    """Pass@1 over every item, and over the healthy ones only (the unhealthy left out)."""

    passed: int
    items: int
    passed_healthy: int
    healthy: int
    left_out: dict[str, str]  # item id -> verdict

    @property
    def rate(self) -> float | None:
        return self.passed / self.items if self.items else None

    @property
    def rate_healthy(self) -> float | None:
        return self.passed_healthy / self.healthy if self.healthy else None


def both_ways(passed: dict[str, bool], verdicts: dict[str, str]) -> BothWays:
    """`passed`: item -> whether it passed (every item of the run, errors as not passed); `verdicts`: item ->
    its health verdict (missing: not checked, kept)."""
    left_out = {i: verdicts[i] for i in sorted(passed) if verdicts.get(i) in UNHEALTHY}
    kept = [i for i in passed if i not in left_out]
    return BothWays(sum(passed.values()), len(passed), sum(passed[i] for i in kept), len(kept), left_out)
