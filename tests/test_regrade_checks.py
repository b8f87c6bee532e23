"""`clawswe regrade` / `pytest --regrade RUN` refuses what it cannot grade in one sentence, before anything is written
(no Docker needed: every refusal comes before the run's folder, network or gateway exists), and selects the items -k
and -m select. The runs here are folders made as a finished run leaves them (the demo set's task ids and workspaces);
tests/test_regrade.py grades real runs again on Docker."""
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from usage_checks import one_sentence

from pytest_clawswe.wildclaw.options import DEMO_DIR

ROOT = Path(__file__).resolve().parent.parent
SLOTS = "01_Productivity_Flow_task_1_meeting_slots"
CODE = "02_Code_Intelligence_task_1_rolling_window"
WORKSPACES = {SLOTS: "workspace/01_Productivity_Flow/task_1_meeting_slots",
              CODE: "workspace/02_Code_Intelligence/task_1_rolling_window"}
CATEGORIES = {SLOTS: "Productivity Flow", CODE: "Code Intelligence"}


def pytest_run(*args, cwd, env=None):
    cmd = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *args]
    return subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=300, env={**os.environ, **(env or {})})


def wild_run(folder: Path, suite: Path = DEMO_DIR, dataset: str = "demo", tasks=(SLOTS, CODE), **info) -> Path:
    """A finished WildClawBench run as the runner leaves it: run.json, and per task its result and what grading
    reads (grading.json naming the suite's workspace, the grader, the snapshot, the transcript)."""
    folder.mkdir(parents=True)
    (folder / "run.json").write_text(json.dumps({
        "run_id": "wild-run", "benchmark": "wildclaw", "harness": "claude-code", "model": "scripted/gold",
        "dataset": dataset, "dataset_root": str(suite), "judge_model": "scripted", "network": "locked",
        "pass_score": 0.5, "grade_timeout_s": 120.0, "budget_s": 3600.0, "mem_limit": "8g", "pids_limit": 300,
        **info}))
    for task_id in tasks:
        task = folder / "tasks" / task_id
        (task / "grader").mkdir(parents=True)
        (task / "snapshot" / "tmp_workspace").mkdir(parents=True)
        (task / "result.json").write_text(json.dumps({
            "task_id": task_id, "name": task_id, "category": CATEGORIES[task_id], "modality": "pure-text",
            "outcome": "passed", "overall_score": 1.0, "timeout_seconds": 300, "judge_model": "scripted"}))
        (task / "grading.json").write_text(json.dumps({"task_id": task_id, "workspace": str(suite / WORKSPACES[task_id]),
                                                       "gt": True}))
        (task / "grader" / "automated_checks.py").write_text("def grade(**kwargs):\n    return {'overall_score': 1.0}\n")
        (task / "transcript.jsonl").write_text("")
    return folder


@pytest.fixture
def run(tmp_path):
    return wild_run(tmp_path / "run")


def collected(result) -> list[str]:
    assert result.returncode == 0, result.stdout + result.stderr
    return sorted(line.split("::")[-1] for line in result.stdout.splitlines() if "::" in line)


def test_the_run_must_be_a_finished_run(tmp_path):
    out = tmp_path / "out"
    one_sentence(pytest_run("--regrade", "nowhere", "--run-dir", str(out), cwd=tmp_path), "nowhere", "no such folder")
    (tmp_path / "empty").mkdir()
    one_sentence(pytest_run("--regrade", "empty", "--run-dir", str(out), cwd=tmp_path), "no run.json")
    started = wild_run(tmp_path / "started", tasks=())
    one_sentence(pytest_run("--regrade", str(started), "--run-dir", str(out), cwd=tmp_path), "no item of the run has ended",
                 "--resume")
    assert not out.exists()


@pytest.mark.parametrize("option", [["--model", "openrouter/x/y"], ["--budget", "10"], ["--budget-factor", "2"],
                                    ["--mem-limit", "1g"]])
def test_an_option_of_the_agents_work_is_refused(run, tmp_path, option):
    """What made the agents' work is the run's: given to a regrade, it is refused, naming the option."""
    out = tmp_path / "out"
    one_sentence(pytest_run("--regrade", str(run), "--run-dir", str(out), *option, cwd=tmp_path), option[0], "drop")
    assert not out.exists()


