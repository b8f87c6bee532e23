"""The pytest_clawswe_instance_result hook: a small plugin consumes results without reading files."""
import json
import os
import subprocess
import sys

import pytest

pytestmark = pytest.mark.docker
IDS = ["clawswe__rangeset-rs-17", "clawswe__tinyjson-py-12"]

PLUGIN = '''
import json, os

def pytest_clawswe_instance_result(item, result):
    with open(os.environ["RESULTS_SEEN"], "a") as out:
        out.write(json.dumps({"id": result.instance_id, "outcome": result.outcome, "reused": item.reused,
                              "nodeid": item.nodeid}) + "\\n")
'''


def test_a_plugin_sees_each_finished_instance_once(demo_images, tmp_path):
    (tmp_path / "seen_plugin.py").write_text(PLUGIN)
    seen = tmp_path / "seen.jsonl"
    env = {**os.environ, "RESULTS_SEEN": str(seen),
           "PYTHONPATH": os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")])}
    cmd = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "seen_plugin", "--harness", "oracle",
           "--dataset", "demo", "--instance-ids", ",".join(IDS), "-n", "2"]
    run = subprocess.run([*cmd, "--run-dir", str(tmp_path / "run")], cwd=tmp_path, env=env, capture_output=True,
                         text=True, timeout=900)
    assert run.returncode == 0, run.stdout + run.stderr
    records = [json.loads(line) for line in seen.read_text().splitlines()]
    assert sorted(r["id"] for r in records) == IDS  # once each, from the workers that ran them
    assert all(r["outcome"] == "resolved" and not r["reused"] for r in records)
    assert {r["nodeid"] for r in records} == {f"demo::{i}" for i in IDS}
    seen.unlink()
    resumed = subprocess.run([*cmd, "--resume", str(tmp_path / "run")], cwd=tmp_path, env=env,
                             capture_output=True, text=True, timeout=900)
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    records = [json.loads(line) for line in seen.read_text().splitlines()]
    assert sorted(r["id"] for r in records) == IDS and all(r["reused"] for r in records)  # kept results too
