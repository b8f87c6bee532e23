"""Issue 33 §3 with real Docker, a real harness from its bundle and the gateway's scripted model: a WildClawBench task
whose sandbox never comes up (its warmup hangs) ends at --setup-timeout with the setup stage's error naming the phase,
its containers stopped, and the next task still runs and passes; a grader that hangs ends at --grade-timeout with the
verify stage's error; a Claw-SWE-Bench instance whose preparation hangs ends at --setup-timeout in phase
prepare_image and the next instance resolves; a Claw-SWE-Bench instance whose harness's session backup hangs after
the agent ends at the agent stage's limit (budget + grace + --agent-allowance) and the next one resolves; a
Claw-SWE-Bench instance whose tests hang is graded by the real SWE-bench evaluator at --eval-timeout as unresolved,
its evaluation container removed; an item past its hard stop ends as a HardStop error. Each error records its phase
in its result file and the terminal's error line shows it."""
from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from run_containers import left_containers

pytestmark = pytest.mark.docker

SUITE = Path(__file__).parent / "data" / "wildclaw-stages"
HUNG_SETUP = "01_Productivity_Flow_task_1_hung_warmup"
PLAIN = "01_Productivity_Flow_task_2_plain"
HUNG_GRADER = "01_Productivity_Flow_task_3_hung_grader"


@pytest.mark.harness
def test_a_hung_setup_and_a_hung_grader_end_at_their_stages_limits_and_the_next_task_runs(
        pytester, monkeypatch, tmp_path, docker_client):
    from pytest_clawswe.harness.bundles import build_bundle
    from pytest_clawswe.wildclaw.task.images import ensure_images

    build_bundle("claude-code", client=docker_client, progress=lambda line: None)
    ensure_images(docker_client, lambda line: None)  # built before: the setup limit below is for the sandbox
    monkeypatch.setenv("OPENROUTER_API_KEY", "sk-or-not-used")
    run_dir = tmp_path / "run"
    run = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--benchmark", "wildclaw", "--dataset", str(SUITE),
                                        "--harness", "claude-code", "--model", "scripted/gold",
                                        "--judge-model", "scripted", "--setup-timeout", "30", "--grade-timeout", "15",
                                        "--run-dir", str(run_dir), timeout=1500)
    out = run.stdout.str()
    got = {p.parent.name: json.loads(p.read_text()) for p in run_dir.glob("tasks/*/result.json")}
    hung = got[HUNG_SETUP]
    # SetupTimeout, not the warmup's own TaskSetupError at 600 s nor the item's hard stop: stopped at the stage's limit
    assert hung["outcome"] == "error" and hung["error_type"] == "SetupTimeout", hung
    assert hung["error_phase"] == "setup" and "within its limit of 30 s" in hung["error"]
    assert "--setup-timeout" in hung["error"]
    assert f"{HUNG_SETUP}: " in out and "[phase setup]" in out  # the terminal's error line
    assert got[PLAIN]["outcome"] == "passed", got[PLAIN]  # the next task ran
    grader = got[HUNG_GRADER]
    assert grader["outcome"] == "error" and grader["error_type"] == "GradeTimeout", grader
    assert grader["error_phase"] == "verify" and "--grade-timeout" in grader["error"]
    # the error line names the task once, though the grader's sentence begins with its id
    assert f"{HUNG_GRADER}: grade() did not finish" in out and f"{HUNG_GRADER}: {HUNG_GRADER}" not in out
    rows = {row["task_id"]: row for row in csv.DictReader((run_dir / "results.csv").open(newline=""))}
    assert [rows[t]["error_phase"] for t in (HUNG_SETUP, PLAIN, HUNG_GRADER)] == ["setup", "", "verify"]
    run.assert_outcomes(passed=1, errors=2)
    assert left_containers(docker_client, run_dir) == []


