"""`openclaw`: OpenClaw (npm openclaw), one per-instance agent run headless in the instance container.

The paper's setting: a per-instance agent with its own state, a tool deny-list (memory, web, sessions,
sub-agents, session status, cron, image) and no bootstrap files written into /testbed.

Per-instance state: OPENCLAW_STATE_DIR=/tmp/clawswe-agent/openclaw/state, holding openclaw.json (the
config), the agent `bench` (agents/bench/agent/openclaw-agent.sqlite: its sessions and transcript) and
state/openclaw.sqlite. The agent is declared in openclaw.json (agents.entries.bench, workspace /testbed,
agents.defaults.skipBootstrap) rather than created with `openclaw agents add`: the config is the same
(checked against what `agents add --non-interactive` writes in 2026.9.6), and it saves a CLI start of
10-35 s per instance. skipBootstrap keeps AGENTS.md, SOUL.md, ... out of /testbed (checked).

The model is a provider `clawswe` (api openai-completions) at the gateway's /v1; its apiKey is
`${CLAWSWE_GATEWAY_TOKEN}`, resolved by openclaw from the environment of the run, so no file holds the
token. `compat.supportsUsageInStreaming` makes openclaw ask for and read streamed usage (without it a
custom provider reports 0 tokens). Run: `openclaw agent --agent bench --message-file F --json --local`
(`--local`: the embedded agent, no OpenClaw gateway daemon). Its JSON result gives the stop reason
(meta.stopReason) and usage (meta.agentMeta.usage). A run takes ~30 s on 2 idle cores, most of it
openclaw preparing its prompt and tools.
"""
from __future__ import annotations

import json
import math
import sqlite3
from pathlib import Path

from ..gateway.client import openai_base_url
from ..harness import AgentRun, TaskContext
from ._bundled import STATE_ROOT, BundledHarness
from ._node_common import finish, num, parse_json, run_headless

AGENT_ID = "bench"
PROVIDER = "clawswe"
TOKEN_ENV = "CLAWSWE_GATEWAY_TOKEN"
# The paper's deny-list (Appendix C) in 2026.9.6's tool names: group:sessions covers sessions_*, subagents
# and session_status; `image` (image inspection) is now `view_image`; cron is also called automations.
TOOL_DENY = ("group:memory", "group:web", "group:sessions", "subagents", "session_status", "cron",
             "automations", "view_image", "image")
CONTEXT_WINDOW = 128_000
MAX_TOKENS = 8_192


class OpenClawHarness(BundledHarness):
    name = "openclaw"
    bundle_name = "openclaw"
    tool_deny: tuple[str, ...] = TOOL_DENY

    @property
    def agent_home(self) -> str:
        return f"{STATE_ROOT}/{self.name}"

    @property
    def state_dir(self) -> str:
        return f"{self.agent_home}/state"

    @property
    def config_path(self) -> str:
        return f"{self.state_dir}/openclaw.json"

    def config(self, ctx: TaskContext) -> dict:
        model_id = self.options.get("model_name") or ctx.model
        model = {
            "id": model_id, "name": model_id,
            "reasoning": str(self.options.get("reasoning", "")).lower() in ("1", "true", "yes"),
            "input": ["text"],
            "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0},  # the gateway prices runs
            "contextWindow": int(self.options.get("context_window", CONTEXT_WINDOW)),
            "maxTokens": int(self.options.get("max_tokens", MAX_TOKENS)),
            "compat": {"supportsUsageInStreaming": True},
        }
        ref = f"{PROVIDER}/{model_id}"
        return {
            "models": {"mode": "replace", "providers": {PROVIDER: {
                "baseUrl": openai_base_url(ctx.gateway_url), "apiKey": "${%s}" % TOKEN_ENV,
                "api": "openai-completions", "models": [model]}}},
            "agents": {
                "defaults": {"skipBootstrap": True, "model": {"primary": ref}},
                "entries": {AGENT_ID: {"name": AGENT_ID, "workspace": ctx.workdir,
                                       "agentDir": f"{self.state_dir}/agents/{AGENT_ID}/agent",
                                       "identity": {"name": AGENT_ID}, "model": ref}},
            },
            "tools": {"deny": list(self.tool_deny)},
            "update": {"checkOnStart": False},
            "telemetry": {"enabled": False},
        }

    def create_agent(self, ctx: TaskContext) -> None:
        ctx.workspace.exec(["rm", "-rf", self.agent_home], check=True)
        ctx.workspace.write_file(self.config_path, json.dumps(self.config(ctx), indent=2), mode=0o600)

    def env(self, ctx: TaskContext) -> dict[str, str]:
        return {"OPENCLAW_STATE_DIR": self.state_dir, "OPENCLAW_CONFIG_PATH": self.config_path,
                TOKEN_ENV: ctx.gateway_token}

    def run_openclaw(self, ctx: TaskContext, prompt: str):
        # openclaw's own turn timeout (default 600 s) must not end the run before the budget does
        argv = [self.bin("openclaw"), "agent", "--agent", AGENT_ID, "--message-file", "{prompt_file}",
                "--json", "--local", "--timeout", str(math.ceil(ctx.budget_s) + 60)]
        result, stdout, stderr = run_headless(ctx, self.agent_home, argv, self.env(ctx), prompt)
        return result, stdout, stderr, parse_json(stdout)

    def send_task(self, ctx: TaskContext, prompt: str) -> AgentRun:
        result, stdout, stderr, data = self.run_openclaw(ctx, prompt)
        usage = harness_usage(data)
        return finish("openclaw", result, stdout, stderr, usage, failure(data))

    def backup_session(self, ctx: TaskContext, dest: Path) -> None:
        # the state dir holds no token (the config names an environment variable); sqlite files included
        ctx.workspace.copy_out(self.agent_home, dest)
        export_transcripts(dest / self.name / "state", dest / "transcript.jsonl")

    def delete_agent(self, ctx: TaskContext) -> None:
        ctx.workspace.exec(["rm", "-rf", self.agent_home])


