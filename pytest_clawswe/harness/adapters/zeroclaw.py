"""`zeroclaw`: ZeroClaw, a single Rust binary, run as `zeroclaw agent -m PROMPT` with the released settings.

No reachable registry carries it (PyPI's `zeroclaw` is an unrelated installer, npm has none), so its bundle
is built from the user's executable: `clawswe harness build zeroclaw --binary PATH` (the bundle's version is
the file's hash). The adapter runs the bundle's binary; with several zeroclaw bundles built, pick one with
`--harness-option version=...`.

Config: ZEROCLAW_WORKSPACE points at the per-instance agent home outside /testbed holding config.toml, the
released file key for key (settings.yaml: full autonomy, no sandbox, 300 tool iterations, 128k context,
xhigh thinking, no loop detection, 180 s shell timeout), with the gateway as the `custom:` provider and the
per-instance token. The released run sent model traffic through a proxy that keeps 7 tools, converts
Responses to Chat Completions and forces non-streaming: that shaping is the gateway's (issue 13 §4). The
wrapper kills it 120 s after the budget. Usage: the costs.jsonl it writes under its workspace, summed.

Not run end to end here: no zeroclaw binary was available on this machine (tests use a stub executable).
"""
from __future__ import annotations

import json
import shlex
from dataclasses import dataclass, field

from pytest_clawswe.engine.framing.framed import read_framed
from pytest_clawswe.harness.adapter import AgentContext, AgentRun, HarnessError
from pytest_clawswe.harness.adapters._bundled import BundledHarness, BundledOptions
from pytest_clawswe.harness.gateway_urls import openai_base_url

NO_BUNDLE = ("zeroclaw is on no package registry; build its bundle from your executable first: "
             "clawswe harness build zeroclaw --binary /path/to/zeroclaw")


def _toml(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return str(value)
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    return json.dumps(str(value))  # a TOML basic string is a JSON string


@dataclass
class ZeroClawOptions(BundledOptions):
    max_iterations: int = field(default=300, metadata={"help": "[agent] max_tool_iterations"})
    max_context_tokens: int = field(default=128_000, metadata={"help": "[agent] max_context_tokens"})
    reasoning_effort: str = field(default="xhigh", metadata={
        "help": "[agent.thinking] default-level and [runtime] reasoning-effort"})
    shell_timeout: int = field(default=180, metadata={"help": "seconds per shell command"})


class ZeroClawHarness(BundledHarness):
    name = "zeroclaw"
    bundle_name = "zeroclaw"
    Options = ZeroClawOptions
    grace_s = 120.0

    def default_version(self, recipe) -> str:
        from pytest_clawswe.engine.docker.client import docker_client
        from pytest_clawswe.errors import InfraError
        from pytest_clawswe.harness.bundles import built_versions

        try:
            versions = built_versions(docker_client(), self.bundle_name)
        except InfraError:
            versions = []
        if not versions:
            raise HarnessError(NO_BUNDLE)
        if len(versions) > 1:
            raise HarnessError(f"several zeroclaw bundles are built ({', '.join(versions)}); pick one with "
                               "--harness-option version=...")
        return versions[0]

    def config(self, ctx: AgentContext) -> str:
        o = self.opts
        provider = "custom:" + openai_base_url(ctx.gateway_url)
        tables = {
            "autonomy": {"level": "full", "allowed_commands": ["*"], "forbidden_paths": [], "workspace_only": False,
                         "block_high_risk_commands": False, "require_approval_for_medium_risk": False,
                         "max_actions_per_hour": 99999, "max_cost_per_day_cents": 999999,
                         "shell_timeout_secs": o.shell_timeout},
            "security.sandbox": {"enabled": False},
            "agent": {"max_tool_iterations": o.max_iterations, "max_context_tokens": o.max_context_tokens},
            "agent.thinking": {"default-level": o.reasoning_effort},
            "runtime": {"reasoning-effort": o.reasoning_effort},
            "pacing": {"loop_detection_enabled": False},
            "providers": {"fallback": provider},
            f"providers.models.{json.dumps(provider)}": {"api_key": ctx.gateway_token, "model": self.model_id(ctx),
                                                         "wire_api": "chat_completions", "timeout_secs": 300},
            "shell_tool": {"timeout_secs": o.shell_timeout},
        }
        lines = ["schema_version = 2"]
        for name, table in tables.items():
            lines += ["", f"[{name}]"] + [f"{k} = {_toml(v)}" for k, v in table.items()]
        return "\n".join(lines) + "\n"

    def config_files(self, ctx: AgentContext) -> dict[str, str]:
        return {f"{self.agent_home}/config.toml": self.config(ctx)}

    def argv(self, ctx: AgentContext) -> list[str]:
        return [self.bin("zeroclaw"), "agent", "-m", "{prompt}"]

    def send_task(self, ctx: AgentContext, prompt: str) -> AgentRun:
        env = {"ZEROCLAW_WORKSPACE": self.agent_home}
        result, stdout, stderr = self.run(ctx, self.argv(ctx), env, prompt)
        return self.finish(result, stdout, stderr, self._usage(ctx), ctx=ctx)

    def _usage(self, ctx: AgentContext) -> dict:
        found = read_framed(ctx.workspace, ["bash", "-c"],
                            f"find {shlex.quote(self.agent_home)} -name costs.jsonl -exec cat {{}} +",
                            what="reading zeroclaw's costs.jsonl")
        usage: dict = {}
        for line in found.stdout.splitlines():
            try:
                record = json.loads(line)
            except ValueError:
                continue
            if not isinstance(record, dict):
                continue
            record = record.get("usage") if isinstance(record.get("usage"), dict) else record
            for ours, theirs in (("input_tokens", "input_tokens"), ("output_tokens", "output_tokens"),
                                 ("cache_read_tokens", "cache_read_tokens"), ("cost_usd", "cost_usd")):
                if isinstance(record.get(theirs), (int, float)):
                    usage[ours] = usage.get(ours, 0) + record[theirs]
            usage["requests"] = usage.get("requests", 0) + 1
        return usage
