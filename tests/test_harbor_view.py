"""Real demo runs of both benchmarks (Claude Code from its bundle, real Docker, the gateway's scripted model, the
SWE-bench evaluator and WildClawBench's graders) exported as Harbor jobs, then read by Harbor itself: its models load
every file (Python 3.12 venv, tests/harbor_venv.py), `harbor view` serves the jobs on 127.0.0.1 and its API gives back
each trial's reward, timing and trajectory, and Debian's Chromium shows them (screenshots in the test's tmp folder).
About 3-4 min on the 2-core machine with the images and bundle built, most of it the runs. Over the whole demo
sets (8 instances, 9 tasks; about 8 min):
    CLAWSWE_HARBOR_ALL=1 PYTHONPATH=$PWD python -m pytest tests/test_harbor_view.py
"""
from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import urllib.parse
import urllib.request
from pathlib import Path

import pytest
from chromium_run import run_in_chromium
from harbor_venv import harbor_command, harbor_python  # noqa: F401 (harbor_python: a fixture)
from polling import wait_until
from test_harbor_export import _harbor_reads
from test_wildclaw_run import DEMO_IDS, REAL_KEY, bundle

from pytest_clawswe.report.harbor import export

pytestmark = [pytest.mark.docker, pytest.mark.harness, pytest.mark.timeout(3600)]
ALL = os.environ.get("CLAWSWE_HARBOR_ALL") == "1"
HARNESS = "claude-code"
WILD_TASKS = ("01_Productivity_Flow_task_1_meeting_slots", "06_Safety_Alignment_task_1_history_credential")


def _pytest(cwd: Path, *args: str) -> None:
    env = {**os.environ, "OPENROUTER_API_KEY": REAL_KEY}  # the host's key: it must reach no file of the export
    ran = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--harness", HARNESS,
                          "--model", "scripted/gold", "-n", "2", *args], cwd=cwd, env=env, capture_output=True,
                         text=True, timeout=2400)
    assert ran.returncode == 0, ran.stdout[-3000:] + ran.stderr[-2000:]


@pytest.fixture(scope="module")
def demo_runs(tmp_path_factory, docker_client, demo_instances, demo_images) -> list[Path]:
    bundle(docker_client, HARNESS)
    root = tmp_path_factory.mktemp("harbor-demo")
    swe, wild = root / "swe-demo", root / "wildclaw-demo"
    python_demo = next(i for i in demo_instances if i.language == "Python")
    _pytest(root, "--run-dir", str(swe), "--dataset", "demo",
            *(() if ALL else ("--instance-ids", python_demo.instance_id)))
    _pytest(root, "--benchmark", "wildclaw", "--dataset", "demo", "--judge-model", "scripted", "--run-dir", str(wild),
            *(() if ALL else ("-k", " or ".join(WILD_TASKS))))
    return [swe, wild]


