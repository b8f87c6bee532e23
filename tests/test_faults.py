"""Fault injection: real Docker, real runs. Each fault must leave no container behind, no duplicate or
missing prediction, the affected instance an error (never a fail), and a resumed run whose results equal
an uninterrupted run's (every demo instance given here is resolved by the oracle)."""
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from polling import wait_until
from run_containers import left_containers, run_containers, wait_for_running

from pytest_clawswe.labels import LABEL_RUN

pytestmark = [pytest.mark.docker, pytest.mark.exclusive]  # it restarts the Docker engine
ROOT = Path(__file__).resolve().parent.parent
FAKES = ROOT / "tests" / "fake_harnesses.py"


def bench(run_dir, harness, ids, *extra, cwd=None, env=None):
    """A benchmark run; `env`: extra variables (the fake harnesses take their delays from there, so a resume
    can use the run's own options)."""
    cmd = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--dataset", "demo", "--run-dir", str(run_dir),
           f"--harness={harness}", "--instance-ids", ",".join(ids), *extra]
    return subprocess.Popen(cmd, cwd=cwd or run_dir.parent, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True, env={**os.environ, **(env or {})})


def outcomes(run_dir):
    out = {}
    for meta in (run_dir / "instances").glob("*/metadata.json"):
        if not meta.parent.name.startswith("."):
            out[meta.parent.name] = json.loads(meta.read_text())["outcome"]
    return out


def predictions(run_dir):
    lines = (run_dir / "predictions.jsonl").read_text().splitlines()
    ids = [json.loads(line)["instance_id"] for line in lines]
    assert len(ids) == len(set(ids)), "duplicate prediction"
    return ids


def finish_with_resume(run_dir, ids, cwd):
    """Resume with a healthy setup: everything ends resolved, once."""
    proc = bench(run_dir, f"{FAKES}:SlowOracleHarness", ids, "--resume", str(run_dir), cwd=cwd)
    out = proc.communicate(timeout=900)[0]
    assert proc.returncode == 0, out
    assert outcomes(run_dir) == {i: "resolved" for i in ids}
    assert sorted(predictions(run_dir)) == sorted(ids)


@pytest.fixture
def two_ids(demo_instances, demo_images):
    quick = [i for i in demo_instances if i.language in ("Python", "Go")]
    return [i.instance_id for i in quick]


def test_sigkill_of_a_worker_mid_agent_then_resume(docker_client, two_ids, tmp_path):
    run_dir = tmp_path / "run"
    proc = bench(run_dir, f"{FAKES}:SlowOracleHarness", two_ids, "-n", "2", "--max-worker-restart", "0",
                 env={"CLAWSWE_TEST_SLEEP": "600"})
    wait_for_running(docker_client, run_dir, "agent", 2)
    workers = subprocess.run(["pgrep", "-P", str(proc.pid)], capture_output=True, text=True).stdout.split()
    os.kill(int(workers[0]), signal.SIGKILL)
    time.sleep(1)
    proc.send_signal(signal.SIGINT)
    proc.communicate(timeout=300)
    assert left_containers(docker_client, run_dir) == []
    assert "resolved" not in outcomes(run_dir).values()  # nobody finished; nothing was scored as a fail
    assert "unresolved" not in outcomes(run_dir).values()
    assert predictions(run_dir) == []
    finish_with_resume(run_dir, two_ids, tmp_path)
    assert left_containers(docker_client, run_dir) == []


def test_sigint_of_the_controller_then_resume(docker_client, two_ids, tmp_path):
    run_dir = tmp_path / "run"
    proc = bench(run_dir, f"{FAKES}:SlowOracleHarness", two_ids, env={"CLAWSWE_TEST_SLEEP": "600"})
    wait_for_running(docker_client, run_dir, "agent", 1)
    proc.send_signal(signal.SIGINT)
    out = proc.communicate(timeout=300)[0]
    assert proc.returncode == pytest.ExitCode.INTERRUPTED, out
    assert left_containers(docker_client, run_dir) == []
    assert set(outcomes(run_dir).values()) <= {"error"} and predictions(run_dir) == []
    finish_with_resume(run_dir, two_ids, tmp_path)


