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

SUITE = Path(__file__).parent / "data" / "wildclaw-netablate"
TASK = "01_Productivity_Flow_task_3_setup"


@pytest.mark.docker
@pytest.mark.harness
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


def _adapter_with_wildclaw_defaults(name: str):
    from pytest_clawswe.harness.adapter import AgentContext, get_harness_class
    from pytest_clawswe.wildclaw.benchmark import WildClawBench

    defaults = WildClawBench.harness_defaults(None, name)  # (it reads nothing of the run)
    harness = get_harness_class(name)("openrouter/some/model", defaults)
    ctx = AgentContext("t", {}, None, Path("/nonexistent"), "openrouter/some/model", 300.0,
                       gateway_url="http://172.18.0.1:9", gateway_token="tok", workdir="/tmp_workspace")
    return harness, ctx


@pytest.mark.parametrize("name", ["openclaw", "claude-code", "codex", "hermes"])
def test_every_released_harness_stops_at_the_budget(name):
    harness, _ = _adapter_with_wildclaw_defaults(name)
    assert harness.grace_s == 0.0  # released: wait(timeout=timeout_seconds), then kill


def test_the_released_settings_of_each_harness_reach_its_config():
    from pytest_clawswe.harness.adapter import get_harness_class

    claude, ctx = _adapter_with_wildclaw_defaults("claude-code")
    env = claude.env(ctx)
    assert env["DISABLE_PROMPT_CACHING"] == env["DISABLE_INTERLEAVED_THINKING"] == "1"
    assert env["CLAUDE_CODE_DISABLE_EXPERIMENTAL_BETAS"] == env["IS_SANDBOX"] == "1"
    codex, ctx = _adapter_with_wildclaw_defaults("codex")
    toml = codex.config(ctx)
    for line in ('model_reasoning_summary = "none"', "model_supports_reasoning_summaries = false",
                 "hide_agent_reasoning = true", 'approval_policy = "never"', 'sandbox_mode = "danger-full-access"'):
        assert line in toml.splitlines(), toml
    hermes, ctx = _adapter_with_wildclaw_defaults("hermes")
    argv = hermes.argv(ctx)
    assert argv[argv.index("--max-turns") + 1] == "90"  # the released bench runner's max_iterations
    # released: AIAgent(reasoning_config=None) unless --thinking, i.e. the provider's default; hermes reads an empty
    # agent.reasoning_effort so (Claw-SWE-Bench's config says high)
    assert hermes.config(ctx)["agent"]["reasoning_effort"] == ""
    # released: AIAgent(enabled_toolsets=None), every toolset; hermes reads `--toolsets all` so (Claw-SWE-Bench's
    # command gives terminal,file)
    assert argv[argv.index("--toolsets") + 1] == "all"
    swe = get_harness_class("hermes")("m", {}).argv(ctx)
    assert swe[swe.index("--toolsets") + 1] == "terminal,file"
    # a tool's first use must not pip-install into the bundle every instance shares (both benchmarks)
    assert hermes.config(ctx)["security"] == {"tirith_enabled": False, "allow_lazy_installs": False}
    assert get_harness_class("hermes")("m", {}).config(ctx)["agent"]["reasoning_effort"] == "high"
    openclaw, ctx = _adapter_with_wildclaw_defaults("openclaw")
    config = openclaw.config(ctx)
    assert config["tools"]["deny"] == [] and "image" in config["models"]["providers"]["clawswe"]["models"][0]["input"]
    assert config["agents"]["defaults"]["imageModel"] == config["agents"]["defaults"]["model"]
    assert "thinkingDefault" not in config["agents"]["defaults"]  # released: only with --thinking
    # Claw-SWE-Bench's defaults are untouched
    swe = get_harness_class("openclaw")("m", {})
    assert "image" in swe.tool_deny and swe.grace_s == 60.0
    assert "DISABLE_PROMPT_CACHING" not in get_harness_class("claude-code")("m", {}).env(ctx)
