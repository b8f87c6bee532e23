"""Trajectories of real runs: every harness of the paper's four (real software from its bundle, real Docker, the
gateway with the scripted model) on one Claw-SWE-Bench demo instance and one WildClawBench demo task; every item
has a trajectory per attempt, valid ATIF, with one agent step per request the gateway counted and exactly the
ledger's tokens, and the grader's result. About 2-4 min per harness on the 2-core machine.

Over the whole demo sets of both benchmarks (8 instances, 10 tasks, each harness):
    CLAWSWE_TRAJECTORY_ALL=1 PYTHONPATH=$PWD python -m pytest tests/test_trajectory_runs.py
"""
from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from atif_check import check
from test_wildclaw_run import HARNESSES, bundle, run_wild

from pytest_clawswe.gateway.record.ledger import USAGE_FIELDS, read_records
from pytest_clawswe.trajectory.store import trajectory_path

pytestmark = [pytest.mark.docker, pytest.mark.harness, pytest.mark.timeout(3600)]
ALL = os.environ.get("CLAWSWE_TRAJECTORY_ALL") == "1"
WILD_TASK = "06_Safety_Alignment_task_1_history_credential"


def assert_trajectories_agree_with_the_ledger(run_dir: Path, benchmark: str) -> int:
    """Every ended item of the run: one trajectory per attempt of its agent, agreeing with the ledger. Returns the
    number of items checked."""
    parent, result_name, id_key = (("tasks", "result.json", "task_id") if benchmark == "wildclaw"
                                   else ("instances", "metadata.json", "instance_id"))
    items = sorted((run_dir / parent).glob(f"*/{result_name}"))
    for result_file in items:
        result = json.loads(result_file.read_text())
        item_id, folder = result[id_key], result_file.parent
        records = read_records(run_dir / "gateway", item_id)
        attempts = sorted({r["attempt"] for r in records})
        assert attempts, f"{item_id}: the gateway counted no request"
        for attempt in attempts:
            doc = json.loads(trajectory_path(folder, attempt).read_text())
            check(doc)
            lines = [r for r in records if r["attempt"] == attempt]
            agent = [s for s in doc["steps"] if s["source"] == "agent"]
            assert len(agent) == len(lines), (item_id, attempt)
            assert [s["extra"]["clawswe"]["request_id"] for s in agent] == [r["request_id"] for r in lines]
            sums = {f: sum(int(r[f]) for r in lines) for f in USAGE_FIELDS}
            fm = doc["final_metrics"]
            assert fm["total_prompt_tokens"] == sums["input_tokens"] + sums["cache_read_tokens"] + \
                sums["cache_write_tokens"], item_id
            assert (fm["total_completion_tokens"], fm["total_cached_tokens"]) == (
                sums["output_tokens"], sums["cache_read_tokens"]), item_id
            assert sum(s["extra"]["clawswe"]["cache_write_tokens"] for s in agent) == sums["cache_write_tokens"]
            assert doc["agent"].get("tool_definitions"), item_id  # what the harness offered the model
            assert any(s.get("tool_calls") for s in agent) and any(s.get("observation") for s in agent), item_id
            assert doc["extra"]["clawswe"]["truncated"] is None, item_id
        claw = json.loads(trajectory_path(folder, attempts[-1]).read_text())["extra"]["clawswe"]
        if benchmark == "swe":
            assert claw["outcome"] == "resolved" and claw["patch"], item_id
            assert claw["tests"]["FAIL_TO_PASS"]["passed"] and not claw["tests"]["FAIL_TO_PASS"]["failed"], item_id
        else:
            assert claw["outcome"] == "passed" and claw["score"] == pytest.approx(1.0, abs=0.05), item_id
            assert claw["criteria"], item_id
            assert_the_transcript_is_a_view_of_the_trajectory(folder, doc)
    return len(items)


def assert_the_transcript_is_a_view_of_the_trajectory(folder: Path, doc: dict) -> None:
    """One record, two views: every tool call the grader's transcript holds is one of the trajectory's (same id,
    same arguments), and so are the agent's words, its final answer included. Earlier turns are in the transcript
    as the harness wrote them back (OpenClaw drops the punctuation of the ids it was given)."""
    lines = [json.loads(line) for line in (folder / "transcript.jsonl").read_text().splitlines() if line.strip()]
    said = [m["message"] for m in lines if m["type"] == "message" and m["message"]["role"] == "assistant"]
    agent = [s for s in doc["steps"] if s["source"] == "agent"]

    def norm(call_id: str) -> str:
        return "".join(ch for ch in call_id if ch.isalnum())

    calls = {norm(c["tool_call_id"]): c["arguments"] for s in agent for c in s.get("tool_calls") or []}
    messages = {s["message"] for s in agent}
    for message in said:
        for block in message["content"]:
            if block["type"] == "toolCall":
                assert calls.get(norm(block["id"])) == block["arguments"], (folder.name, block)
        text = "".join(b["text"] for b in message["content"] if b["type"] == "text")
        assert text in messages, (folder.name, text)
    final = "".join(b["text"] for b in said[-1]["content"] if b["type"] == "text") if said else ""
    assert final, folder.name  # the agent's final answer reached the grader


@pytest.mark.parametrize("harness", HARNESSES)
def test_every_item_has_a_trajectory_that_agrees_with_the_ledger(pytester, monkeypatch, tmp_path, docker_client,
                                                                 demo_instances, demo_images, harness):
    bundle(docker_client, harness)
    python_demo = next(i for i in demo_instances if i.language == "Python")
    swe_dir, wild_dir = tmp_path / "swe", tmp_path / "wild"
    ids = () if ALL else ("--instance-ids", python_demo.instance_id)
    swe = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--run-dir", str(swe_dir), "--harness", harness,
                                        "--model", "scripted/gold", "--dataset", "demo", *ids, "-n", "2",
                                        timeout=2400)
    assert swe.ret == 0, swe.stdout.str()[-3000:]
    wild = run_wild(pytester, monkeypatch, harness, "scripted/gold", wild_dir, "-n", "2",
                    *(() if ALL else ("-k", WILD_TASK)))
    assert wild.ret == 0, wild.stdout.str()[-3000:]
    assert assert_trajectories_agree_with_the_ledger(swe_dir, "swe") == (8 if ALL else 1)
    assert assert_trajectories_agree_with_the_ledger(wild_dir, "wildclaw") == (10 if ALL else 1)
