"""The Node-based harnesses (openclaw, bare, codex, claude-code) run for real: their bundles lent to demo
instance containers, every model call through the run's gateway, the scripted model standing in for an LLM.

Per harness, two demo instances of different language groups (the bullseye-based C one and the Python one)
with scripted/gold (both resolved, through the harness's own tools; bare through the diff in its answer)
and scripted/noop (none resolved). Each run checks the accounting (the gateway's per-instance totals equal
what the scripted model reported, and what the harness itself reported), the finish reason, the session
backup, a patch free of harness files, and that a recognisable dummy key set in the environment appears
nowhere in the run's outputs. One more run cuts openclaw at a small budget and checks that no process of it
survives in the container. (That a patch written before a timeout is still collected and scored is shown
with the runner's HangHarness in test_benchmark_run.py.)
"""
from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest

from pytest_clawswe.harness.adapters.openclaw import OpenClawHarness

sys.path.insert(0, str(Path(__file__).parent))  # loaded by path too (--harness FILE:Class)
from fake_harnesses import ListsProcessesOnBackup  # noqa: E402
from matrix import NODE_NOOP_SLICE  # noqa: E402
from run_containers import left_containers  # noqa: E402

pytestmark = [pytest.mark.docker, pytest.mark.harness]

IDS = ("clawswe__pathnorm-c-15", "clawswe__tinyjson-py-12")  # C/C++ on bullseye, Python on bookworm
REAL_KEY = "sk-or-REAL-KEY-MUST-NOT-LEAK"
KEY_VARS = ("OPENROUTER_API_KEY", "OPENAI_API_KEY", "ANTHROPIC_API_KEY")
TOKENS = ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens")
BUNDLES = {"openclaw": "openclaw", "bare": "openclaw", "codex": "codex", "claude-code": "claude-code"}
TRANSCRIPTS = {  # where each harness's transcript lands in the session backup
    "openclaw": "transcript.jsonl",
    "bare": "transcript.jsonl",
    "codex": "codex/sessions/*/*/*/rollout-*.jsonl",
    "claude-code": "claude-code/config/projects/*/*.jsonl",
}


class ProcessListingOpenClaw(ListsProcessesOnBackup, OpenClawHarness):
    """openclaw, plus a list of the processes left in the container when the session is backed up."""

    name = "openclaw"


@pytest.fixture(scope="module")
def node_demo(demo_instances, demo_images):
    """The two instances, and a check that one of them really is the bullseye-based one."""
    from pytest_clawswe.swe.dataset import load_row

    chosen = {i.instance_id: i for i in demo_instances if i.instance_id in IDS}
    assert sorted(chosen) == sorted(IDS)
    dockerfile = Path(chosen[IDS[0]].task_dir, "Dockerfile").read_text()
    assert "debian:bullseye-slim" in dockerfile
    assert chosen[IDS[0]].language != chosen[IDS[1]].language
    return {iid: load_row(inst) for iid, inst in chosen.items()}


@pytest.fixture(scope="module")
def bundle_images(docker_client):
    """The three bundles, built once (an existing image is reused: no rebuild)."""
    from pytest_clawswe.harness.bundles import build_bundle

    return {name: build_bundle(name, client=docker_client, progress=lambda line: None)
            for name in sorted(set(BUNDLES.values()))}


def run_bench(pytester, monkeypatch, harness, model, run_dir, *args, ids=IDS, workers=2):
    for var in KEY_VARS:  # what a careless adapter could pass on: it must appear nowhere
        monkeypatch.setenv(var, REAL_KEY)
    xdist = ("-n", str(workers)) if workers > 1 else ()
    return pytester.runpytest_subprocess("-p", "no:cacheprovider", "--run-dir", str(run_dir), "--harness", harness,
                                         "--model", model, "--dataset", "demo", "--instance-ids", ",".join(ids),
                                         *xdist, *args, timeout=1500)


def gateway_records(run_dir: Path, instance_id: str) -> list[dict]:
    """What the gateway recorded for the instance's latest registration, one record per model request."""
    from pytest_clawswe.gateway.record.ledger import read_records  # every gateway worker's file

    records = read_records(run_dir / "gateway", instance_id)
    latest = max((r["attempt"] for r in records), default=0)
    return [r for r in records if r["attempt"] == latest]


def patched_files(diff: str) -> set[str]:
    return set(re.findall(r"^diff --git a/(\S+) b/", diff, re.MULTILINE))


def no_key_anywhere(run_dir: Path) -> list[str]:
    return [str(p.relative_to(run_dir)) for p in run_dir.rglob("*") if p.is_file()
            and REAL_KEY.encode() in p.read_bytes()]