def test_a_claw_swe_bench_instance_whose_preparation_hangs_ends_at_the_setup_limit_and_the_next_one_resolves(
        pytester, tmp_path, docker_client, python_demo):
    """An instance image whose git never answers: preparing /testbed hangs in its container until the setup stage's
    limit removes it; the item is a SetupTimeout in phase prepare_image and the next instance is graded as usual."""
    import io

    from pytest_clawswe.swe.dataset import load_row

    row = load_row(python_demo)
    hanging = "clawswe-test/hanging-git:latest"
    dockerfile = (f"FROM {row['image']}\n"
                  "RUN printf '#!/bin/sh\\nexec sleep 3600\\n' > /usr/local/bin/git && chmod +x /usr/local/bin/git\n")
    docker_client.images.build(fileobj=io.BytesIO(dockerfile.encode()), tag=hanging, rm=True, forcerm=True)
    try:
        rows = [{**row, "instance_id": "clawswe__hanging-1", "image": hanging}, row]
        (pytester.path / "hanging.json").write_text(json.dumps(rows))
        run_dir = tmp_path / "run"
        run = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--harness", "oracle", "--dataset", "hanging.json",
                                            "--setup-timeout", "45", "--run-dir", str(run_dir), timeout=1500)
        meta = json.loads((run_dir / "instances" / "clawswe__hanging-1" / "metadata.json").read_text())
        assert meta["outcome"] == "error" and meta["error_type"] == "SetupTimeout", meta
        assert meta["error_phase"] == "prepare_image" and "within its limit of 45 s" in meta["error"]
        assert "clawswe__hanging-1: " in run.stdout.str() and "[phase prepare_image]" in run.stdout.str()
        rows = {r["instance_id"]: r for r in csv.DictReader((run_dir / "results.csv").open(newline=""))}
        assert (rows["clawswe__hanging-1"]["error_phase"], rows[row["instance_id"]]["error_phase"]) == ("prepare_image", "")
        done = json.loads((run_dir / "instances" / row["instance_id"] / "metadata.json").read_text())
        assert done["outcome"] == "resolved", done
        run.assert_outcomes(passed=1, errors=1)
        assert left_containers(docker_client, run_dir) == []
    finally:
        docker_client.images.remove(hanging, force=True)


def test_a_claw_swe_bench_instance_whose_tests_hang_is_unresolved_at_the_eval_timeout_and_the_next_one_resolves(
        pytester, tmp_path, docker_client, python_demo):
    """The gold patch, but tests that never end: swebench's run_instance gives up at --eval-timeout (its exec's kill
    reaches no process in the container: the engine's pid is the host's), our evaluation container is removed, which
    ends the exec, and the verdict is the evaluator's: unresolved, the tests timed out. Not an error (the patch was
    graded as the official evaluator grades it), and the verify stage's own limit (eval timeout + its allowance) is
    not what ended it."""
    from hung_tests import hung_tests_row
    from pytest_clawswe.swe.dataset import load_row

    row = load_row(python_demo)
    hung = hung_tests_row(row)
    (pytester.path / "hung.json").write_text(json.dumps([hung, row]))
    run_dir = tmp_path / "run"
    run = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--harness", "oracle", "--dataset", "hung.json",
                                        "--eval-timeout", "20", "--run-dir", str(run_dir), timeout=1200)
    meta = json.loads((run_dir / "instances" / "clawswe__hungtests-1" / "metadata.json").read_text())
    assert meta["outcome"] == "unresolved", meta
    assert "the tests timed out after 20" in meta["error"] and meta["error_type"] == "", meta
    assert meta["timings"]["score"] < 20 + 120, meta["timings"]  # the eval timeout, not the stage's 320 s
    eval_dir = run_dir / "instances" / "clawswe__hungtests-1" / "eval"
    assert "Timeout error: 20 seconds exceeded." in (eval_dir / "test_output.txt").read_text()
    done = json.loads((run_dir / "instances" / row["instance_id"] / "metadata.json").read_text())
    assert done["outcome"] == "resolved", done
    run.assert_outcomes(passed=1, failed=1)
    assert left_containers(docker_client, run_dir) == []


