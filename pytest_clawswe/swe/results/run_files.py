"""The run-level files, rebuilt from the instance folders: predictions.jsonl, results.csv, summary.json.

Rebuilding (instead of appending) is what makes resume safe: a re-run instance replaces its folder, and
the files never hold a duplicate line or lose one.
"""
from __future__ import annotations

import json
from pathlib import Path

from pytest_clawswe.files import write_atomic
from pytest_clawswe.run.item.result import ERROR
from pytest_clawswe.swe.results.run_dir import InstanceResult, instance_dir, load_results, write_results_csv


def prediction(run_dir: Path, result: InstanceResult) -> dict:
    patch_file = instance_dir(run_dir, result.instance_id) / "patch.diff"
    patch = patch_file.read_text() if patch_file.is_file() else ""
    label = f"{result.harness}/{result.model}" if result.model else result.harness
    return {"instance_id": result.instance_id, "model_name_or_path": label, "model_patch": patch}


def rebuild(run_dir: str | Path) -> list[InstanceResult]:
    run_dir = Path(run_dir)
    results = load_results(run_dir)
    # an infrastructure error has no prediction: it is re-run on resume, not graded as a fail
    lines = [json.dumps(prediction(run_dir, r)) for r in results if r.outcome != ERROR]
    write_atomic(run_dir / "predictions.jsonl", "".join(line + "\n" for line in lines))
    write_results_csv(run_dir / "results.csv", results)
    write_summary(run_dir, results)
    return results


def write_summary(run_dir: Path, results: list[InstanceResult]) -> dict:
    from pytest_clawswe.swe.results.summary import write_summary as write

    return write(run_dir, results)