def check_run(run_dir: Path, harness: str, rows: dict, resolved: bool) -> dict:
    metas = {}
    for iid, row in rows.items():
        inst = run_dir / "instances" / iid
        meta = json.loads((inst / "metadata.json").read_text())
        metas[iid] = meta
        assert meta["harness"] == harness and meta["attempts"] == 1, meta
        if resolved:
            assert (meta["outcome"], meta["finish_reason"]) == ("resolved", "stop"), meta
        else:
            assert (meta["outcome"], meta["finish_reason"]) == ("unresolved", "empty"), meta

        # accounting: the gateway's totals are the sum of what the scripted model reported, request by request
        records = gateway_records(run_dir, iid)
        assert records and all(r["status"] == 200 for r in records)
        reported = {k: sum(r[k] for r in records) for k in TOKENS}
        assert meta["usage"] == {"requests": len(records), **reported}
        # ... and what the harness itself counted
        assert {k: meta["harness_usage"][k] for k in TOKENS} == reported, meta["harness_usage"]

        # the patch is the fix (or nothing), and nothing the harness wrote into /testbed
        patch = (inst / "patch.diff").read_text()
        if resolved:
            assert patched_files(patch) == patched_files(row["patch"])
        else:
            assert patch == ""

        # the session is backed up, transcript included
        assert list((inst / "session").glob(TRANSCRIPTS[harness])), sorted((inst / "session").rglob("*"))
    assert no_key_anywhere(run_dir) == []
    return metas


@pytest.mark.parametrize("harness", ["openclaw", "bare", "codex", "claude-code"])
def test_gold_resolves_and_accounts_exactly(pytester, monkeypatch, docker_client, node_demo, bundle_images,
                                            tmp_path, harness):
    run_dir = tmp_path / harness
    result = run_bench(pytester, monkeypatch, harness, "scripted/gold", run_dir)
    result.assert_outcomes(passed=len(IDS))
    metas = check_run(run_dir, harness, node_demo, resolved=True)
    for meta in metas.values():
        usage = meta["harness_usage"]
        if harness == "bare":  # resolved through the diff in the answer, with no tools at all
            assert (usage["diff_found"], usage["diff_applied"], usage["tool_calls"]) == (True, True, 0)
            assert meta["usage"]["requests"] == 1
        else:  # resolved through the harness's own shell tool: a tool call, then a final answer
            assert meta["usage"]["requests"] >= 2
    if harness == "openclaw":  # as released: its own per-instance workspace with its bootstrap files
        for iid in node_demo:
            agent_ws = run_dir / "instances" / iid / "session" / "openclaw" / f"swe-{iid}".lower().replace(".", "-")
            assert (agent_ws / "AGENTS.md").is_file(), sorted(p.name for p in agent_ws.parent.iterdir())
    assert left_containers(docker_client, run_dir) == []


@pytest.mark.matrix
@pytest.mark.parametrize("harness", ["openclaw", "bare", "codex", "claude-code"])
def test_noop_resolves_nothing(pytester, monkeypatch, docker_client, node_demo, bundle_images, tmp_path, harness,
                               full_matrix):
    """In CI on one instance (tests/matrix.py NODE_NOOP_SLICE: gold above runs both bases), both with --full-matrix."""
    ids = IDS if full_matrix else NODE_NOOP_SLICE
    run_dir = tmp_path / harness
    result = run_bench(pytester, monkeypatch, harness, "scripted/noop", run_dir, ids=ids)
    result.assert_outcomes(failed=len(ids))
    metas = check_run(run_dir, harness, {iid: node_demo[iid] for iid in ids}, resolved=False)
    if harness == "bare":
        assert all(m["harness_usage"]["diff_applied"] is False for m in metas.values())
    assert left_containers(docker_client, run_dir) == []


def test_a_budget_cut_kills_every_openclaw_process(pytester, monkeypatch, docker_client, node_demo, bundle_images,
                                                   tmp_path):
    run_dir = tmp_path / "cut"
    iid = IDS[1]
    spec = f"{Path(__file__).resolve()}:ProcessListingOpenClaw"
    # scripted/hang never answers, so openclaw is still waiting on its model at the budget however fast the
    # machine is; grace=0: no released 60 s wait past the budget, so the wrapper's kill at the budget ends it
    result = run_bench(pytester, monkeypatch, spec, "scripted/hang", run_dir, "--budget", "8", "--harness-option",
                       "grace=0", ids=(iid,), workers=1)
    result.assert_outcomes(failed=1)  # cut before it changed anything
    inst = run_dir / "instances" / iid
    meta = json.loads((inst / "metadata.json").read_text())
    assert (meta["finish_reason"], meta["outcome"]) == ("timeout", "unresolved"), meta
    # its own --timeout is the budget; the wrapper kills it grace_s (60 s, as released) later at the latest
    assert 8 <= meta["timings"]["agent"] < 8 + 30
    processes = (inst / "session" / "processes.txt").read_text()
    assert "openclaw" not in processes and "node" not in processes, processes
    assert (inst / "patch.diff").read_text() == ""  # collected all the same
    records = gateway_records(run_dir, iid)
    assert meta["usage"]["requests"] == len(records)
    assert no_key_anywhere(run_dir) == []
    assert left_containers(docker_client, run_dir) == []


