"""`claude-code`: Claude Code (npm @anthropic-ai/claude-code, a native binary), one of the WildClawBench
harnesses, run headless: `claude -p PROMPT --output-format json --dangerously-skip-permissions --model M`.

Environment of the run: ANTHROPIC_BASE_URL = the gateway, ANTHROPIC_API_KEY = the per-instance token,
IS_SANDBOX=1 (needed as root with --dangerously-skip-permissions), CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1,
DISABLE_AUTOUPDATER=1.

Per-instance state: CLAUDE_CONFIG_DIR=/tmp/clawswe-agent/claude-code/config (.claude.json, backups/,
plugins/ and the transcript projects/-testbed/<session>.jsonl). HOME is left alone on purpose: the agent's
Bash tool inherits the environment, and toolchains keep state under ~ (~/.cargo, ~/go, ~/.m2, ~/.gradle,
...); with CLAUDE_CONFIG_DIR set, Claude Code writes nothing under ~ (checked in 2.1.330) nor in /testbed.

Usage: the JSON result's `usage` (Anthropic's convention: input_tokens excludes cache reads and writes)
and total_cost_usd, which Claude Code computes from its own default prices even for an unknown model.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from pytest_clawswe.harness.adapter import AgentContext, AgentRun
from pytest_clawswe.harness.adapters._bundled import (
    PROMPT,
    STATE_ROOT,
    STDERR,
    STDOUT,
    BundledHarness,
    BundledOptions,
)
from pytest_clawswe.harness.adapters._node_common import num, parse_json, reason, token_counts
from pytest_clawswe.harness.gateway_urls import anthropic_base_url


@dataclass
class ClaudeCodeOptions(BundledOptions):
    max_turns: int | None = field(default=None, metadata={"help": "--max-turns (default: no limit)"})
    # the released WildClawBench runner turns these three off (its environment's DISABLE_* variables)
    prompt_caching: bool = field(default=True, metadata={"help": "false: DISABLE_PROMPT_CACHING=1"})
    interleaved_thinking: bool = field(default=True, metadata={"help": "false: DISABLE_INTERLEAVED_THINKING=1"})
    experimental_betas: bool = field(default=True, metadata={
        "help": "false: CLAUDE_CODE_DISABLE_EXPERIMENTAL_BETAS=1"})


class ClaudeCodeHarness(BundledHarness):
    name = "claude-code"
    skill_dirs = ("/root/.claude/skills", f"{STATE_ROOT}/claude-code/config/skills")
    bundle_name = "claude-code"
    Options = ClaudeCodeOptions

    @property
    def config_dir(self) -> str:
        return f"{self.agent_home}/config"

    def create_agent(self, ctx: AgentContext) -> None:
        super().create_agent(ctx)
        ctx.workspace.exec(["mkdir", "-p", self.config_dir], check=True)

    def env(self, ctx: AgentContext) -> dict[str, str]:
        return {
            "CLAUDE_CONFIG_DIR": self.config_dir,
            "ANTHROPIC_BASE_URL": anthropic_base_url(ctx.gateway_url),
            "ANTHROPIC_API_KEY": ctx.gateway_token,
            "IS_SANDBOX": "1",
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
            "DISABLE_AUTOUPDATER": "1",
            "DISABLE_TELEMETRY": "1",
            "DISABLE_ERROR_REPORTING": "1",
            **({} if self.opts.prompt_caching else {"DISABLE_PROMPT_CACHING": "1"}),
            **({} if self.opts.interleaved_thinking else {"DISABLE_INTERLEAVED_THINKING": "1"}),
            **({} if self.opts.experimental_betas else {"CLAUDE_CODE_DISABLE_EXPERIMENTAL_BETAS": "1"}),
        }

    def send_task(self, ctx: AgentContext, prompt: str) -> AgentRun:
        model = self.model_id(ctx)
        argv = [self.bin("claude"), "-p", "{prompt}", "--output-format", "json",
                "--dangerously-skip-permissions", "--model", model]
        if self.opts.max_turns:
            argv += ["--max-turns", str(self.opts.max_turns)]
        result, stdout, stderr = self.run(ctx, argv, self.env(ctx), prompt)
        data = parse_json(stdout)
        return self.finish(result, stdout, stderr, harness_usage(data), failure(data), name="claude", ctx=ctx)

    def backup_session(self, ctx: AgentContext, dest: Path) -> None:
        # transcripts and the CLI output; .claude.json holds no key (the key came from the environment)
        target = dest / self.name
        for name in ("config", STDOUT, STDERR, PROMPT):
            ctx.workspace.copy_out(f"{self.agent_home}/{name}", target)



def failure(data: dict | None) -> str:
    """Why a run that exited 0 still failed, or ""."""
    if data is None:
        return "claude printed no JSON result"
    if data.get("is_error") or str(data.get("subtype", "")).startswith("error_during"):
        detail = data.get("api_error_status") or data.get("result") or data.get("subtype") or "an error"
        return reason(f"claude ended with {detail}")
    return ""


def harness_usage(data: dict | None) -> dict:
    if not data:
        return {}
    usage = data.get("usage") or {}
    out = {
        **token_counts(usage, ("input_tokens", "output_tokens", "cache_read_input_tokens",
                               "cache_creation_input_tokens")),
        "turns": num(data.get("num_turns")),
        "subtype": data.get("subtype") or "",
        "stop_reason": data.get("stop_reason") or "",
    }
    if data.get("total_cost_usd") is not None:
        out["cost_usd"] = float(data["total_cost_usd"])  # Claude Code's own prices, not the run's
    return out