def failure(data: dict | None) -> str:
    """Why a run that exited 0 still failed, or ""."""
    if data is None:
        return "openclaw printed no JSON result"
    if data.get("ok") is False:  # e.g. {"ok": false, "error": {"type": "cli_error", "message": "... HTTP 401 ..."}}
        error = data.get("error")
        message = error.get("message") if isinstance(error, dict) else error
        return f"openclaw failed: {message or 'no reason given'}"[:300]
    meta = data.get("meta") or {}
    stop = meta.get("stopReason") or (meta.get("completion") or {}).get("stopReason")
    if meta.get("aborted") or stop in ("error", "aborted"):
        error = meta.get("error") or meta.get("errorMessage") or stop
        return f"openclaw's run ended with {error}"[:300]
    return ""


def harness_usage(data: dict | None) -> dict:
    if not data:
        return {}
    meta = data.get("meta") or {}
    agent = meta.get("agentMeta") or {}
    usage = agent.get("usage") or {}
    out = {
        "input_tokens": num(usage.get("input")),
        "output_tokens": num(usage.get("output")),
        "cache_read_tokens": num(usage.get("cacheRead")),
        "cache_write_tokens": num(usage.get("cacheWrite")),
        "turns": num(agent.get("assistantTurns")),
        "tool_calls": num((meta.get("toolSummary") or {}).get("calls")),
        "stop_reason": meta.get("stopReason") or "",
    }
    cost = (usage.get("cost") or {}).get("total")
    if cost:
        out["cost_usd"] = float(cost)
    if not usage:
        out["usage_reported"] = False
    return out


def final_text(data: dict | None) -> str:
    """The agent's final answer."""
    if not data:
        return ""
    meta = data.get("meta") or {}
    text = meta.get("finalAssistantVisibleText") or meta.get("finalAssistantRawText")
    if text:
        return text
    return "\n".join(p.get("text") or "" for p in data.get("payloads") or [] if isinstance(p, dict))


def export_transcripts(state: Path, dest: Path) -> None:
    """The agents' transcripts (stored in SQLite) as JSON lines beside the raw files; best effort."""
    lines = []
    for db in sorted(state.glob("agents/*/agent/openclaw-agent.sqlite")):
        try:
            con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
            try:
                rows = con.execute("select session_id, seq, event_json from transcript_events "
                                   "order by session_id, seq").fetchall()
            finally:
                con.close()
        except sqlite3.Error:
            continue
        for session, seq, event in rows:
            lines.append(event if event else json.dumps({"session_id": session, "seq": seq, "compressed": True}))
    if lines:
        dest.write_text("\n".join(lines) + "\n")