def test_a_judge_the_gateway_cannot_serve_is_refused(run, tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    out = tmp_path / "out"
    cmd = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--regrade", str(run), "--run-dir", str(out),
           "--judge-model", "acme/judge-9"]
    done = subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True, timeout=300, env=env)
    one_sentence(done, "--judge-model acme/judge-9", "OPENROUTER_API_KEY")
    assert not out.exists()


def test_the_regrade_command_refuses_a_judge_without_its_key(run, tmp_path):
    """`clawswe regrade RUN --judge-model M` (README) with no key for M: the same sentence as a run's, nothing written."""
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    out = tmp_path / "out"
    cmd = [sys.executable, "-m", "pytest_clawswe.cli", "regrade", str(run), "--out", str(out), "--judge-model",
           "openai/gpt-5.4"]
    done = subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True, timeout=300, env=env)
    one_sentence(done, "--judge-model openai/gpt-5.4", "OPENROUTER_API_KEY is not set", "--judge-model scripted")
    assert not out.exists()


def test_a_moved_suite_is_named_and_found_with_dataset(tmp_path):
    """The suite's workspace the run graded from is gone: the sentence says so and how to point at it; --dataset with
    the suite's new place finds each task's workspace there."""
    gone = tmp_path / "gone-suite"
    run = wild_run(tmp_path / "run", suite=gone, dataset=str(gone))
    out = tmp_path / "out"
    one_sentence(pytest_run("--regrade", str(run), "--run-dir", str(out), cwd=tmp_path), str(gone), "--dataset PATH")
    moved = tmp_path / "moved-suite"
    shutil.copytree(DEMO_DIR, moved)
    listed = pytest_run("--regrade", str(run), "--run-dir", str(out), "--dataset", str(moved), "--collect-only", "-q",
                        cwd=tmp_path)
    assert collected(listed) == [SLOTS, CODE]
    shutil.rmtree(moved / WORKSPACES[SLOTS] / "gt")  # the run found a gt/ there: it must be there again
    line = one_sentence(pytest_run("--regrade", str(run), "--run-dir", str(out), "--dataset", str(moved), cwd=tmp_path),
                        SLOTS, "gt/", "--dataset PATH")
    assert str(moved / WORKSPACES[SLOTS] / "gt") in line
    assert not out.exists()


def test_a_lost_input_is_refused_only_for_the_items_selected(run, tmp_path):
    shutil.rmtree(run / "tasks" / SLOTS / "snapshot")
    out = tmp_path / "out"
    one_sentence(pytest_run("--regrade", str(run), "--run-dir", str(out), cwd=tmp_path),
                 str(run / "tasks" / SLOTS / "snapshot" / "tmp_workspace"), f"-k 'not {SLOTS}'")
    one_sentence(pytest_run("--regrade", str(run), "--run-dir", str(out), "-m", "productivity", cwd=tmp_path), SLOTS)
    assert not out.exists()
    for selection in (["-k", f"not {SLOTS}"], ["-k", "rolling"], ["-m", "code"], ["-m", "not productivity"]):
        listed = pytest_run("--regrade", str(run), "--run-dir", str(out), *selection, "--collect-only", "-q", cwd=tmp_path)
        assert CODE in collected(listed), selection
        assert SLOTS not in collected(listed), selection


def test_a_task_that_ended_before_grading_is_left_out_with_a_warning(run, tmp_path):
    (run / "tasks" / CODE / "grading.json").unlink()
    listed = pytest_run("--regrade", str(run), "--run-dir", str(tmp_path / "out"), "--collect-only", "-q", cwd=tmp_path)
    assert collected(listed) == [SLOTS]
    assert "1 task(s) of" in listed.stdout and "ended before grading" in listed.stdout and CODE in listed.stdout


def test_the_new_folder_is_never_the_run_or_inside_it(run, tmp_path):
    one_sentence(pytest_run("--regrade", str(run), "--run-dir", str(run / "again"), cwd=tmp_path), "never into")
    assert not (run / "again").exists()


def test_the_scripted_judges_answers_must_be_there(tmp_path):
    run = wild_run(tmp_path / "run", scripted_fixtures=str(tmp_path / "gone-fixtures"))
    one_sentence(pytest_run("--regrade", str(run), "--run-dir", str(tmp_path / "out"), cwd=tmp_path), "gone-fixtures",
                 "--scripted-fixtures DIR")
    fixtures = tmp_path / "fixtures"
    fixtures.mkdir()
    listed = pytest_run("--regrade", str(run), "--run-dir", str(tmp_path / "out"), "--scripted-fixtures", str(fixtures),
                        "--collect-only", "-q", cwd=tmp_path)
    assert collected(listed) == [SLOTS, CODE]


