"""`hermes`: Hermes Agent (PyPI hermes-agent) with the released settings (settings.yaml).

Run headless as `hermes chat -q PROMPT --quiet --yolo --max-turns 300 --toolsets terminal,file --model M`
(WildClawBench: `--toolsets all`, as its released runner's AIAgent gets every toolset)
inside the instance container, from the bundle; the wrapper kills it 120 s after the budget (hermes has no
overall timeout of its own). Not `hermes -z`: one-shot mode builds its agent with the fixed default of 90
iterations and ignores both --max-turns and agent.max_turns (checked in 0.19.0).

Per-instance state: HERMES_HOME=/tmp/clawswe-agent/hermes (config.yaml, state.db, logs/, SOUL.md, ...);
the workspace is untouched. config.yaml carries the released agent/terminal/compression/approvals/display
keys; the model is the gateway as a `custom` provider with the released api_mode and the provider's
context length. Its network-fetching command scanner (tirith, downloaded on first use) is off: no network.
Usage: hermes's own session store (state.db, table sessions) holds exactly what `-z --usage-file` writes;
the adapter saves it in that file's shape as session/usage.json and reports it as harness_usage.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field

from pytest_clawswe.harness.adapter import AgentContext, AgentRun
from pytest_clawswe.harness.adapters._bundled import STATE_ROOT, BundledHarness, BundledOptions
from pytest_clawswe.harness.gateway_urls import openai_base_url

HOME = f"{STATE_ROOT}/hermes"
USAGE_FILE = f"{HOME}/usage.json"
TOOLSETS = "terminal,file"  # Claw-SWE-Bench's; `all` is every toolset hermes has
# the released custom_providers' context_length by provider (model prefix); 200k otherwise (OpenRouter's)
CONTEXT_BY_PROVIDER = {"deepseek": 1_000_000, "dashscope": 262_144, "qwen": 262_144}
DEFAULT_CONTEXT = 200_000

# Reads hermes's session store with the bundle's Python and writes the `--usage-file` report for the run.
_USAGE_SCRIPT = """
import json, sqlite3, sys
db = sqlite3.connect(sys.argv[1])
db.row_factory = sqlite3.Row
rows = [dict(r) for r in db.execute("select * from sessions order by started_at")]
keys = ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens", "reasoning_tokens")
report = {k: sum(r.get(k) or 0 for r in rows) for k in keys}
report["api_calls"] = sum(r.get("api_call_count") or 0 for r in rows)
report["estimated_cost_usd"] = sum(r.get("estimated_cost_usd") or 0 for r in rows)
report["cost_status"] = ",".join(sorted({str(r.get("cost_status")) for r in rows}))
report["sessions"] = [{k: r.get(k) for k in ("id", "model", "model_config", "end_reason", "message_count",
                                              "tool_call_count")} for r in rows]
json.dump(report, open(sys.argv[2], "w"), indent=2)
"""


@dataclass
class HermesOptions(BundledOptions):
    max_turns: int = field(default=300, metadata={"help": "agent.max_turns and --max-turns"})
    reasoning_effort: str = field(default="high", metadata={"help": "agent.reasoning_effort"})
    terminal_timeout: int = field(default=180, metadata={"help": "terminal.timeout, seconds per command"})
    compression: bool = field(default=False, metadata={"help": "compression.enabled"})
    toolsets: str = field(default=TOOLSETS, metadata={
        "help": "--toolsets: a comma list, or all (every toolset, as the released WildClawBench runner's AIAgent)"})
    context_length: int | None = field(default=None, metadata={
        "help": "the model's context length (default: the released value of its provider)"})


def context_length(model: str) -> int:
    provider = model.split("/", 1)[0].lower()
    return next((n for key, n in CONTEXT_BY_PROVIDER.items() if provider.startswith(key)), DEFAULT_CONTEXT)


class HermesHarness(BundledHarness):
    name = "hermes"
    skill_dirs = ("/root/.hermes/skills", f"{STATE_ROOT}/hermes/skills")
    bundle_name = "hermes"
    Options = HermesOptions
    grace_s = 120.0

    def config(self, ctx: AgentContext) -> dict:
        o = self.opts
        model = {"provider": "custom", "base_url": openai_base_url(ctx.gateway_url), "default": self.model_id(ctx),
                 "api_key": ctx.gateway_token, "api_mode": "chat_completions",
                 # also spares hermes asking OpenRouter's public model list (~10 s of DNS on a locked network)
                 "context_length": o.context_length or context_length(ctx.model)}
        return {
            "model": model,
            "agent": {"max_turns": o.max_turns, "reasoning_effort": o.reasoning_effort},
            "terminal": {"backend": "local", "timeout": o.terminal_timeout},
            "compression": {"enabled": o.compression},
            "approvals": {"mode": "off"},
            "display": {"show_reasoning": False, "streaming": False},
            # tirith: else it downloads its command scanner binary; lazy installs: else a tool's first use pip-installs
            # its package into the bundle every instance shares (edge-tts for `--toolsets all`: ~70 s offline)
            "security": {"tirith_enabled": False, "allow_lazy_installs": False},
        }

    def config_files(self, ctx: AgentContext) -> dict[str, str]:
        return {f"{HOME}/config.yaml": json.dumps(self.config(ctx), indent=2)}  # JSON is YAML

    def argv(self, ctx: AgentContext) -> list[str]:
        return [self.bin("hermes"), "chat", "-q", "{prompt}", "--quiet", "--yolo", "--max-turns",
                str(self.opts.max_turns), "--toolsets", self.opts.toolsets, "--model", self.model_id(ctx), "--source", "tool"]

    def send_task(self, ctx: AgentContext, prompt: str) -> AgentRun:
        result, stdout, stderr = self.run(ctx, self.argv(ctx), {"HERMES_HOME": HOME}, prompt)
        return self.finish(result, stdout, stderr, self._usage(ctx), ctx=ctx)

    def _usage(self, ctx: AgentContext) -> dict:
        python = f"{self.home}/python/bin/python3"
        done = ctx.workspace.exec([python, "-I", "-c", _USAGE_SCRIPT, f"{HOME}/state.db", USAGE_FILE])
        raw = ctx.workspace.read_file(USAGE_FILE) if done.exit_code == 0 else None
        if not raw:
            return {}
        report = json.loads(raw)
        usage = {k: int(report.get(k) or 0) for k in
                 ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens")}
        usage["requests"] = int(report.get("api_calls") or 0)
        if report.get("estimated_cost_usd") and "unknown" not in report.get("cost_status", ""):
            usage["cost_usd"] = float(report["estimated_cost_usd"])
        return usage
