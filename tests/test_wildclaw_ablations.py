"""The paper's WildClawBench ablations (issue 31 §4): `--budget-factor F` scales every task's own timeout_seconds
(the agent's budget and the budget its prompt states), `--no-skills` gives no task its skills. Each is recorded in
run.json, refused on a resume that differs, and marked as an ablation in the terminal summary and the report, as
Claw-SWE-Bench's --no-purge is.

The Docker runs use the real Claude Code from its bundle, the gateway's scripted model and the task's own grader
(tests/data/wildclaw-netablate: a task whose reference solution lists the skill folders the agent has)."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

SUITE = Path(__file__).parent / "data" / "wildclaw-netablate"
TASK = "01_Productivity_Flow_task_2_skills"
WILD = ["--benchmark", "wildclaw", "--dataset", str(SUITE), "--harness", "claude-code", "--judge-model", "scripted"]
USAGE = pytest.ExitCode.USAGE_ERROR


def _pytest(cwd: Path, *args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=timeout)


def _one_sentence(r: subprocess.CompletedProcess) -> str:
    assert r.returncode == USAGE, r.stdout[-2000:] + r.stderr[-2000:]
    lines = [line for line in r.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("ERROR: "), r.stderr
    return lines[0]


@pytest.mark.parametrize("factor", ["0", "-1", "nan"])
def test_a_budget_factor_that_is_not_positive_is_one_sentence(tmp_path, factor):
    line = _one_sentence(_pytest(tmp_path, *WILD, "--model", "scripted/gold", "--budget-factor", factor,
                                 "--run-dir", str(tmp_path / "run"), "--collect-only"))
    assert "--budget-factor" in line and "positive" in line
    assert not (tmp_path / "run").exists()


def test_a_resume_with_another_budget_factor_is_refused(tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    (run / "run.json").write_text(json.dumps({"run_id": "abl", "benchmark": "wildclaw", "budget_factor": 0.5,
                                              "skills": True}))
    before = (run / "run.json").read_text()
    line = _one_sentence(_pytest(tmp_path, *WILD, "--model", "scripted/gold", "--resume", str(run),
                                 "--collect-only"))
    assert "--budget-factor is 1.0 but the run" in line and "used 0.5; resume with --budget-factor 0.5" in line
    assert (run / "run.json").read_text() == before


def test_a_run_from_before_the_internet_default_is_told_how_to_resume(tmp_path):
    """A WildClawBench run made under the old default network (locked) resumed with today's default (internet):
    the refusal names the flag and value that resume it (it said only "resume with the run's own settings")."""
    run = tmp_path / "run"
    run.mkdir()
    (run / "run.json").write_text(json.dumps({"run_id": "old", "benchmark": "wildclaw", "network": "locked",
                                              "harness": "claude-code", "model": "scripted/gold"}))
    line = _one_sentence(_pytest(tmp_path, *WILD, "--model", "scripted/gold", "--resume", str(run),
                                 "--collect-only"))
    assert "--network is 'internet' but the run" in line and "resume with --network locked" in line, line


# -- real runs ------------------------------------------------------------------------------------------------------
def run_wild(pytester, run_dir: Path, model: str, *args: str):
    return pytester.runpytest_subprocess("-p", "no:cacheprovider", *WILD, "-k", "skills", "--model", model,
                                         "--run-dir", str(run_dir), *args, timeout=1200)


def task_result(run_dir: Path) -> dict:
    return json.loads((run_dir / "tasks" / TASK / "result.json").read_text())


@pytest.mark.docker
@pytest.mark.harness
def test_the_budget_factor_scales_the_agents_budget_and_the_budget_its_prompt_states(pytester, tmp_path,
                                                                                      docker_client):
    run_dir = tmp_path / "run"
    # scripted/hang never answers: the agent works until its budget ends it (the task says 300 s; x0.02 is 6 s)
    out = run_wild(pytester, run_dir, "scripted/hang", "--budget-factor", "0.02")
    text = out.stdout.str()
    got = task_result(run_dir)
    assert got["finish_reason"] == "timeout", got
    assert got["timeout_seconds"] == 300 and got["budget_s"] == 6.0
    assert got["timings"]["agent"] < 300  # the task's own budget would have let it hang for 300 s
    prompt = (run_dir / "tasks" / TASK / "prompt.txt").read_text()
    assert "before the timeout (6s)." in prompt and "(300s)" not in prompt
    info = json.loads((run_dir / "run.json").read_text())
    assert info["budget_factor"] == 0.02 and info["skills"] is True and "--budget-factor 0.02" in info["ablation"]
    assert "ABLATION --budget-factor 0.02" in text


@pytest.mark.docker
@pytest.mark.harness
def test_a_run_without_skills_gives_the_agent_no_skill_folder(pytester, tmp_path, docker_client):
    with_skills, without = tmp_path / "with", tmp_path / "without"
    out = run_wild(pytester, with_skills, "scripted/gold")
    assert task_result(with_skills)["scores"]["has_house_style"] == 1.0  # the check can see a skill
    assert "ABLATION" not in out.stdout.str()
    assert json.loads((with_skills / "run.json").read_text())["ablation"] is None

    out = run_wild(pytester, without, "scripted/gold", "--no-skills")
    got = task_result(without)
    assert got["scores"]["listed"] == 1.0 and got["scores"]["has_house_style"] == 0.0, got["scores"]
    info = json.loads((without / "run.json").read_text())
    assert info["skills"] is False and "--no-skills" in info["ablation"]
    assert "ABLATION --no-skills" in out.stdout.str()

    # the report marks it, as Claw-SWE-Bench's --no-purge; the baseline is not marked
    report = tmp_path / "report"
    subprocess.run([str(Path(sys.executable).parent / "clawswe"), "report", str(with_skills), str(without), "--out",
                    str(report)], check=True, capture_output=True, text=True)
    page = next(report.rglob("index.html")).read_text()
    assert page.count("ABLATION --no-skills") >= 1 and "† without" in page and "† with:" not in page

    # a resume without --no-skills would mix the two protocols
    r = _pytest(tmp_path, *WILD, "--model", "scripted/gold", "--resume", str(without))
    assert "skills (--no-skills) is True but the run" in _one_sentence(r)


def test_the_items_hard_stop_leaves_room_for_a_scaled_budget(pytester):
    from pytest_clawswe.harness.deadline import AGENT_ALLOWANCE_S, HARD_STOP_MARGIN_S, VERIFY_ALLOWANCE_S
    from pytest_clawswe.wildclaw.items import SETUP_ALLOWANCE_S

    run = pytester.inline_run(*WILD, "--model", "scripted/gold", "-k", "skills", "--budget-factor", "3",
                              "--collect-only", "-p", "no:cacheprovider", "-n", "0")
    (item,) = [i for i in run.getcalls("pytest_collection_finish")[0].session.items if "skills" in i.nodeid]
    # the task's 300 s x3, not its own 300 s: the backstop would have cut the agent at a third of its budget
    # with the verify stage's own limit (grade 120 s + its allowance); claude-code's wrapper has no grace here
    assert item.get_closest_marker("timeout").args[0] == 900 + AGENT_ALLOWANCE_S + 120 + VERIFY_ALLOWANCE_S \
        + SETUP_ALLOWANCE_S + HARD_STOP_MARGIN_S
