"""Where trajectories go and what they say of the item's outcome: <item folder>/trajectory/attempt-<n>.atif.json,
one per attempt the gateway saw for the item (a retried or failed attempt keeps its own), written when the item
ends and again by `clawswe export atif`.

The outcome (patch, the grader's result) is the item's, as its benchmark reads it (Benchmark.trajectory_outcome):
the last attempt gets it; an earlier attempt ended in an
error that the next one retried, so its outcome is "error" and it has no grade."""
from __future__ import annotations

import json
import logging
import time
from pathlib import Path

from pytest_clawswe.gateway.record.calls import read_calls
from pytest_clawswe.gateway.record.ledger import read_records
from pytest_clawswe.trajectory import atif

log = logging.getLogger("clawswe.trajectory")

FOLDER = "trajectory"
SETTLE_S = 5.0  # how long to wait for the recorder's thread to write the last calls of an attempt


def trajectory_path(item_folder: Path, attempt: int) -> Path:
    return Path(item_folder) / FOLDER / f"attempt-{attempt}.atif.json"


def no_outcome(result: dict) -> dict:
    """What a benchmark without an outcome of its own says of an item: how it ended, nothing graded."""
    return {"outcome": str(result.get("outcome") or "error"), "patch": None, "tests": None, "criteria": None,
            "score": None}


def settled_calls(state_dir: Path, item_id: str, timeout: float = SETTLE_S) -> tuple[list[dict], list[dict]]:
    """(calls, ledger lines) of the item once every ledger line has its recorded call (the recorder writes a
    moment after the ledger), or what there is after `timeout`."""
    deadline = time.monotonic() + timeout
    while True:
        records = read_records(state_dir, item_id)
        calls = read_calls(state_dir, item_id)
        have = {c.get("request_id") for c in calls}
        missing = [r for r in records if r.get("request_id") and r["request_id"] not in have]
        if not missing or time.monotonic() >= deadline:
            return calls, records
        time.sleep(0.05)


def _truncated(calls: list[dict], records: list[dict]) -> dict | None:
    cut = [c["cut"] for c in calls if c.get("cut")]
    have = {c.get("request_id") for c in calls}
    unrecorded = sum(1 for r in records if r.get("request_id") not in have)
    if not cut and not unrecorded:
        return None
    return {"calls_cut": len(cut), "request_bytes_cut": sum(int(c.get("request_bytes") or 0) for c in cut),
            "response_bytes_cut": sum(int(c.get("response_bytes") or 0) for c in cut),
            "calls_not_recorded": unrecorded}


def _steps_from(calls: list[dict], records: list[dict]) -> list[dict]:
    """The ledger lines, each with its recorded call where there is one (a line without one, say from an
    interrupted gateway, is still a step: its tokens count)."""
    by_id = {c.get("request_id"): c for c in calls if c.get("request_id")}
    if not records:
        return calls
    out = []
    for record in records:
        call = by_id.get(record.get("request_id"))
        out.append(call if call is not None else record)
    return out


def build_for_item(run_dir: Path, benchmark: str, item_id: str, result: dict, outcome: dict, *, prices=None,
                   timeout: float = SETTLE_S) -> list[tuple[int, dict]]:
    """(attempt, ATIF document) of every attempt the gateway saw for one item, in attempt order; `outcome` is the
    benchmark's word on the item (Benchmark.trajectory_outcome). Nothing is written."""
    from pytest_clawswe.gateway.record.calls import enabled

    state_dir = Path(run_dir) / "gateway"
    calls, records = settled_calls(state_dir, item_id, timeout if enabled() else 0)  # off: nothing to wait for
    attempts = sorted({int(r.get("attempt") or 1) for r in [*records, *calls]})
    version = _harness_version(run_dir)
    docs = []
    for attempt in attempts:
        a_calls = [c for c in calls if c.get("attempt") == attempt]
        a_records = [r for r in records if r.get("attempt") == attempt]
        last = attempt == attempts[-1]
        clawswe = {"benchmark": benchmark, "item_id": item_id, "attempt": attempt,
                   "harness": str(result.get("harness") or ""), "model": str(result.get("model") or ""),
                   **(outcome if last else {"outcome": "error", "patch": None, "tests": None, "criteria": None,
                                            "score": None}),
                   "truncated": _truncated(a_calls, a_records)}
        docs.append((attempt, atif.build(_steps_from(a_calls, a_records), clawswe, harness=clawswe["harness"],
                                         model=clawswe["model"], prices=prices, harness_version=version)))
    return docs


def _harness_version(run_dir: Path) -> str:
    """The harness's version as the run resolved it (run.json's harness settings: a bundled harness's pinned
    version); "" when the run does not say."""
    try:
        info = json.loads((Path(run_dir) / "run.json").read_text())
    except (OSError, ValueError):
        return ""
    settings = info.get("harness_settings") if isinstance(info, dict) else None
    return str(settings.get("version") or "") if isinstance(settings, dict) else ""


def write_for_item(run_dir: Path, benchmark: str, item_id: str, folder: Path, result: dict, outcome: dict, *,
                   prices=None, timeout: float = SETTLE_S) -> list[Path]:
    """Write every attempt's trajectory of one item into `folder` (its run folder, or the partial folder it
    becomes); `outcome` is the benchmark's word on the item (Benchmark.trajectory_outcome). The files written."""
    written = []
    for attempt, doc in build_for_item(run_dir, benchmark, item_id, result, outcome, prices=prices,
                                       timeout=timeout):
        path = trajectory_path(folder, attempt)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(doc, indent=1, ensure_ascii=False) + "\n")
        tmp.replace(path)
        written.append(path)
    return written


def write_quietly(*args, **kwargs) -> list[Path]:
    """write_for_item for the runners: a trajectory that cannot be written is a warning, never the item's end."""
    try:
        return write_for_item(*args, **kwargs)
    except Exception as exc:  # noqa: BLE001 - the item's result matters more than its trajectory
        log.warning("could not write the trajectory of %s: %s", args[2] if len(args) > 2 else "?", exc)
        return []
