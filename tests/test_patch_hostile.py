"""Issue 26 case 2: the patch is the working tree as the agent left it, read with a git configuration the agent
cannot influence, within a time limit; against a real container and a real run."""
from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from pytest_clawswe.engine.sandbox.docker_workspace import Workspace
from pytest_clawswe.labels import LABEL_RUN
from pytest_clawswe.swe.dataset import load_row
from pytest_clawswe.swe.instance.patch import collect_patch, count_changed_lines

pytestmark = pytest.mark.docker
HARNESSES = Path(__file__).parent / "container_harnesses.py"


def _gold_files(patch: str) -> set[str]:
    return {line.split(" b/")[-1] for line in patch.splitlines() if line.startswith("diff --git ")}


@pytest.mark.timeout(900)
def test_git_configuration_the_agent_planted_does_not_run_when_the_patch_is_read(pytester, python_demo, tmp_path):
    """Today the fsmonitor hook and the hooks run during the runner's own git commands (writing planted_*.py
    into the patch, 20 s each: timings.patch was 120 s) and the clean filter adds a line to every .py file."""
    run_dir = tmp_path / "run"
    result = pytester.runpytest_subprocess(
        f"--harness={HARNESSES}:GitPlanter", "--dataset", "demo", "--instance-ids", python_demo.instance_id,
        "--run-dir", str(run_dir), "--harness-option", "sleep=20", "-p", "no:cacheprovider", timeout=800)
    folder = run_dir / "instances" / python_demo.instance_id
    meta = json.loads((folder / "metadata.json").read_text())
    patch = (folder / "patch.diff").read_text()
    assert "planted" not in patch, patch
    assert _gold_files(patch) == _gold_files(load_row(python_demo)["patch"])
    assert count_changed_lines(patch) == count_changed_lines(load_row(python_demo)["patch"])
    assert meta["timings"]["patch"] < 15, meta["timings"]
    assert meta["outcome"] == "resolved", (meta, result.stdout.str()[-3000:])


def test_collection_that_does_not_end_is_cut_at_its_time_limit(docker_client, python_demo):
    """An agent that replaced git itself with a program that never ends: the collection stops at its limit and
    the item is graded on an empty patch, never a hang."""
    with Workspace(docker_client, python_demo.image, labels={LABEL_RUN: "t-patch-hostile"}) as ws:
        base = ws.exec("git rev-parse HEAD", workdir="/testbed", check=True).stdout.strip()
        ws.exec("echo 'x = 1' >> /testbed/new_file.py", check=True)
        real = collect_patch(ws, base, timeout_s=60)
        assert "new_file.py" in real.raw
        ws.exec("for g in $(which -a git); do printf '#!/bin/sh\\nsleep 100000\\n' > $g; done", check=True)
        started = time.monotonic()
        cut = collect_patch(ws, base, timeout_s=3)
        assert time.monotonic() - started < 30
    assert cut.raw == "" and cut.clean == ""
    assert any("time limit" in d for d in cut.dropped), cut.dropped