def swe_run(folder: Path, instance_id: str, patch: bool = True, **result) -> Path:
    (folder / "instances" / instance_id).mkdir(parents=True)
    (folder / "run.json").write_text(json.dumps({"run_id": "swe-run", "benchmark": "swe", "harness": "oracle",
                                                 "model": "", "dataset": "demo", "network": "locked"}))
    (folder / "instances" / instance_id / "metadata.json").write_text(json.dumps(
        {"instance_id": instance_id, "outcome": "resolved", "resolved": True, **result}))
    if patch:
        (folder / "instances" / instance_id / "patch.diff").write_text("")
    return folder


def test_a_claw_swe_bench_run_is_checked_against_its_dataset(tmp_path):
    out = tmp_path / "out"
    strange = swe_run(tmp_path / "strange", "acme__nothing-1")
    one_sentence(pytest_run("--regrade", str(strange), "--run-dir", str(out), cwd=tmp_path), "acme__nothing-1",
                 "not in dataset demo", "--dataset PATH")
    lost = swe_run(tmp_path / "lost", "clawswe__tinyjson-py-12", patch=False)
    one_sentence(pytest_run("--regrade", str(lost), "--run-dir", str(out), cwd=tmp_path), "patch.diff is gone")
    one_sentence(pytest_run("--regrade", str(lost), "--run-dir", str(out), "--judge-model", "scripted", cwd=tmp_path),
                 "--judge-model")  # another benchmark's option
    provider = swe_run(tmp_path / "provider", "clawswe__tinyjson-py-12", outcome="error", finish_reason="provider_error")
    one_sentence(pytest_run("--regrade", str(provider), "--run-dir", str(out), cwd=tmp_path), "no instance of the run kept")
    assert not out.exists()


def test_the_command_runs_pytest_and_resumes_its_folder(run, tmp_path):
    from pytest_clawswe.cli import main
    from pytest_clawswe.run.regrade.cli import command

    out = tmp_path / "out"
    cmd = command(run, out, ["--judge-model", "scripted", "-k", "slots", "--", "-n", "2"])
    assert cmd[cmd.index("--regrade") + 1] == str(run) and cmd[cmd.index("--run-dir") + 1] == str(out)
    assert cmd[-6:] == ["--judge-model", "scripted", "-k", "slots", "-n", "2"]
    out.mkdir()
    (out / "run.json").write_text("{}")
    assert "--resume" in command(run, out, []) and "--run-dir" not in command(run, out, [])
    assert main(["regrade", str(run), "--out", str(out), "--dry-run", "-k", "x"]) == 0
    with pytest.raises(SystemExit):  # other commands still refuse what they do not know
        main(["compare", "a", "b", "--judge-model", "x"])


def test_a_resume_grades_the_same_run_with_the_same_judge(run, tmp_path):
    """--resume of a regrade's folder (the command's second call) must be a regrade of this run, with its judge."""
    out = tmp_path / "out"
    out.mkdir()
    (out / "run.json").write_text(json.dumps({"run_id": "r", "benchmark": "wildclaw"}))
    one_sentence(pytest_run("--regrade", str(run), "--resume", str(out), cwd=tmp_path), "not a regrade")
    (out / "run.json").write_text(json.dumps({"run_id": "r", "benchmark": "wildclaw", "judge_model": "scripted",
                                              "regrade": {"run_id": "another-run"}}))
    one_sentence(pytest_run("--regrade", str(run), "--resume", str(out), cwd=tmp_path), "regrades run another-run")
    (out / "run.json").write_text(json.dumps({"run_id": "r", "benchmark": "wildclaw", "judge_model": "scripted",
                                              "regrade": {"run_id": "wild-run"}}))
    one_sentence(pytest_run("--regrade", str(run), "--resume", str(out), "--judge-model", "scripted/other",
                            cwd=tmp_path), "--judge-model", "'scripted'")
    listed = pytest_run("--regrade", str(run), "--resume", str(out), "--collect-only", "-q", cwd=tmp_path)
    assert collected(listed) == [SLOTS, CODE]
