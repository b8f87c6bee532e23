"""Issue 26 case 3 and issue 25 item 6: inputs that were found too late (per item, after the run folder was
written) are one sentence, exit 4, before anything is written. Real pytest runs in subprocesses."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
IID = "clawswe__tinyjson-py-12"
USAGE = pytest.ExitCode.USAGE_ERROR


def run(tmp_path, *args):
    """(result, run folder) of one `pytest` benchmark invocation with its own --run-dir."""
    run_dir = tmp_path / "run"
    cmd = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--run-dir", str(run_dir), *args]
    result = subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True, timeout=600, env={**os.environ})
    return result, run_dir


def refused(result, run_dir, *words):
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert result.returncode == USAGE, (result.returncode, result.stdout[-3000:], result.stderr[-3000:])
    assert len(lines) == 1 and lines[0].startswith("ERROR: "), result.stderr
    for word in words:
        assert word in lines[0], lines[0]
    assert not run_dir.exists(), sorted(p.name for p in run_dir.rglob("*"))
    return lines[0]


@pytest.mark.docker
def test_a_bundle_that_is_not_built_is_refused_before_anything_is_written(tmp_path, docker_client):
    """Today every item errors on its own (~540 lines each) and a run folder is written."""
    result, run_dir = run(tmp_path, "--harness", "codex", "--model", "scripted/gold", "--dataset", "demo",
                          "--instance-ids", IID, "--harness-option", "version=0.0.1-never-built", "--no-build-bundles")
    refused(result, run_dir, "not built", "clawswe harness build codex")


@pytest.mark.parametrize("harness,option", [("hermes", "max_turns=-5"), ("codex", "context_window=-5")])
def test_a_negative_number_is_no_harness_option(tmp_path, harness, option):
    """Today max_turns=-5 and context_window=-5 ran to exit 0."""
    result, run_dir = run(tmp_path, "--harness", harness, "--model", "scripted/gold", "--dataset", "demo",
                          "--instance-ids", IID, "--harness-option", option)
    refused(result, run_dir, option, "0 or more")


@pytest.mark.parametrize("judge", ["", "openrouter/"])
def test_an_empty_judge_model_is_refused(tmp_path, judge):
    """Today `--judge-model ''` starts a run that asks for the judge `openrouter/` at grading time."""
    result, run_dir = run(tmp_path, "--benchmark", "wildclaw", "--harness", "openclaw", "--model", "scripted/gold",
                          "--dataset", "demo", "--judge-model", judge)
    refused(result, run_dir, "--judge-model")


@pytest.mark.parametrize("judge", [[], ["--judge-model", "anthropic/claude-opus-4.6"]])
def test_a_judge_without_its_key_is_refused_before_anything_is_written(tmp_path, monkeypatch, judge):
    """Today the run starts (run folder, gateway, agents) and every judged task errors at its first grade."""
    for name in [n for n in os.environ if n.endswith("_API_KEY")]:
        monkeypatch.delenv(name)
    result, run_dir = run(tmp_path, "--benchmark", "wildclaw", "--harness", "claude-code", "--model", "scripted/gold",
                          "--dataset", "demo", *judge,  # the default judge is openai/gpt-5.4, as released
                          "--network", "locked")  # the host's firewall is beside the point (no iptables needed)
    line = refused(result, run_dir, "--judge-model", "OPENROUTER_API_KEY is not set", "--judge-model scripted")
    assert "--model scripted/gold" not in line  # the agent's model is not what lacks a key


def test_a_task_file_with_malformed_front_matter_is_a_usage_error(tmp_path):
    """Today: a clear sentence, but exit 1 and a run folder (run.json, summary.json, results.csv, gateway/)."""
    tasks = tmp_path / "suite" / "tasks" / "01_Productivity_Flow"
    tasks.mkdir(parents=True)
    (tasks / "task_1_bad.md").write_text("---\nid: [unclosed\n---\n\n## Prompt\nhi\n")
    result, run_dir = run(tmp_path, "--benchmark", "wildclaw", "--harness", "openclaw", "--model", "scripted/gold",
                          "--dataset", str(tmp_path / "suite"), "--network", "locked")  # no iptables needed
    refused(result, run_dir, "task_1_bad.md", "front matter")


def test_a_docker_host_where_nothing_answers_says_so(tmp_path):
    """Today it says the TLS certificates are missing."""
    result, run_dir = run(tmp_path, "--harness", "oracle", "--dataset", "demo", "--instance-ids", IID,
                          "--docker-host", "tcp://127.0.0.1:1", "--docker-tls-dir", str(tmp_path / "no-certs"))
    line = refused(result, run_dir, "nothing answers at tcp://127.0.0.1:1")
    assert "lacks" not in line


BROKEN = '''
from pytest_clawswe.harness import Harness


class Broken(Harness):
    name = "broken"
    needs_model = False

    def send_task(self, ctx, prompt):
        raise RuntimeError("the adapter broke on purpose")
'''


@pytest.mark.docker
def test_an_item_error_is_one_sentence_and_the_path_of_its_record(tmp_path, demo_images):
    """Issue 25 item 6: each item error printed ~590 lines of pytest and pluggy internals."""
    (tmp_path / "broken.py").write_text(BROKEN)
    result, run_dir = run(tmp_path, f"--harness={tmp_path / 'broken.py'}:Broken", "--dataset", "demo",
                          "--instance-ids", IID)
    assert result.returncode == 1, result.stdout[-2000:]
    out = result.stdout
    assert "the adapter broke on purpose" in out
    assert str(run_dir / "instances" / IID / "metadata.json") in out
    assert "site-packages" not in out and "Traceback" not in out, out[-3000:]
    assert len(out.splitlines()) < 40, out
