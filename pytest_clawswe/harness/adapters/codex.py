"""`codex`: OpenAI Codex CLI (npm @openai/codex), one of the WildClawBench harnesses, run headless.

Run: `codex exec --json --dangerously-bypass-approvals-and-sandbox -C /testbed PROMPT </dev/null` in the
instance container (approvals off, no sandbox: the container is the sandbox).

Per-instance state: CODEX_HOME=/tmp/clawswe-agent/codex, holding config.toml (a model provider `clawswe` at
the gateway's /v1 with wire_api "responses"; env_key names CLAWSWE_GATEWAY_TOKEN, set only in the run's
environment, so no file holds the token), the rollout transcript sessions/Y/M/D/rollout-*.jsonl, its
SQLite state and a copy of its system skills. It also makes ~/.codex/tmp (outside /testbed) and warns
that it "could not create PATH aliases" under a temp dir: harmless. /testbed is untouched.

Usage: the JSONL events' `turn.completed.usage`. Codex's input_tokens is the whole prompt, cache reads
(cached_input_tokens) and writes (cache_write_input_tokens) included; harness_usage reports the uncached
part as input_tokens, like the gateway, and keeps codex's number as prompt_tokens.
"""
from __future__ import annotations

import json
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
from pytest_clawswe.harness.adapters._node_common import error_text, num, parse_jsonl, reason
from pytest_clawswe.harness.gateway_urls import openai_base_url

PROVIDER = "clawswe"
TOKEN_ENV = "CLAWSWE_GATEWAY_TOKEN"


def _toml(value) -> str:
    return json.dumps(value)  # a JSON string or number is a TOML basic string or number


@dataclass
class CodexOptions(BundledOptions):
    reasoning_effort: str | None = field(default=None, metadata={"help": "model_reasoning_effort (default: codex's)"})
    context_window: int | None = field(default=None, metadata={"help": "model_context_window (default: codex's)"})
    reasoning_summary: str = field(default="", metadata={
        "help": "model_reasoning_summary, e.g. none (default, empty: codex's)"})
    reasoning_summaries: bool | None = field(default=None, metadata={
        "help": "model_supports_reasoning_summaries (default: codex's)"})
    hide_reasoning: bool = field(default=False, metadata={"help": "hide_agent_reasoning"})


class CodexHarness(BundledHarness):
    name = "codex"
    skill_dirs = ("/root/.codex/skills", f"{STATE_ROOT}/codex/skills")
    inline_skills = True
    image_helper = True
    bundle_name = "codex"
    Options = CodexOptions

    def config(self, ctx: AgentContext) -> str:
        lines = [
            f"model = {_toml(self.model_id(ctx))}",
            f"model_provider = {_toml(PROVIDER)}",
            'approval_policy = "never"',
            'sandbox_mode = "danger-full-access"',
            "check_for_update_on_startup = false",
        ]
        if self.opts.reasoning_effort:
            lines.append(f"model_reasoning_effort = {_toml(self.opts.reasoning_effort)}")
        if self.opts.context_window:
            lines.append(f"model_context_window = {self.opts.context_window}")
        if self.opts.reasoning_summary:
            lines.append(f"model_reasoning_summary = {_toml(self.opts.reasoning_summary)}")
        if self.opts.reasoning_summaries is not None:
            lines.append(f"model_supports_reasoning_summaries = {str(self.opts.reasoning_summaries).lower()}")
        if self.opts.hide_reasoning:
            lines.append("hide_agent_reasoning = true")
        lines += [
            "",
            f"[model_providers.{PROVIDER}]",
            f"name = {_toml(PROVIDER)}",
            f"base_url = {_toml(openai_base_url(ctx.gateway_url))}",
            f"env_key = {_toml(TOKEN_ENV)}",
            'wire_api = "responses"',
        ]
        return "\n".join(lines) + "\n"

    def config_files(self, ctx: AgentContext) -> dict[str, str]:
        return {f"{self.agent_home}/config.toml": self.config(ctx)}

    def send_task(self, ctx: AgentContext, prompt: str) -> AgentRun:
        argv = [self.bin("codex"), "exec", "--json", "--dangerously-bypass-approvals-and-sandbox",
                "-C", ctx.workdir, "{prompt}"]
        env = {"CODEX_HOME": self.agent_home, TOKEN_ENV: ctx.gateway_token}
        result, stdout, stderr = self.run(ctx, argv, env, prompt)
        events = parse_jsonl(stdout)
        return self.finish(result, stdout, stderr, harness_usage(events), failure(events), ctx=ctx)

    def backup_session(self, ctx: AgentContext, dest: Path) -> None:
        # the transcript (rollout JSONL), the config (no token: env_key names a variable) and the CLI output;
        # not the copied system skills
        target = dest / self.name
        for name in ("sessions", "config.toml", STDOUT, STDERR, PROMPT):
            ctx.workspace.copy_out(f"{self.agent_home}/{name}", target)



def failure(events: list[dict]) -> str:
    """Why the run failed, or "" (codex reports transient "Reconnecting... n/5" errors and carries on)."""
    for event in events:
        if event.get("type") == "turn.failed":
            error = event.get("error") or {}
            return reason(f"codex's turn failed: {error_text(error) or 'no reason given'}")
    if not any(e.get("type") == "turn.completed" for e in events):
        errors = [e.get("message") for e in events if e.get("type") == "error" and e.get("message")]
        return reason(f"codex completed no turn{': ' + errors[-1] if errors else ''}")
    return ""


def harness_usage(events: list[dict]) -> dict:
    turns = [e.get("usage") or {} for e in events if e.get("type") == "turn.completed"]
    if not turns:
        return {}
    prompt = sum(num(u.get("input_tokens")) for u in turns)
    cached = sum(num(u.get("cached_input_tokens")) for u in turns)
    written = sum(num(u.get("cache_write_input_tokens")) for u in turns)
    return {
        "input_tokens": prompt - cached - written,
        "output_tokens": sum(num(u.get("output_tokens")) for u in turns),
        "cache_read_tokens": cached,
        "cache_write_tokens": written,
        "reasoning_tokens": sum(num(u.get("reasoning_output_tokens")) for u in turns),
        "prompt_tokens": prompt,
        "turns": len(turns),
        "commands": sum(1 for e in events if e.get("type") == "item.completed"
                        and (e.get("item") or {}).get("type") == "command_execution"),
    }
