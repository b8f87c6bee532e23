"""WildClawBench end to end: real Docker, the real harnesses from their bundles, the gateway with the scripted
model (running each task's reference solution through the harness's own shell tool) and the scripted judge.

Per harness: scripted/gold scores ~1.0 and scripted/noop ~0.0 on its demo tasks, the judged criteria went through
the gateway with their own token (judge tokens counted apart from the agent's), and no container of the run is
left. By default each harness runs a slice of three tasks that together take all ten (every category, every kind
of grader: tests/matrix.py says why it is representative); the four-harness matrix over the whole demo set (all
six categories, the mock-service tasks included) is
    scripts/test.sh --full-matrix -m matrix
(which also runs the other sliced matrices; this test alone: add -k gold_scores_one_and_noop_zero). One run with a
hostile reference solution shows that a process the agent leaves behind cannot see gt/ or change the transcript the
grader gets; a resume keeps finished tasks.
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from matrix import select_expression, wildclaw_tasks
from run_containers import left_containers

from pytest_clawswe.wildclaw.options import DEMO_DIR
from pytest_clawswe.wildclaw.task.file import parse_task, task_files

pytestmark = [pytest.mark.docker, pytest.mark.harness]

HARNESSES = ("claude-code", "openclaw", "codex", "hermes")
BUNDLES = {"claude-code": "claude-code", "openclaw": "openclaw", "codex": "codex", "hermes": "hermes"}
DEMO_TASKS = {task.id: task for task in map(parse_task, task_files(DEMO_DIR))}
DEMO_IDS = sorted(DEMO_TASKS)
JUDGED = "01_Productivity_Flow_task_1_meeting_slots"
# the judged demo tasks, and their criterion the judge scores
JUDGED_CRITERIA = {JUDGED: "summary_quality", "05_Creative_Synthesis_task_1_clip_contact_sheet": "sheet_judged"}
ISOLATION = Path(__file__).parent / "data" / "wildclaw-isolation"
REAL_KEY = "sk-or-REAL-KEY-MUST-NOT-LEAK"


def bundle(docker_client, harness: str) -> str:
    """The harness's bundle, built once (an existing image is reused)."""
    from pytest_clawswe.harness.bundles import build_bundle

    return build_bundle(BUNDLES[harness], client=docker_client, progress=lambda line: None)


def run_wild(pytester, monkeypatch, harness, model, run_dir, *args, dataset="demo"):
    monkeypatch.setenv("OPENROUTER_API_KEY", REAL_KEY)  # must reach no container and no file
    return pytester.runpytest_subprocess("-p", "no:cacheprovider", "--benchmark", "wildclaw", "--dataset", str(dataset),
                                         "--harness", harness, "--model", model, "--judge-model", "scripted",
                                         "--run-dir", str(run_dir), *args, timeout=2400)


def results(run_dir: Path) -> dict[str, dict]:
    return {p.parent.name: json.loads(p.read_text()) for p in run_dir.glob("tasks/*/result.json")}


CHAT_TASK = "03_Social_Interaction_task_3_release_blockers"


@pytest.mark.parametrize("harness", ["claude-code"])  # the other three: the matrix below runs it too
def test_the_chat_task_scores_one_for_gold_and_zero_for_noop(pytester, monkeypatch, tmp_path, docker_client, harness):
    """The demo task on the chat service alone (-k): gold posts the right summary after both owners answered
    (every criterion 1.0), noop leaves the audit empty (every criterion 0.0); graded from the chat audit.
    With HARNESSES here it takes about 4 min for the four (openclaw the slowest)."""
    bundle(docker_client, harness)
    for model, expected, ret in (("scripted/gold", 1.0, 0), ("scripted/noop", 0.0, 1)):
        run_dir = tmp_path / model.split("/")[1]
        done = run_wild(pytester, monkeypatch, harness, model, run_dir, "-k", "release_blockers")
        assert done.ret == ret, done.stdout.str()[-3000:]
        r = results(run_dir)[CHAT_TASK]
        assert r["outcome"] in ("passed", "failed") and set(r["scores"].values()) == {expected}, r
        audit = run_dir / "tasks" / CHAT_TASK / "audit"
        calls = [line for line in (audit / "slack.jsonl").read_text().splitlines() if line.strip()]
        assert bool(calls) == (expected == 1.0)  # the chat's own log, which the grader read
        assert not left_containers(docker_client, run_dir)