def test_gateway_killed_mid_request_then_resume(docker_client, python_demo, tmp_path):
    run_dir = tmp_path / "run"
    iid = python_demo.instance_id
    proc = bench(run_dir, f"{FAKES}:ChattyHarness", [iid], "--model", "scripted/noop",
                 env={"CLAWSWE_TEST_SECONDS": "20"})
    from pytest_clawswe.gateway.record.ledger import read_records  # every gateway worker's file

    wait_until(lambda: len(read_records(run_dir / "gateway", iid)) >= 3, 300, "the agent made 3 model requests")
    gateway_pid = json.loads((run_dir / "gateway" / "gateway.json").read_text())["pid"]
    os.kill(gateway_pid, signal.SIGKILL)  # the run started it: ours to kill
    out = proc.communicate(timeout=300)[0]
    assert left_containers(docker_client, run_dir) == []
    assert outcomes(run_dir) == {iid: "error"}, out
    meta = json.loads((run_dir / "instances" / iid / "metadata.json").read_text())
    assert "gateway" in meta["error"]
    assert predictions(run_dir) == []
    proc = bench(run_dir, f"{FAKES}:ChattyHarness", [iid], "--model", "scripted/noop", "--resume", str(run_dir),
                 env={"CLAWSWE_TEST_SECONDS": "1"})
    out = proc.communicate(timeout=300)[0]
    assert proc.returncode == 0, out
    assert outcomes(run_dir) == {iid: "resolved"} and predictions(run_dir) == [iid]
    # the requests before the fault stay counted in the gateway's ledger (attempt 1), apart from the resumed ones
    records = read_records(run_dir / "gateway", iid)
    assert len({r.get("attempt") for r in records}) >= 2


@pytest.fixture
def small_disk(tmp_path):
    if os.geteuid() != 0:
        pytest.skip("mounting a small tmpfs for the disk-full test needs root (CI runs as root)")
    mount = tmp_path / "small"
    mount.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(mount)], check=True)
    yield mount
    subprocess.run(["umount", "-l", str(mount)], check=False)


def test_disk_full_in_the_run_dir_then_resume(docker_client, python_demo, small_disk):
    run_dir = small_disk / "run"
    iid = python_demo.instance_id
    filler = small_disk / "filler"
    subprocess.run(["dd", "if=/dev/zero", f"of={filler}", "bs=4k", "count=2000"], capture_output=True)  # fills it
    os.truncate(filler, filler.stat().st_size - 12 * 1024)  # 12 kB free: run.json fits, the artifacts do not
    stat = os.statvfs(small_disk)
    assert stat.f_bavail * stat.f_frsize <= 16 * 1024
    proc = bench(run_dir, f"{FAKES}:SlowOracleHarness", [iid], cwd=small_disk.parent)
    out = proc.communicate(timeout=600)[0]
    assert proc.returncode != 0
    assert "free space" in out or "No space left" in out, out
    assert left_containers(docker_client, run_dir) == []
    assert outcomes(run_dir).get(iid) in (None, "error")  # absent or an error: never a fail
    filler.unlink()
    finish_with_resume(run_dir, [iid], small_disk.parent)


def _our_dockerd() -> int | None:
    pidfile = Path(os.environ.get("CLAWSWE_CACHE", Path.home() / ".cache" / "clawswe")) / "dockerd.pid"
    try:
        pid = int(pidfile.read_text())
        if Path(f"/proc/{pid}/comm").read_text().strip() == "dockerd":
            return pid
    except (OSError, ValueError):
        pass
    return None


def test_dockerd_restart_mid_run_then_resume(docker_client, python_demo, tmp_path):
    pid = _our_dockerd()
    if pid is None:
        pytest.skip("this test restarts dockerd, and only does so for a daemon scripts/docker-up.sh started")
    run_dir = tmp_path / "run"
    iid = python_demo.instance_id
    proc = bench(run_dir, f"{FAKES}:SlowOracleHarness", [iid], env={"CLAWSWE_TEST_SLEEP": "600"})
    wait_for_running(docker_client, run_dir, "agent", 1)
    os.kill(pid, signal.SIGTERM)
    wait_until(lambda: not Path(f"/proc/{pid}").exists(), 60, "dockerd stopped")
    subprocess.run([str(ROOT / "scripts" / "docker-up.sh"), "bookworm"], check=True, capture_output=True)
    out = proc.communicate(timeout=600)[0]
    assert outcomes(run_dir) == {iid: "error"}, out
    assert predictions(run_dir) == []
    import docker

    client = docker.from_env()  # the fixture's client spoke to the daemon that was stopped
    run_id = json.loads((run_dir / "run.json").read_text())["run_id"]
    # the run's end waited for the engine to come back and removed what the restart left behind
    assert left_containers(client, run_dir) == [], out
    finish_with_resume(run_dir, [iid], tmp_path)
    assert json.loads((run_dir / "run.json").read_text())["run_id"] == run_id  # a resume is the same run
    assert left_containers(client, run_dir) == []