def test_a_claw_swe_bench_instance_whose_session_backup_hangs_ends_at_the_agent_stages_limit_and_the_next_one_resolves(
        pytester, tmp_path, docker_client, python_demo):
    """The agent applies the gold patch and stops; its harness's session backup then waits on a command that never
    ends (tests/fake_harnesses.py StuckBackupHarness), after the wrapper's kill, which stops only the agent. Before the
    agent stage had a limit of its own, only the item's hard stop ended it (setup + budget + grace + verify + 60 s).
    Now the stage's limit (budget 10 s + grace 0 + --agent-allowance 20 s) removes the item's containers: an
    AgentTimeout naming the phase, nothing graded, and the next instance resolves."""
    from pytest_clawswe.swe.dataset import load_row

    row = load_row(python_demo)
    (pytester.path / "stuck.json").write_text(json.dumps([{**row, "instance_id": "clawswe__stuck-1"}, row]))
    spec = f"{Path(__file__).parent / 'fake_harnesses.py'}:StuckBackupHarness"
    run_dir = tmp_path / "run"
    run = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--harness", spec, "--dataset", "stuck.json",
                                        "--budget", "10", "--agent-allowance", "20", "--setup-timeout", "120",
                                        "--eval-timeout", "60", "--run-dir", str(run_dir), timeout=900)
    meta = json.loads((run_dir / "instances" / "clawswe__stuck-1" / "metadata.json").read_text())
    assert meta["outcome"] == "error" and meta["error_type"] == "AgentTimeout", meta
    assert meta["error_phase"] == "agent" and "agent stage did not finish within its limit of 30 s" in meta["error"]
    assert "--agent-allowance" in meta["error"] and "score" not in meta["timings"], meta  # nothing graded
    assert meta["timings"]["total"] < 30 + 60, meta["timings"]  # the stage's limit, not the hard stop's 570 s
    assert "clawswe__stuck-1: " in run.stdout.str() and "[phase agent]" in run.stdout.str()
    done = json.loads((run_dir / "instances" / row["instance_id"] / "metadata.json").read_text())
    assert done["outcome"] == "resolved", done
    run.assert_outcomes(passed=1, errors=1)
    assert left_containers(docker_client, run_dir) == []


def test_an_item_past_its_hard_stop_ends_as_one_sentence_that_says_what_to_do(pytester, tmp_path, docker_client,
                                                                               python_demo):
    """pytest-timeout's stop is the backstop of every stage's own limit (here --timeout, shorter than the budget, puts
    it first): the item ends as a HardStop error whose sentence gives the limit, the phase and what to do, not as
    pytest-timeout's "Failed: Timeout", and its containers go."""
    from pytest_clawswe.swe.dataset import load_row

    row = load_row(python_demo)
    (pytester.path / "one.json").write_text(json.dumps([row]))
    spec = f"{Path(__file__).parent / 'fake_harnesses.py'}:HangHarness"
    run_dir = tmp_path / "run"
    run = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--harness", spec, "--dataset", "one.json",
                                        "--budget", "120", "--timeout", "15", "-n", "0", "--run-dir", str(run_dir),
                                        timeout=600)
    meta = json.loads((run_dir / "instances" / row["instance_id"] / "metadata.json").read_text())
    assert meta["outcome"] == "error" and meta["error_type"] == "HardStop", meta
    assert meta["error"].startswith("the item ran past its hard stop of 15 s (every stage's own limit and a margin) "
                                    "in phase agent: ") and meta["error"].endswith("then --resume"), meta["error"]
    assert meta["error_phase"] == "agent" and meta["timings"]["total"] < 15 + 30, meta
    out = run.stdout.str()
    assert f"{row['instance_id']}: the item ran past its hard stop of 15 s" in out and "[phase agent]" in out
    assert "Failed: Timeout" not in out.split("short test summary info")[-1]
    run.assert_outcomes(errors=1)
    assert left_containers(docker_client, run_dir) == []
