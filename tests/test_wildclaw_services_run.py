"""The issue-15 demo tasks (social, social with faults, search, creative) end to end under claude-code: the
services sidecar beside the real harness, the scripted model running each task's reference solution through
the harness's shell tool, the audit in the run folder and served to the grader from the log; the creative
task's vision call answered by the scripted vision model, its contact sheet judged from the image.

Per task: gold scores ~1.0 and noop ~0.0; the audit of the gold run equals the calls the reference
solution made; two runs of the faults task with the same seed inject identical faults. The four-harness
matrix over the whole demo set (these tasks included) is tests/test_wildclaw_run.py::test_gold_scores_one_and_noop_zero
with --full-matrix (a slice of it without).
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_clawswe.wildclaw.services import FIXTURES_DIR
from pytest_clawswe.wildclaw.services.mock.auditview import read_log

pytestmark = [pytest.mark.docker, pytest.mark.harness]

SOCIAL = "03_Social_Interaction_task_1_meeting_tz"
FAULTS = "03_Social_Interaction_task_2_meeting_tz_faults"
SEARCH = "04_Search_Retrieval_task_1_lighthouse"
CREATIVE = "05_Creative_Synthesis_task_1_clip_contact_sheet"
TASKS = (SOCIAL, FAULTS, SEARCH, CREATIVE)
SELECT = "meeting_tz or lighthouse or clip_contact"


def run_wild(run_dir: Path, model: str, select: str = SELECT, n: int = 2) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--benchmark", "wildclaw", "--dataset", "demo",
           "--harness", "claude-code", "--model", model, "--judge-model", "scripted", "-k", select,
           "--run-dir", str(run_dir), "-n", str(n)]
    return subprocess.run(cmd, cwd=run_dir.parent, capture_output=True, text=True, timeout=900, env=os.environ)


def results(run_dir: Path) -> dict[str, dict]:
    return {p.parent.name: json.loads(p.read_text()) for p in run_dir.glob("tasks/*/result.json")}


@pytest.fixture(scope="module")
def gold(tmp_path_factory, docker_client):
    from pytest_clawswe.harness.bundles import build_bundle

    build_bundle("claude-code", client=docker_client, progress=lambda line: None)
    run_dir = tmp_path_factory.mktemp("svc") / "gold"
    done = run_wild(run_dir, "scripted/gold")
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    return run_dir


@pytest.fixture(scope="module")
def noop(tmp_path_factory, gold):
    run_dir = tmp_path_factory.mktemp("svc") / "noop"
    done = run_wild(run_dir, "scripted/noop")
    assert done.returncode == 1, done.stdout[-3000:]  # every task fails its pass score, none errors
    return run_dir


@pytest.mark.parametrize("task_id", TASKS)
def test_gold_scores_one_and_noop_zero(gold, noop, task_id):
    for run_dir, expected in ((gold, 1.0), (noop, 0.0)):
        r = results(run_dir)[task_id]
        assert r["outcome"] in ("passed", "failed") and r["overall_score"] == pytest.approx(expected, abs=0.05), r
        if task_id != CREATIVE:
            assert (run_dir / "tasks" / task_id / "audit" / "meta.json").is_file()  # the audit landed in the run
            assert r["timings"]["services"] > 0 and r["warmup_moved"] == []


def test_the_creative_task_sees_through_the_gateway(gold, noop):
    r = results(gold)[CREATIVE]
    # ffprobe on the clip, Pillow on the sheet, the judge got the sheet as an image, the vision call answered
    assert r["scores"]["clip_duration"] == r["scores"]["clip_streams"] == r["scores"]["sheet_judged"] == 1.0
    assert r["tool_usage"]["requests"] == 1 and r["judge_usage"]["requests"] == 1  # each on its own token
    assert r["usage"]["requests"] >= 2  # the harness's own calls, counted apart
    description = gold / "tasks" / CREATIVE / "snapshot" / "tmp_workspace" / "results" / "description.txt"
    assert "test pattern" in description.read_text()
    assert results(noop)[CREATIVE]["judge_usage"]["requests"] == 0


def test_the_audit_of_a_scripted_run_equals_the_calls_the_solution_made(gold):
    """The scripted model ran the reference solution, which makes exactly the calls of gold_calls.json."""
    calls = [tuple(c) for c in json.loads((FIXTURES_DIR / "social_meeting_tz" / "gold_calls.json").read_text())]
    for task_id in (SOCIAL, FAULTS):
        audit = gold / "tasks" / task_id / "audit"
        for service in ("gmail", "calendar", "contacts"):
            logged = read_log(audit / f"{service}.jsonl")
            answered = [(r["endpoint"], r["request"]) for r in logged if r["fault"] not in ("429", "500")]
            assert answered == [(e, b) for e, b in calls if e.startswith(f"/{service}/")], (task_id, service)
            # a call that met a fault was retried with the same request, right after
            for n, r in enumerate(logged):
                if r["fault"] in ("429", "500"):
                    assert task_id == FAULTS and logged[n + 1]["request"] == r["request"]
    search = read_log(gold / "tasks" / SEARCH / "audit" / "search.jsonl")
    expected = json.loads((FIXTURES_DIR / "search_lighthouse" / "gold_calls.json").read_text())
    assert [[r["endpoint"], r["request"]] for r in search] == expected
    assert results(gold)[SEARCH]["scores"]["query_count"] == 2


def faults_of(audit: Path) -> dict[str, list]:
    return {p.stem: [(r["seq"], r["endpoint"], r["fault"]) for r in read_log(p) if r["fault"]]
            for p in sorted(audit.glob("*.jsonl"))}


def test_two_runs_with_the_same_seed_inject_identical_faults(gold, tmp_path):
    again = tmp_path / "again"
    done = run_wild(again, "scripted/gold", select="faults", n=1)
    assert done.returncode == 0, done.stdout[-3000:]
    first, second = faults_of(gold / "tasks" / FAULTS / "audit"), faults_of(again / "tasks" / FAULTS / "audit")
    assert first == second and sum(len(v) for v in first.values()) >= 2
    assert {f for v in first.values() for _, _, f in v} & {"429", "500"}
    assert faults_of(gold / "tasks" / SOCIAL / "audit") == {"calendar": [], "contacts": [], "gmail": []}


def test_a_released_warmup_service_runs_in_the_sidecar_and_the_result_says_so(tmp_path, gold):
    """A released-style task whose Warmup starts its own mock email server from the workspace: that line
    is not run in the agent's container; the sidecar serves the fixture it named; result.json lists it."""
    dataset = Path(__file__).parent / "data" / "wildclaw-released-services"
    run_dir = tmp_path / "released"
    cmd = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--benchmark", "wildclaw", "--dataset",
           str(dataset), "--harness", "claude-code", "--model", "scripted/gold", "--judge-model", "scripted",
           "--run-dir", str(run_dir)]
    done = subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True, timeout=600, env=os.environ)
    assert done.returncode == 0, done.stdout[-3000:]
    (r,) = results(run_dir).values()
    assert r["scores"] == {"served_from_the_task_fixture": 1.0, "mock_not_in_agent": 1.0,
                           "fixture_still_in_workspace": 1.0, "overall_score": 1.0}
    [moved] = r["warmup_moved"]
    assert moved["service"] == "gmail" and moved["fixture"] == "/tmp_workspace/fixtures/gmail/inbox.json"
    assert "mock_services/gmail/server.py" in moved["line"]