# -- issue 12 case 1: Ctrl-C while evaluations run ------------------------------------------------------
CASE1_K = "rangeset or recur or csvkit or pathnorm"


def started(run_dir):
    """Instances that have a folder, final or still partial."""
    root = run_dir / "instances"
    return {d.name.strip(".").removesuffix(".partial") for d in root.iterdir()} if root.is_dir() else set()


def test_case1_sigint_during_evaluation_then_resume_scores_all(docker_client, demo_images, tmp_path):
    run_dir = tmp_path / "run"
    cmd = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--dataset", "demo", "--harness", "oracle",
           "-n", "2", "-k", CASE1_K]
    proc = subprocess.Popen([*cmd, "--run-dir", str(run_dir)], cwd=tmp_path, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)
    wait_for_running(docker_client, run_dir, "eval")
    time.sleep(0.5)
    before = started(run_dir)
    proc.send_signal(signal.SIGINT)
    out = proc.communicate(timeout=300)[0]
    assert proc.returncode == pytest.ExitCode.INTERRUPTED, out
    assert left_containers(docker_client, run_dir) == [], out
    # an interrupted instance is an error (re-run on resume) or absent, never a verdict the oracle cannot earn
    assert set(outcomes(run_dir).values()) <= {"resolved", "error"}, out
    assert started(run_dir) <= before, "an item started after Ctrl-C"
    resumed = subprocess.run([*cmd, "--resume", str(run_dir)], cwd=tmp_path, capture_output=True, text=True,
                             timeout=900)
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    ids = ["clawswe__csvkit-java-23", "clawswe__pathnorm-c-15", "clawswe__rangeset-rs-17", "clawswe__recur-rb-31"]
    assert outcomes(run_dir) == {i: "resolved" for i in ids}  # the oracle scores 4/4
    assert sorted(predictions(run_dir)) == ids
    assert left_containers(docker_client, run_dir) == []


def test_case1_second_sigint_stops_at_once(docker_client, two_ids, tmp_path):
    run_dir = tmp_path / "run"
    proc = bench(run_dir, f"{FAKES}:SlowOracleHarness", two_ids, "-n", "2", env={"CLAWSWE_TEST_SLEEP": "600"})
    wait_for_running(docker_client, run_dir, "agent", 2)
    proc.send_signal(signal.SIGINT)
    time.sleep(0.2)
    t = time.monotonic()
    proc.send_signal(signal.SIGINT)
    out = proc.communicate(timeout=120)[0]
    assert time.monotonic() - t < 15, out
    assert proc.returncode == pytest.ExitCode.INTERRUPTED, out
    assert left_containers(docker_client, run_dir) == [], out
    assert set(outcomes(run_dir).values()) <= {"error"}


def test_case1_a_killed_evaluation_is_an_error_not_a_verdict(docker_client, demo_instances, demo_images, tmp_path):
    import threading

    from pytest_clawswe.errors import InfraError  # its old home, so the test also runs on main
    from pytest_clawswe.swe.dataset import load_row
    from pytest_clawswe.swe.grading.scoring import score

    inst = next(i for i in demo_instances if i.instance_id == "clawswe__csvkit-java-23")  # a slow test run
    row = load_row(inst)
    run_id = f"t-killed-eval-{os.getpid()}"
    box = {}

    def grade():
        try:
            box["score"] = score(docker_client, row, row["patch"], run_id=run_id, model_label="t",
                                 eval_dir=tmp_path / "eval", labels={LABEL_RUN: run_id}, timeout=600)
        except Exception as exc:  # what the runner would see
            box["error"] = exc

    worker = threading.Thread(target=grade)
    worker.start()
    found = wait_until(lambda: run_containers(docker_client, run_id, running=True), 120,
                       "the evaluation container runs")
    # the evaluation script is cut off, its container lives on (as when a stop reaches the script first)
    kill = ("for p in /proc/[0-9]*; do case \"$(tr '\\0' ' ' < $p/cmdline 2>/dev/null)\" in "
            "*/eval.sh*) kill -9 ${p#/proc/} && echo killed ;; esac; done")
    wait_until(lambda: "killed" in found[0].exec_run(["sh", "-c", kill]).output.decode(), 120,
               "the evaluation script was killed")
    worker.join(300)
    assert "score" not in box, f"a killed evaluation was graded: {box.get('score')}"
    assert isinstance(box["error"], InfraError)
