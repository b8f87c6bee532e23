"""The released runner's per-harness setup, as seen from inside the agent's container (issue 31 §5;
docs/fidelity.md lists every step): a real OpenClaw from its bundle, the gateway's scripted model acting out a
task's reference solution through OpenClaw's own shell tool, which reports what it finds; the task's grader
returns it.

Released (src/utils/docker_utils.py setup_workspace, src/agents/openclaw/runner.py): `/root/.openclaw/workspace`
is a link to `/tmp_workspace`, so OpenClaw's image tool may read task files; `--thinking` sets
`agents.defaults.thinkingDefault`; the chat model is also `agents.defaults.imageModel`; no tool is denied."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

pytestmark = [pytest.mark.docker, pytest.mark.harness]

SUITE = Path(__file__).parent / "data" / "wildclaw-netablate"
TASK = "01_Productivity_Flow_task_3_setup"


def test_openclaw_is_set_up_as_the_released_runner_sets_it_up(pytester, tmp_path, docker_client):
    run_dir = tmp_path / "run"
    pytester.runpytest_subprocess("-p", "no:cacheprovider", "--benchmark", "wildclaw", "--dataset", str(SUITE),
                                  "-k", "setup", "--harness", "openclaw", "--model", "scripted/gold",
                                  "--judge-model", "scripted", "--harness-option", "thinking=high",
                                  "--run-dir", str(run_dir), timeout=1200)
    got = json.loads((run_dir / "tasks" / TASK / "result.json").read_text())
    scores = got["scores"]
    assert got["overall_score"] == 1.0, got
    assert scores["workspace_link"] == "/tmp_workspace" and scores["link_sees_input"] == "True"
    assert scores["thinking"] == "high"
    assert scores["image_model"].startswith("clawswe/") and scores["image_model"].endswith("scripted/gold")
    assert scores["tools_deny"] == ""  # the image tool (and every other) is there, as released
    settings = json.loads((run_dir / "run.json").read_text())["harness_settings"]
    assert settings["thinking"] == "high" and settings["workspace"] == "workdir"
