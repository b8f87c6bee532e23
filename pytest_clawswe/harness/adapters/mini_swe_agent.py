"""`mini-swe-agent`: the minimal baseline (PyPI mini-swe-agent, litellm), its stock `mini.yaml` agent.

Run as `mini -y --exit-immediately -m openai/<model> -t PROMPT -c mini.yaml -c <ours> -o trajectory.json`
inside the instance container, from the bundle. Ours adds: 300 steps (as hermes's turns), no cost limit
(the budget is wall-clock), commands run in /testbed with mini's SWE-bench command timeout (60 s), and the
gateway as the OpenAI-compatible endpoint. mini finishes when the model runs
`echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT` (its prompt says so; the scripted model does it).

Per-instance state: MSWEA_GLOBAL_CONFIG_DIR=/tmp/clawswe-agent/mini (our config, trajectory.json); the
workspace is untouched. Usage: the trajectory's info.model_stats (api_calls, instance_cost) and each
assistant message's extra.response.usage (prompt_tokens with cached_tokens / cache_write_tokens inside).
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field

from pytest_clawswe.harness.adapter import AgentContext, AgentRun
from pytest_clawswe.harness.adapters._bundled import STATE_ROOT, BundledHarness, BundledOptions
from pytest_clawswe.harness.gateway_urls import openai_base_url

HOME = f"{STATE_ROOT}/mini"
CONFIG = f"{HOME}/clawswe.yaml"
TRAJECTORY = f"{HOME}/trajectory.json"
STEP_LIMIT = 300
COMMAND_TIMEOUT_S = 60  # mini's swebench.yaml value (its mini.yaml default is 30)
FINISHED = ("Submitted", "LimitsExceeded")  # exit statuses where the agent stopped on its own terms


@dataclass
class MiniOptions(BundledOptions):
    step_limit: int = field(default=STEP_LIMIT, metadata={"help": "agent.step_limit"})
    command_timeout: int = field(default=COMMAND_TIMEOUT_S, metadata={"help": "seconds per command"})


class MiniSweAgentHarness(BundledHarness):
    name = "mini-swe-agent"
    bundle_name = "mini-swe-agent"
    Options = MiniOptions
    agent_home = HOME  # type: ignore[assignment]

    def _config(self, ctx: AgentContext) -> str:
        config = {
            "agent": {"step_limit": self.opts.step_limit, "cost_limit": 0},
            "environment": {"cwd": ctx.workdir,
                            "timeout": self.opts.command_timeout},
            "model": {"model_kwargs": {"api_base": openai_base_url(ctx.gateway_url), "api_key": ctx.gateway_token}},
        }
        return json.dumps(config, indent=2)  # JSON is YAML

    def _env(self) -> dict[str, str]:
        return {
            "MSWEA_CONFIGURED": "true",  # else its setup wizard starts
            "MSWEA_GLOBAL_CONFIG_DIR": HOME,
            "MSWEA_COST_TRACKING": "ignore_errors",  # unknown model names have no price in litellm
            "LITELLM_LOCAL_MODEL_COST_MAP": "True",  # no download of litellm's price list
            "MSWEA_SILENT_STARTUP": "1",
        }

    def config_files(self, ctx: AgentContext) -> dict[str, str]:
        return {CONFIG: self._config(ctx)}

    def send_task(self, ctx: AgentContext, prompt: str) -> AgentRun:
        model = "openai/" + self.model_id(ctx)  # litellm: OpenAI chat at api_base
        argv = [self.bin("mini"), "-y", "--exit-immediately", "-m", model, "-t", "{prompt}", "-c", "mini.yaml",
                "-c", CONFIG, "-o", TRAJECTORY]
        result, stdout, stderr = self.run(ctx, argv, self._env(), prompt)
        usage, status = self._trajectory(ctx)
        failed = ""
        if not result.timed_out and result.exit_code == 0 and status not in FINISHED:
            failed = f"mini-swe-agent ended with exit status {status or 'unknown (no trajectory)'}"
        return self.finish(result, stdout, stderr, usage, failed, ctx=ctx)

    def _trajectory(self, ctx: AgentContext) -> tuple[dict, str]:
        raw = ctx.workspace.read_file(TRAJECTORY)
        if not raw:
            return {}, ""
        try:
            traj = json.loads(raw)
        except ValueError:
            return {}, ""
        info = traj.get("info") or {}
        usage = {"input_tokens": 0, "output_tokens": 0, "cache_read_tokens": 0, "cache_write_tokens": 0}
        for message in traj.get("messages") or []:
            reported = ((message.get("extra") or {}).get("response") or {}).get("usage")
            if not isinstance(reported, dict):
                continue
            details = reported.get("prompt_tokens_details") or {}
            cached = int(details.get("cached_tokens") or 0)
            written = int(details.get("cache_write_tokens") or details.get("cache_creation_tokens") or 0)
            usage["input_tokens"] += int(reported.get("prompt_tokens") or 0) - cached - written
            usage["output_tokens"] += int(reported.get("completion_tokens") or 0)
            usage["cache_read_tokens"] += cached
            usage["cache_write_tokens"] += written
        stats = info.get("model_stats") or {}
        usage["requests"] = int(stats.get("api_calls") or 0)
        if stats.get("instance_cost"):
            usage["cost_usd"] = float(stats["instance_cost"])
        return usage, str(info.get("exit_status") or "")
