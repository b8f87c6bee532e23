"""Claw-SWE-Bench graded again (`clawswe regrade RUN`, run/regrade/): the SWE-bench evaluation of RUN's patches.

An instance of RUN is evaluated again when it kept its patch (`patch.diff`: every graded instance, and one whose
evaluation ended in an error) and did not end in a provider failure (an error that is not graded unless the run was
made with --grade-provider-failures). Its folder is copied into the new run, and the kept patch is graded exactly as
a run grades it (scoring.score: swebench's run_instance in a fresh container from the instance image), e.g. after a
swebench upgrade; the new run's `eval/`, metadata.json (resolved, outcome), predictions.jsonl, results.csv and
summary.json are a run's. What the agent did and cost is RUN's, carried into the new metadata.json.
"""
from __future__ import annotations

import json
import time
from importlib.metadata import version
from pathlib import Path

import pytest

from pytest_clawswe.labels import LABEL_INSTANCE
from pytest_clawswe.run import regrade
from pytest_clawswe.run.item.result import ERROR
from pytest_clawswe.swe.dataset import Instance, language_marker, load_row
from pytest_clawswe.swe.instance.runner import InstanceRunner
from pytest_clawswe.swe.results.run_dir import METADATA, InstanceResult, instance_dir

ANEW = {METADATA, "eval", ".swebench"}  # what the evaluation writes anew in the instance's folder
# what the agent did and cost, carried from RUN's metadata.json into the new one
AGENT_FIELDS = ("usage", "cost_usd", "finish_reason", "harness_usage", "attempts", "patch_lines", "failed_requests",
                "provider_cost_usd")


def swebench_version() -> str:
    return version("swebench")


def regradable(folder: Path, result: dict) -> bool:
    """Whether RUN's instance can be evaluated again: graded there, or an error that came after its patch was kept
    and was not the provider's (not graded unless the run said so)."""
    if result.get("outcome") != ERROR:
        return True
    return (folder / "patch.diff").is_file() and result.get("finish_reason") != "provider_error"


def kept_instances(config: pytest.Config, src: regrade.Source, instances: list[Instance], dataset: str,
                   collector: str) -> tuple[list[Instance], list[str]]:
    """RUN's instances to evaluate again (from `instances`, the dataset's), and those left out (they ended before
    their patch was kept); pytest.UsageError (one sentence) when one is not in the dataset or lost its patch."""
    by_id = {i.instance_id: i for i in instances}
    found, left_out, unknown = [], [], []
    for folder in sorted(p for p in (src.path / "instances").glob("*") if p.is_dir() and not p.name.startswith(".")):
        try:
            result = json.loads((folder / METADATA).read_text())
        except (OSError, ValueError):
            continue  # it never ended
        iid = str(result.get("instance_id") or folder.name)
        if not regradable(folder, result):
            left_out.append(iid)
            continue
        instance = by_id.get(iid)
        if instance is None:
            unknown.append(iid)
            continue
        names = {iid, collector, instance.language, instance.repo, instance.repo_name}
        if regrade.selected(config, names, ["clawswe", language_marker(instance.language)]) \
                and not (folder / "patch.diff").is_file():
            raise pytest.UsageError(f"{iid}: {folder / 'patch.diff'} is gone, and the evaluation grades it; restore it "
                                    f"from a copy of {src.path}, or leave the instance out (-k 'not {iid}')")
        found.append(instance)
    if unknown:
        raise pytest.UsageError(f"{len(unknown)} instance(s) of {src.path} are not in dataset {dataset} (e.g. "
                                f"{unknown[0]}); give the dataset the run was made with (--dataset PATH)")
    if not found:
        raise pytest.UsageError(f"--regrade {src.path}: no instance of the run kept a patch to evaluate (every one ended "
                                "before it)")
    return found, left_out


class InstanceRegrader(InstanceRunner):
    """An instance's kept patch evaluated again; no agent, no harness, no model."""

    records_kept = True  # the gateway's record of the agent's calls comes from RUN: the trajectory is rebuilt

    def __init__(self, config, client, src: regrade.Source, progress=print):
        super().__init__(config, None, client, progress)
        self.source = src
        self._before: dict = {}  # the item's metadata.json in RUN

    def join_run_gateway(self, engine: str = "") -> None:
        """A Claw-SWE-Bench regrade calls no model: no gateway."""

    def new_result(self, instance: Instance) -> InstanceResult:
        self._before = {}  # until this item's is read
        return super().new_result(instance)

    def before_commit(self, instance: Instance, result: InstanceResult, carried) -> None:
        super().before_commit(instance, result, carried)
        regrade.keep_total(result, self._before)

    def run_phases(self, instance: Instance, work: Path, result: InstanceResult) -> None:
        cfg, timings, iid = self.config, result.timings, instance.instance_id
        folder = instance_dir(self.source.path, iid)
        before = self._before = json.loads((folder / METADATA).read_text())
        regrade.copy_item(folder, work, ANEW)
        regrade.copy_records(self.source.path, cfg.run_dir, [iid])
        carry(before, result, keep_health=self.health is None)
        result.regrade = {"of": str(self.source.path), **regrade.earlier(before), "resolved": before.get("resolved"),
                          "swebench": swebench_version()}
        row = load_row(instance, self.swe.dataset_revision)
        result.base_commit, result.image = row["base_commit"], row["image"]
        t = time.monotonic()
        self._lease.acquire(row["image"])  # before the image is made ready: no other item removes it meanwhile
        result.images["instance"] = "failed"  # until it is ready
        result.images["instance"] = self._ensure_instance_image(instance, row)
        timings["eval_image"] = round(time.monotonic() - t, 3)

        from pytest_clawswe.swe.grading.scoring import score

        t = time.monotonic()
        graded = score(self.client, row, (work / "patch.diff").read_text(), run_id=cfg.run_id,
                       model_label=cfg.model_label, eval_dir=work / "eval",
                       labels={**self.labels, LABEL_INSTANCE: iid}, timeout=self.swe.eval_timeout_s, mem_limit=cfg.mem_limit)
        timings["score"] = round(time.monotonic() - t, 3)
        result.outcome, result.resolved, result.patch_applied = graded.outcome, graded.resolved, graded.patch_applied
        if self.health is not None:
            from pytest_clawswe.swe.health.marks import check_tests

            check_tests(result, row, graded.report, self.health)
        if graded.message and graded.outcome != "resolved":
            result.error = graded.message


def carry(before: dict, result: InstanceResult, keep_health: bool) -> None:
    """What the agent did and cost, from RUN's metadata.json; its health marks unless the regrade has a --health."""
    earlier = InstanceResult.from_json({"instance_id": result.instance_id, **before})
    for name in AGENT_FIELDS:
        setattr(result, name, getattr(earlier, name))
    result.timings.update({k: v for k, v in earlier.timings.items() if k not in ("score", "total")})
    if keep_health:
        result.health, result.health_reason = earlier.health, earlier.health_reason