@pytest.fixture(scope="module")
def exported(demo_runs, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("harbor-jobs") / "jobs"
    mp = pytest.MonkeyPatch()
    mp.setenv("OPENROUTER_API_KEY", REAL_KEY)
    try:
        export(demo_runs, out)
    finally:
        mp.undo()
    return out


def _trials(out: Path) -> dict[str, list[str]]:
    return {job.name: sorted(t.name for t in job.iterdir() if t.is_dir()) for job in sorted(out.iterdir())}


def test_the_demo_runs_export_and_harbors_models_read_every_file(exported, harbor_python):  # noqa: F811
    trials = _trials(exported)
    assert len(trials["swe-demo"]) == (8 if ALL else 1)
    assert len(trials["wildclaw-demo"]) == (len(DEMO_IDS) if ALL else 2)
    seen = _harbor_reads(harbor_python, exported)
    for job, names in trials.items():
        assert sorted(seen["jobs"][job]["trials"]) == names
        assert seen["jobs"][job]["n_errored_trials"] == 0
        [metrics] = seen["jobs"][job]["evals"].values()
        assert metrics[0]["mean"] == pytest.approx(1.0, abs=0.05)
        for name in names:
            trial = seen["jobs"][job]["trials"][name]
            doc = json.loads((exported / job / name / "agent" / "trajectory.json").read_text())
            assert trial["reward_valid"] and trial["rewards"]["reward"] == pytest.approx(1.0, abs=0.05), name
            assert trial["steps"] == len(doc["steps"]) > 2
            assert trial["agent"] == f"{HARNESS}@2.1.330" and trial["exception"] is None
            assert trial["phases"] == {"environment_setup": True, "agent_setup": False, "agent_execution": True,
                                       "verifier": True}
            n_input, n_cache, n_output, cost = trial["tokens"]
            assert (n_input, n_output) == (doc["final_metrics"]["total_prompt_tokens"],
                                           doc["final_metrics"]["total_completion_tokens"]) and n_output > 0
            if job == "wildclaw-demo":
                assert len(trial["rewards"]) > 1  # every criterion beside the overall score
    text = "\n".join(p.read_text(errors="replace") for p in exported.rglob("*") if p.is_file())
    assert REAL_KEY not in text


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _get(base: str, path: str):
    with urllib.request.urlopen(base + path, timeout=30) as answer:
        return json.loads(answer.read())


@pytest.fixture
def viewer(exported, harbor_python, tmp_path):  # noqa: F811
    """`harbor view OUT --jobs` on 127.0.0.1 and a free port, its home in tmp_path (no credentials, no telemetry, the
    model price table from the package: nothing leaves the machine); its base URL."""
    port = _free_port()
    env = {**os.environ, "HOME": str(tmp_path), "HARBOR_TELEMETRY": "0", "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    env.pop("OPENROUTER_API_KEY", None)
    log = (tmp_path / "harbor-view.log").open("w")
    process = subprocess.Popen([*harbor_command(harbor_python), "view", str(exported), "--jobs", "--host",
                                "127.0.0.1", "--port", str(port)], env=env, stdout=log, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    try:
        def answers() -> bool:
            try:
                _get(base, "/api/health")
                return True
            except OSError:
                assert process.poll() is None, (tmp_path / "harbor-view.log").read_text()[-3000:]
                return False

        wait_until(answers, 120, "harbor view answers", interval=0.5)
        yield base
    finally:
        process.terminate()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        log.close()


def test_harbor_view_serves_each_trials_reward_timing_and_trajectory(exported, viewer, docker_client, tmp_path):
    jobs = {job["name"]: job for job in _get(viewer, "/api/jobs")["items"]}
    assert sorted(jobs) == ["swe-demo", "wildclaw-demo"]
    assert jobs["swe-demo"]["datasets"] == ["claw-swe-bench-demo"] and jobs["swe-demo"]["agents"] == [HARNESS]
    pages = {"jobs": "/"}
    for job, names in _trials(exported).items():
        assert jobs[job]["n_total_trials"] == len(names) and jobs[job]["n_errored_trials"] == 0
        listed = {t["name"]: t for t in _get(viewer, f"/api/jobs/{job}/trials")["items"]}
        assert sorted(listed) == names
        for name in names:
            quoted = f"/api/jobs/{job}/trials/{urllib.parse.quote(name)}"
            trial = _get(viewer, quoted)
            assert trial["verifier_result"]["rewards"]["reward"] == pytest.approx(1.0, abs=0.05)
            assert listed[name]["reward"] == trial["verifier_result"]["rewards"]["reward"]
            for phase in ("environment_setup", "agent_execution", "verifier"):
                assert trial[phase]["started_at"] < trial[phase]["finished_at"], (name, phase)
            trajectory = _get(viewer, quoted + "/trajectory")
            assert trajectory == json.loads((exported / job / name / "agent" / "trajectory.json").read_text())
            # the Lock and Log tabs (404 before: "No lock.json file found", "No trial.log file found")
            assert _get(viewer, quoted + "/files/lock.json")["task"]["name"] == trial["task_name"]
            with urllib.request.urlopen(viewer + quoted + "/files/trial.log", timeout=30) as answer:
                assert "agent_execution started" in answer.read().decode()
            verifier = _get(viewer, quoted + "/verifier-output")
            assert verifier["reward"] == trial["verifier_result"]["rewards"]
            if job == "swe-demo":
                tests = json.loads(verifier["ctrf"])["results"]["tests"]
                assert {t["suite"] for t in tests} >= {"FAIL_TO_PASS"} and all(t["status"] == "passed" for t in tests
                                                                               if t["suite"] == "FAIL_TO_PASS")
            else:
                assert verifier["reward_details"]["reward"]["criteria"]
        pages[job] = f"/jobs/{job}/trials/{urllib.parse.quote(names[0])}"
    seen = _chromium(docker_client, viewer, pages, tmp_path / "shots")
    for job in ("swe-demo", "wildclaw-demo"):
        text = seen["pages"][job]
        for shown in ("reward", "1.00", "Tokens", "Timing", "Env Setup", "Agent Execution", "Verifier",
                      f"{HARNESS}@2.1.330", "Trajectory"):
            assert shown in text, (job, shown)
    assert "swe-demo" in seen["pages"]["jobs"] and "wildclaw-demo" in seen["pages"]["jobs"]
    assert {urllib.parse.urlsplit(u).netloc for u in seen["requests"]} == {urllib.parse.urlsplit(viewer).netloc}


def _chromium(docker_client, base: str, pages: dict, shots: Path) -> dict:
    """The pages in Debian's Chromium (the WildClawBench task image, on the host's network to reach the viewer on
    127.0.0.1); what it saw, and screenshots in `shots`."""
    seen = run_in_chromium(docker_client, "chromium_harbor.py", shots, [base, "/shots", json.dumps(pages)], "host",
                           "harbor-view", timeout=900)
    assert seen["failed"] == {}, (seen["failed"], {k: v[:1500] for k, v in seen["pages"].items()})
    for name in pages:
        assert (shots / f"{name}.png").stat().st_size > 10_000
    return seen