@pytest.mark.matrix
@pytest.mark.parametrize("harness", HARNESSES)
def test_gold_scores_one_and_noop_zero(pytester, monkeypatch, tmp_path, docker_client, harness, full_matrix):
    bundle(docker_client, harness)
    tasks = wildclaw_tasks(harness, DEMO_IDS, full_matrix)
    select = () if tasks == DEMO_IDS else ("-k", select_expression(tasks))
    gold_dir, noop_dir = tmp_path / "gold", tmp_path / "noop"
    gold = run_wild(pytester, monkeypatch, harness, "scripted/gold", gold_dir, "-n", "2", *select)
    assert gold.ret == 0, gold.stdout.str()[-3000:]
    noop = run_wild(pytester, monkeypatch, harness, "scripted/noop", noop_dir, "-n", "2", *select)
    assert noop.ret == 1, noop.stdout.str()[-3000:]  # every task fails its pass score, none errors
    for run_dir, expected in ((gold_dir, 1.0), (noop_dir, 0.0)):
        got = results(run_dir)
        assert sorted(got) == tasks
        for task_id, r in got.items():
            assert r["outcome"] in ("passed", "failed") and r["overall_score"] == pytest.approx(expected, abs=0.05), r
            score = json.loads((run_dir / "tasks" / task_id / "score.json").read_text())
            assert score["overall_score"] == r["overall_score"]
            usage = json.loads((run_dir / "tasks" / task_id / "usage.json").read_text())
            assert usage["request_count"] >= 1 and usage["input_tokens"] > 0
        summary = json.loads((run_dir / "summary.json").read_text())
        assert summary["mean_score"] == pytest.approx(expected, abs=0.05)
        assert set(summary["by_category"]) == {DEMO_TASKS[t].category for t in tasks}
        assert not left_containers(docker_client, run_dir)
        assert not [p for p in run_dir.rglob("*") if p.is_file() and REAL_KEY.encode() in p.read_bytes()]
    from pytest_clawswe.gateway.record.ledger import read_records  # every gateway worker's file

    if harness == "hermes":
        _hermes_as_released(gold_dir, tasks)
    judged_tasks = [t for t in tasks if t in JUDGED_CRITERIA]
    assert judged_tasks  # every harness's slice has one
    for task_id in judged_tasks:
        judged = results(gold_dir)[task_id]
        # the judge ran through the gateway on its own token: counted apart from the agent's requests
        assert judged["scores"][JUDGED_CRITERIA[task_id]] == 1.0
        assert judged["judge_usage"]["requests"] == 1 and judged["judge_usage"]["output_tokens"] > 0
        assert len(read_records(gold_dir / "gateway", f"{task_id}.judge")) == 1
        assert results(noop_dir)[task_id]["judge_usage"]["requests"] == 0  # nothing made: nothing to judge


def _hermes_as_released(run_dir: Path, tasks: list[str]) -> None:
    """The released runner's AIAgent gets every toolset (`--toolsets all`): the model is offered tools of many, not
    Claw-SWE-Bench's terminal and file ones alone; and no tool's first use installs a package into the bundle."""
    from pytest_clawswe.gateway.record.calls import read_calls

    for task_id in tasks:
        calls = read_calls(run_dir / "gateway", task_id)
        assert calls, task_id
        offered = {tool["function"]["name"] for tool in calls[0]["request"]["tools"]}
        assert {"terminal", "read_file", "patch"} <= offered  # terminal and file
        assert {"todo", "memory", "execute_code", "delegate_task", "browser_navigate", "vision_analyze"} <= offered
        log = (run_dir / "tasks" / task_id / "session" / "hermes" / "logs" / "agent.log").read_text()
        assert "Lazy-installing" not in log


def test_a_left_behind_process_cannot_see_gt_or_forge_the_transcript(pytester, monkeypatch, tmp_path,
                                                                      docker_client):
    bundle(docker_client, "claude-code")
    run_dir = tmp_path / "iso"
    # locked: Warmup on the open network, then the agent with none (the default, internet, is tests/test_network_modes)
    run = run_wild(pytester, monkeypatch, "claude-code", "scripted/gold", run_dir, "--network", "locked",
                   dataset=ISOLATION)
    assert run.ret == 0, run.stdout.str()[-3000:]
    got = results(run_dir)
    budget = got.pop("01_Productivity_Flow_task_8_budget")
    # cut at timeout_seconds (30 s), every process killed, graded on what it wrote before
    assert budget["finish_reason"] == "timeout" and budget["overall_score"] == 1.0, budget
    assert 30 <= budget["timings"]["agent"] < 85
    lines = (run_dir / "tasks" / budget["task_id"] / "snapshot" / "tmp_workspace" / "results" / "background.txt")
    assert lines.is_file()  # the background loop ran, and stopped with the agent: its file was copied out
    (r,) = got.values()
    assert r["scores"] == {"gt_in_grader": 1.0, "agent_saw_no_gt": 1.0, "lurker_ran": 1.0, "no_lurker_in_grader": 1.0,
                           "transcript_not_forged": 1.0, "transcript_has_prompt": 1.0, "warmup_had_network": 1.0,
                           "skill_installed": 1.0,
                           "agent_had_no_network": 1.0, "overall_score": 1.0}
    # the agent forged chat.jsonl in its own container; what the run kept is the gateway's account
    transcript = (run_dir / "tasks" / r["task_id"] / "transcript.jsonl").read_text()
    assert "FORGED" not in transcript and "Write anything you like" in transcript

    # resume: the finished task is kept, not run again
    before = (run_dir / "tasks" / r["task_id"] / "result.json").stat().st_mtime_ns
    again = run_wild(pytester, monkeypatch, "claude-code", "scripted/gold", run_dir, "--resume", str(run_dir),
                     "--network", "locked", dataset=ISOLATION)
    assert again.ret == 0
    assert (run_dir / "tasks" / r["task_id"] / "result.json").stat().st_mtime_ns == before
    assert not left_containers(docker_client, run_dir)
