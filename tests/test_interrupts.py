"""Ctrl-C and a killed worker leave no container behind."""
import json
import os
import signal
import subprocess
import sys
import time

import pytest
from run_containers import run_containers, wait_for_running


pytestmark = pytest.mark.docker


def start_run(tmp_path, rootpath, *args):
    run_dir = tmp_path / "run"
    cmd = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--dataset", "demo", "--run-dir", str(run_dir),
           f"--harness={rootpath}/tests/fake_harnesses.py:HangHarness", "--budget", "600", *args]
    proc = subprocess.Popen(cmd, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    return proc, run_dir


def test_sigint_mid_item_leaves_no_container(docker_client, python_demo, tmp_path, request):
    proc, run_dir = start_run(tmp_path, request.config.rootpath, "--instance-ids", python_demo.instance_id)
    run_id = wait_for_running(docker_client, run_dir, "agent", 1)
    time.sleep(1)
    proc.send_signal(signal.SIGINT)
    out = proc.communicate(timeout=120)[0].decode()
    assert proc.returncode == pytest.ExitCode.INTERRUPTED, out
    assert run_containers(docker_client, run_id) == []
    meta = json.loads((run_dir / "instances" / python_demo.instance_id / "metadata.json").read_text())
    assert meta["outcome"] == "error" and "interrupted" in meta["error"]


def test_killed_worker_leaves_no_container(docker_client, demo_instances, demo_images, tmp_path, request):
    ids = [i.instance_id for i in demo_instances][:2]
    proc, run_dir = start_run(tmp_path, request.config.rootpath, "-n", "2", "--instance-ids", ",".join(ids),
                              "--max-worker-restart", "0")
    run_id = wait_for_running(docker_client, run_dir, "agent", 2)
    workers = subprocess.run(["pgrep", "-P", str(proc.pid)], capture_output=True, text=True).stdout.split()
    assert workers
    os.kill(int(workers[0]), signal.SIGKILL)
    time.sleep(2)
    proc.send_signal(signal.SIGINT)  # the other worker would hang for its 600 s budget
    proc.communicate(timeout=180)
    assert run_containers(docker_client, run_id) == []
    # no instance is half-written: each folder is either final (has metadata.json) or a hidden partial
    for d in (run_dir / "instances").iterdir():
        assert d.name.startswith(".") or (d / "metadata.json").is_file()
