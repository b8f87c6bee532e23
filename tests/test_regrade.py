"""`clawswe regrade` on real runs: real Docker, the real harness (Claude Code from its bundle) with the scripted model,
the released-format graders in the grader container, the scripted judge through the gateway; the real SWE-bench
evaluation for Claw-SWE-Bench.

A WildClawBench demo run graded again by another scripted judge (fixtures whose judge.json give other scores) gives
the scores those answers make, every other criterion as before, the original folder untouched; graded again by its
own judge it gives its own scores, one task at a time (-k) and the rest on resume. A Claw-SWE-Bench demo run's
patches evaluated again give the same verdicts (the oracle's resolved, a nop's unresolved after its tests ran).
The times are printed (pytest -s) for the closing figures.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from run_containers import run_objects
from usage_checks import digest


pytestmark = [pytest.mark.docker, pytest.mark.harness]

SLOTS = "01_Productivity_Flow_task_1_meeting_slots"  # judged: summary_quality, weight 0.2
SHEET = "05_Creative_Synthesis_task_1_clip_contact_sheet"  # judged from the image: sheet_judged, weight 0.2
CODE = "02_Code_Intelligence_task_1_rolling_window"  # no judge
TASKS = (SLOTS, SHEET, CODE)
# another scripted judge: the same criteria, other scores
OTHER_JUDGE = {SLOTS: {"criterion: summary_quality": {"score": 0.5, "reason": "another judge: half marks"}},
               SHEET: {"criterion: contact_sheet": {"needs_image": True, "score": 0.25, "reason": "another judge",
                                                    "otherwise": {"score": 0.0, "reason": "no image"}}}}
PYTHON = "clawswe__tinyjson-py-12"


def run(*args, cwd: Path, timeout: int = 2400) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, *args], cwd=cwd, capture_output=True, text=True, timeout=timeout,
                          env={k: v for k, v in os.environ.items() if not k.startswith("PYTEST_XDIST")})


def clawswe(*args, cwd: Path) -> subprocess.CompletedProcess:
    return run("-m", "pytest_clawswe.cli", *args, cwd=cwd)


def results(run_dir: Path) -> dict[str, dict]:
    return {p.parent.name: json.loads(p.read_text()) for p in run_dir.glob("tasks/*/result.json")}


def left(docker_client, run_dir: Path) -> list:
    return run_objects(docker_client, run_dir, volumes=False)


@pytest.fixture(scope="module")
def wild_run(tmp_path_factory, docker_client):
    """A WildClawBench demo run of three tasks (two judged), Claude Code with the scripted model and judge."""
    from pytest_clawswe.harness.bundles import build_bundle

    build_bundle("claude-code", client=docker_client, progress=lambda line: None)
    root = tmp_path_factory.mktemp("wild")
    done = run("-m", "pytest", "-p", "no:cacheprovider", "--benchmark", "wildclaw", "--dataset", "demo", "--harness",
               "claude-code", "--model", "scripted/gold", "--judge-model", "scripted", "-k", " or ".join(TASKS),
               "--run-dir", str(root / "run"), "-n", "2", cwd=root)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    return root / "run"


def test_another_scripted_judge_gives_the_scores_its_answers_make(wild_run, tmp_path, docker_client):
    fixtures = tmp_path / "other-judge"
    for task_id, answers in OTHER_JUDGE.items():
        (fixtures / task_id).mkdir(parents=True)
        (fixtures / task_id / "judge.json").write_text(json.dumps(answers))
    before, was = results(wild_run), digest(wild_run)
    out = tmp_path / "regraded"
    t = time.monotonic()
    done = clawswe("regrade", str(wild_run), "--out", str(out), "--scripted-fixtures", str(fixtures), "-n", "2",
                   cwd=tmp_path)
    print(f"\nregrade of {len(TASKS)} tasks with another scripted judge: {time.monotonic() - t:.1f} s")
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    assert f"regrade of {wild_run}" in done.stdout
    assert f"graded by judge scripted answering from {fixtures} (the run's: answers from each task's" in done.stdout
    after = results(out)
    assert sorted(after) == sorted(TASKS)

    s = before[SLOTS]["scores"]  # the released weights of each task's grade(), with the other judge's answers
    expected = {SLOTS: round(0.2 * s["schedule_valid"] + 0.6 * s["slots_correct"] + 0.2 * 0.5, 4)}
    c = before[SHEET]["scores"]
    expected[SHEET] = round(0.2 * (c["clip_duration"] + c["clip_streams"] + c["sheet_size"] + 0.25 + c["description"]), 4)
    expected[CODE] = before[CODE]["overall_score"]
    for task_id in TASKS:
        old, new = before[task_id], after[task_id]
        print(f"{task_id}: {old['overall_score']} -> {new['overall_score']} (grading {new['timings']['grade']:.1f} s)")
        assert new["overall_score"] == pytest.approx(expected[task_id]), new
        assert new["outcome"] == "passed" and new["judge_model"] == "scripted"
        # the agent's work and cost are the run's; the grading is new, its judge counted apart
        assert new["usage"] == old["usage"] and new["finish_reason"] == old["finish_reason"]
        assert new["timings"]["agent"] == old["timings"]["agent"]
        assert new["regrade"]["of"] == str(wild_run) and new["regrade"]["overall_score"] == old["overall_score"]
        assert new["judge_usage"]["requests"] == (0 if task_id == CODE else 1)
        assert json.loads((out / "tasks" / task_id / "score.json").read_text())["overall_score"] == new["overall_score"]
        usage = json.loads((out / "tasks" / task_id / "usage.json").read_text())
        assert usage["request_count"] == old["usage"]["requests"] and usage["judge"]["model"] == "scripted"
        atif = json.loads((out / "tasks" / task_id / "trajectory" / "attempt-1.atif.json").read_text())
        assert atif["extra"]["clawswe"]["score"] == new["overall_score"] and len(atif["steps"]) > 1
    assert after[SLOTS]["scores"]["summary_quality"] == 0.5 and after[SHEET]["scores"]["sheet_judged"] == 0.25

    info = json.loads((out / "run.json").read_text())
    original = json.loads((wild_run / "run.json").read_text())
    assert info["regrade"]["run_id"] == original["run_id"] and info["scripted_fixtures"] == str(fixtures)
    assert (info["harness"], info["model"], info["network"]) == (original["harness"], original["model"],
                                                                 original["network"])
    summary = json.loads((out / "summary.json").read_text())
    assert summary["mean_score"] == pytest.approx(sum(expected.values()) / 3, abs=1e-4)
    assert digest(wild_run) == was  # the run graded again is only read
    assert not left(docker_client, out)

    compared = clawswe("compare", str(wild_run), str(out), "--json", str(tmp_path / "cmp.json"), cwd=tmp_path)
    assert compared.returncode == 0, compared.stdout + compared.stderr
    assert "B regrades A" in compared.stdout
    changes = {c["id"]: c["b"] for c in json.loads((tmp_path / "cmp.json").read_text())["score_changes"]}
    assert changes == {SLOTS: expected[SLOTS], SHEET: expected[SHEET]}
    report = clawswe("report", str(wild_run), str(out), "--out", str(tmp_path / "report"), cwd=tmp_path)
    assert report.returncode == 0, report.stdout + report.stderr
    assert "claude-code (regrade)" in report.stdout
    assert "REGRADE of run" in (tmp_path / "report" / "index.html").read_text()


def test_its_own_judge_repeats_its_scores_one_task_then_the_rest_on_resume(wild_run, tmp_path):
    before = results(wild_run)
    out = tmp_path / "again"
    t = time.monotonic()
    # the graders may take another network than the agents had (locked: no internet, which needs root)
    first = clawswe("regrade", str(wild_run), "--out", str(out), "-k", "meeting_slots", "-n", "0", "--network", "locked",
                    cwd=tmp_path)
    print(f"\nregrade of one task by the run's own judge: {time.monotonic() - t:.1f} s")
    assert first.returncode == 0, first.stdout[-3000:] + first.stderr[-2000:]
    assert sorted(results(out)) == [SLOTS]
    kept = results(out)[SLOTS]
    other = clawswe("regrade", str(wild_run), "--out", str(out), cwd=tmp_path)
    assert other.returncode == pytest.ExitCode.USAGE_ERROR and "resume with --network locked" in other.stderr
    rest = clawswe("regrade", str(wild_run), "--out", str(out), "-n", "2", "--network", "locked", cwd=tmp_path)
    assert rest.returncode == 0, rest.stdout[-3000:] + rest.stderr[-2000:]
    after = results(out)
    assert after[SLOTS] == kept  # kept by the resume, not graded twice
    for task_id in TASKS:
        assert after[task_id]["overall_score"] == before[task_id]["overall_score"]
        assert after[task_id]["scores"] == before[task_id]["scores"]
    info = json.loads((out / "run.json").read_text())
    assert info["judge_model"] == "scripted" and len(info["invocations"]) == 2
    assert info["network"] == json.loads((wild_run / "run.json").read_text())["network"]  # the agents' network
    assert info["regrade"]["network"] == "locked"


def test_a_task_whose_grading_failed_is_graded_again_one_that_never_got_there_is_left_out(wild_run, tmp_path):
    """A judge that failed leaves the task an error with everything grading reads kept: graded again, it gets its
    score; a task that ended before grading (a setup failure: nothing kept) is left out, said in a warning."""
    run_dir = tmp_path / "run"
    shutil.copytree(wild_run, run_dir, symlinks=True)
    for task_id, error in ((SLOTS, "the judge failed after its retries (status 502)"), (CODE, "setup failed")):
        path = run_dir / "tasks" / task_id / "result.json"
        path.write_text(json.dumps({**json.loads(path.read_text()), "outcome": "error", "error": error,
                                    "overall_score": None, "scores": {}}))
        (run_dir / "tasks" / task_id / "score.json").unlink()
    (run_dir / "tasks" / CODE / "grading.json").unlink()
    out = tmp_path / "out"
    done = clawswe("regrade", str(run_dir), "--out", str(out), "-k", "meeting_slots or rolling_window", "-n", "0",
                   cwd=tmp_path)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    assert "1 task(s) of" in done.stdout and "ended before grading" in done.stdout and CODE in done.stdout
    after = results(out)
    assert sorted(after) == [SLOTS]
    assert after[SLOTS]["outcome"] == "passed" and after[SLOTS]["overall_score"] == 1.0
    assert after[SLOTS]["regrade"]["outcome"] == "error" and "judge failed" in after[SLOTS]["regrade"]["error"]


@pytest.fixture(scope="module")
def swe_runs(tmp_path_factory, demo_images):
    """The oracle and a nop whose tests run (its one-line marker file) on the Python demo instance."""
    root = tmp_path_factory.mktemp("swe")
    runs = {}
    for name, harness in (("oracle", ["--harness", "oracle"]),
                          ("nop", ["--harness", "nop", "--harness-option", "run_tests=true"])):
        done = run("-m", "pytest", "-p", "no:cacheprovider", "--dataset", "demo", *harness, "--instance-ids", PYTHON,
                   "--run-dir", str(root / name), "-n", "0", cwd=root)
        assert done.returncode == (0 if name == "oracle" else 1), done.stdout[-3000:]
        runs[name] = root / name
    return runs


def test_a_claw_swe_bench_run_evaluated_again_gives_the_same_verdicts(swe_runs, tmp_path, docker_client):
    for name, expected in (("oracle", "resolved"), ("nop", "unresolved")):
        original = swe_runs[name]
        was = digest(original)
        out = tmp_path / name
        t = time.monotonic()
        done = clawswe("regrade", str(original), "--out", str(out), "-n", "0", cwd=tmp_path)
        print(f"\nregrade of the {name} run ({PYTHON}): {time.monotonic() - t:.1f} s")
        assert done.returncode == (0 if expected == "resolved" else 1), done.stdout[-3000:] + done.stderr[-2000:]
        assert "the SWE-bench evaluation again, with swebench" in done.stdout
        meta = json.loads((out / "instances" / PYTHON / "metadata.json").read_text())
        before = json.loads((original / "instances" / PYTHON / "metadata.json").read_text())
        print(f"{name}: {before['outcome']} -> {meta['outcome']} (evaluation {meta['timings']['score']:.1f} s)")
        assert meta["outcome"] == before["outcome"] == expected and meta["resolved"] == (expected == "resolved")
        assert meta["patch_applied"] is True  # the evaluator ran the tests: the nop's marker made a patch
        assert (out / "instances" / PYTHON / "eval" / "report.json").is_file()
        assert meta["regrade"]["swebench"] and meta["regrade"]["outcome"] == expected
        assert json.loads((out / "run.json").read_text())["regrade"]["swebench"] == meta["regrade"]["swebench"]
        assert (out / "predictions.jsonl").read_text() == (original / "predictions.jsonl").read_text()
        assert (out / "results.csv").is_file() and json.loads((out / "summary.json").read_text())["instances"] == 1
        assert digest(original) == was
        assert not left(docker_client, out)
