"""The run directory: what one benchmark run leaves on disk, and how to read it back.

Layout (``--run-dir``, default ``reports/<run_id>/``)::

    run.json                      what was run: harness, model, dataset, options, started_at
    instances/<instance_id>/      one folder per instance, written only by the item that ran it
        metadata.json             the InstanceResult below (written last, atomically: its presence
                                  means the instance is final)
        prompt.txt  patch.raw.diff  patch.diff  agent.log  session/  eval/
    predictions.jsonl             rebuilt from the folders; one line per instance
    results.csv                   rebuilt from the folders; one row per instance (CSV_COLUMNS)
    summary.json                  totals over results.csv

Everything downstream (reports, Lite selection, resume) reads runs through this module.
"""
from __future__ import annotations

import csv
import json
from dataclasses import dataclass, field, fields
from pathlib import Path

from pytest_clawswe.files import write_atomic
from pytest_clawswe.run.item.result import ERROR, ItemResult
from pytest_clawswe.usage import Usage

# outcome values: a pass and the two kinds of fail (ERROR, the infrastructure error, is neither: run/item/result.py)
RESOLVED, UNRESOLVED, APPLY_FAILED = "resolved", "unresolved", "apply_failed"


@dataclass
class InstanceResult(ItemResult):
    instance_id: str
    language: str = ""
    repo: str = ""
    image: str = ""
    base_commit: str = ""
    resolved: bool | None = None  # None when the evaluator could not say (outcome ERROR)
    patch_applied: bool | None = None
    patch_lines: int = 0  # +/- lines of the cleaned patch
    usage: Usage = field(default_factory=Usage)  # from the gateway: authoritative
    attempts: int = 1
    docker_host: str = ""  # the engine that ran it: a --docker-host URL, or "default"
    images: dict = field(default_factory=dict)  # how its images were found or made (runner, engine/images/cache.py)
    # the run's --health file on this instance (swe/health/marks.py): its verdict ("" without a file or when the
    # file does not name it), why, and the PASS_TO_PASS tests failing here by what the file says of them
    health: str = ""
    health_reason: str = ""
    p2p_vs_base: dict = field(default_factory=dict)

    def fail(self, error: str) -> None:
        """An error is never a verdict: the evaluator's, if any, is dropped, and `error` replaces earlier text."""
        self.outcome, self.resolved, self.error = ERROR, None, error

    @property
    def duration_s(self) -> float:
        return float(self.timings.get("total", 0.0))

    @classmethod
    def from_json(cls, data: dict) -> "InstanceResult":
        known = {f.name for f in fields(cls)}
        data = {k: v for k, v in data.items() if k in known}
        data["usage"] = Usage(**data.get("usage") or {})
        return cls(**data)

    def csv_row(self) -> dict:
        u = self.usage
        return {
            "instance_id": self.instance_id,
            "language": self.language,
            "repo": self.repo,
            "harness": self.harness,
            "model": self.model,
            "outcome": self.outcome,
            "resolved": "" if self.resolved is None else int(self.resolved),
            "patch_applied": "" if self.patch_applied is None else int(self.patch_applied),
            "finish_reason": self.finish_reason,
            "duration_s": round(self.duration_s, 3),
            "agent_s": round(float(self.timings.get("agent", 0.0)), 3),
            "turns": u.requests,
            "input_tokens": u.input_tokens,
            "output_tokens": u.output_tokens,
            "cache_read_tokens": u.cache_read_tokens,
            "cache_write_tokens": u.cache_write_tokens,
            "cache_hit_rate": "" if u.cache_hit_rate is None else round(u.cache_hit_rate, 6),
            "cost_usd": "" if self.cost_usd is None else round(self.cost_usd, 6),
            "patch_lines": self.patch_lines,
            "error": self.error,
            "health": self.health,
            # PASS_TO_PASS tests failing here that passed at the base commit in every run of the health check
            "p2p_passed_at_base": len(self.p2p_vs_base.get("passed_at_base", [])) if self.health else "",
            "error_phase": self.error_phase,  # where the error happened (run/item/phases.py); last: added later
        }


CSV_COLUMNS = list(InstanceResult("x").csv_row())
METADATA = "metadata.json"


def instance_dir(run_dir: Path, instance_id: str) -> Path:
    return Path(run_dir) / "instances" / instance_id


def load_results(run_dir: str | Path) -> list[InstanceResult]:
    """Every final instance result of a run, sorted by instance id."""
    results = []
    for meta in sorted(Path(run_dir, "instances").glob(f"*/{METADATA}")):
        if meta.parent.name.startswith("."):  # an item still running, or one cut off mid-write
            continue
        results.append(InstanceResult.from_json(json.loads(meta.read_text())))
    return results


def write_results_csv(path: Path, results: list[InstanceResult]) -> None:
    import io

    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=CSV_COLUMNS)
    writer.writeheader()
    for r in results:
        writer.writerow(r.csv_row())
    write_atomic(path, buf.getvalue())
