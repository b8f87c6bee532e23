"""`openclaw`: OpenClaw (npm openclaw), one per-instance agent run headless in the instance container.

The released setting (settings.yaml): a per-instance agent `swe-<instance id>` whose workspace is its own
folder /tmp/openclaw-swe-workspaces/<agent id> with OpenClaw's bootstrap files (AGENTS.md, SOUL.md, ...),
while the repository stays /testbed (the run's working directory); the tool deny-list; `openclaw agent
--agent ID --message PROMPT --timeout BUDGET --json`, killed by the wrapper 60 s after the budget.

Per-instance state: OPENCLAW_STATE_DIR=/tmp/clawswe-agent/openclaw/state, holding openclaw.json (the
config), the agent (agents/<id>/agent/openclaw-agent.sqlite: its sessions and transcript) and
state/openclaw.sqlite. The agent is declared in openclaw.json (agents.entries) rather than created with
`openclaw agents add`: the config is the same (checked against what `agents add --non-interactive` writes in
2026.9.6), and it saves a CLI start of 10-35 s per instance.

The model is a provider `clawswe` (api openai-completions) at the gateway's /v1; its apiKey is
`${CLAWSWE_GATEWAY_TOKEN}`, resolved by openclaw from the environment of the run, so no file holds the
token. `compat.supportsUsageInStreaming` makes openclaw ask for and read streamed usage (without it a
custom provider reports 0 tokens). `--local`: 2026.9.6 needs it when no OpenClaw gateway daemon runs (the
released version fell back to the embedded agent by itself). Its JSON result gives the stop reason
(meta.stopReason) and usage (meta.agentMeta.usage). A run takes ~30 s on 2 idle cores.
"""
from __future__ import annotations

import json
import re
import sqlite3
from dataclasses import dataclass, field
from pathlib import Path

from pytest_clawswe.harness.adapter import AgentContext, AgentRun, HarnessError
from pytest_clawswe.harness.adapters._bundled import BundledHarness, BundledOptions
from pytest_clawswe.harness.adapters._node_common import error_text, num, parse_json, reason, token_counts
from pytest_clawswe.harness.gateway_urls import openai_base_url

PROVIDER = "clawswe"
TOKEN_ENV = "CLAWSWE_GATEWAY_TOKEN"
WORKSPACE_ROOT = "/tmp/openclaw-swe-workspaces"  # the released per-instance agent workspaces
# The released deny-list, name for name, plus the 2026.9.6 names of two renamed tools: `image` (image
# inspection) is now `view_image`, and cron is also registered as `automations`.
TOOL_DENY = ("memory_search", "memory_get", "web_search", "web_fetch", "sessions_list", "sessions_history",
             "sessions_send", "sessions_yield", "sessions_spawn", "subagents", "session_status", "cron", "image",
             "view_image", "automations")
WORKSPACE_LINK = "/root/.openclaw/workspace"  # OpenClaw's default workspace folder in the released images
MESSAGE_ARG_MAX = 100_000  # Linux caps one argv string at 128 KiB: a longer prompt goes by --message-file


@dataclass
class OpenClawOptions(BundledOptions):
    context_window: int = field(default=128_000, metadata={"help": "the model's context window in tokens"})
    max_tokens: int = field(default=8_192, metadata={"help": "max output tokens per model call"})
    reasoning: bool = field(default=False, metadata={"help": "declare the model as a reasoning model"})
    bootstrap: bool = field(default=True, metadata={
        "help": "OpenClaw writes its bootstrap files into the agent workspace (released: true)"})
    workspace: str = field(default="per-instance", metadata={
        "help": "the agent's workspace: per-instance (released: its own folder) or workdir (the task's folder, "
                "also linked from /root/.openclaw/workspace, as the released WildClawBench runner does)"})
    thinking: str | None = field(default=None, metadata={
        "help": "agents.defaults.thinkingDefault, e.g. off, low, medium, high (the released WildClawBench "
                "runner's --thinking; default: not set, OpenClaw's own)"})
    tools_deny: str = field(default=",".join(TOOL_DENY), metadata={
        "help": "comma list of tools the agent may not use (default: the released Claw-SWE-Bench list; empty: "
                "OpenClaw's every tool)"})
    image_input: bool = field(default=False, metadata={
        "help": "the model takes images, and is OpenClaw's image model too (agents.defaults.imageModel)"})

    def __post_init__(self):
        if self.workspace not in ("per-instance", "workdir"):
            raise HarnessError(f"--harness-option workspace={self.workspace}: use per-instance or workdir")


class OpenClawHarness(BundledHarness):
    name = "openclaw"
    bundle_name = "openclaw"
    Options = OpenClawOptions
    grace_s = 60.0

    @property
    def tool_deny(self) -> tuple[str, ...]:
        return tuple(t.strip() for t in self.opts.tools_deny.split(",") if t.strip())

    @property
    def state_dir(self) -> str:
        return f"{self.agent_home}/state"

    @property
    def config_path(self) -> str:
        return f"{self.state_dir}/openclaw.json"

    @staticmethod
    def agent_id(ctx: AgentContext) -> str:
        # the released id, `swe-<instance id>` with dots as dashes, in openclaw's id alphabet
        return re.sub(r"[^a-z0-9_-]+", "-", f"swe-{ctx.instance_id}".lower())[:64]

    def agent_workspace(self, ctx: AgentContext) -> str:
        if self.opts.workspace == "workdir":
            return ctx.workdir
        return f"{WORKSPACE_ROOT}/{self.agent_id(ctx)}"

    def config(self, ctx: AgentContext) -> dict:
        o, model_id, agent = self.opts, self.model_id(ctx), self.agent_id(ctx)
        model = {
            "id": model_id, "name": model_id, "reasoning": o.reasoning,
            "input": ["text", "image"] if o.image_input else ["text"],
            "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0},  # the gateway prices runs
            "contextWindow": o.context_window, "maxTokens": o.max_tokens,
            "compat": {"supportsUsageInStreaming": True},
        }
        ref = f"{PROVIDER}/{model_id}"
        defaults: dict = {"skipBootstrap": not o.bootstrap, "model": {"primary": ref}}
        if o.image_input:  # released WildClawBench: imageModel.primary is the chat model
            defaults["imageModel"] = {"primary": ref}
        if o.thinking:
            defaults["thinkingDefault"] = o.thinking
        return {
            "models": {"mode": "replace", "providers": {PROVIDER: {
                "baseUrl": openai_base_url(ctx.gateway_url), "apiKey": "${%s}" % TOKEN_ENV,
                "api": "openai-completions", "models": [model]}}},
            "agents": {
                "defaults": defaults,
                "entries": {agent: {"name": agent, "workspace": self.agent_workspace(ctx),
                                    "agentDir": f"{self.state_dir}/agents/{agent}/agent",
                                    "identity": {"name": agent}, "model": ref}},
            },
            # released: the agent entry's tools.deny; 2026.9.6 applies the top-level list to every agent
            "tools": {"deny": list(self.tool_deny)},
            "update": {"checkOnStart": False},
            "telemetry": {"enabled": False},
        }

    def config_files(self, ctx: AgentContext) -> dict[str, str]:
        return {self.config_path: json.dumps(self.config(ctx), indent=2)}

    def create_agent(self, ctx: AgentContext) -> None:
        super().create_agent(ctx)
        if self.opts.workspace == "per-instance":
            ctx.workspace.exec(["rm", "-rf", self.agent_workspace(ctx)])
            ctx.workspace.exec(["mkdir", "-p", self.agent_workspace(ctx)], check=True)
        else:  # as the released WildClawBench runner: OpenClaw's default workspace folder is the task's folder
            ctx.workspace.exec(["bash", "-c", f"mkdir -p /root/.openclaw && rm -rf {WORKSPACE_LINK} && "
                                              f"ln -s {ctx.workdir} {WORKSPACE_LINK}"], check=True)

    def env(self, ctx: AgentContext) -> dict[str, str]:
        return {"OPENCLAW_STATE_DIR": self.state_dir, "OPENCLAW_CONFIG_PATH": self.config_path,
                TOKEN_ENV: ctx.gateway_token}

    def argv(self, ctx: AgentContext, prompt: str) -> list[str]:
        message = ["--message", "{prompt}"] if len(prompt.encode()) <= MESSAGE_ARG_MAX else \
            ["--message-file", "{prompt_file}"]
        # openclaw's own timeout is the budget; the wrapper kills it grace_s later
        return [self.bin("openclaw"), "agent", "--agent", self.agent_id(ctx), *message,
                "--timeout", str(ctx.deadline.harness_timeout()), "--json", "--local"]

    def run_openclaw(self, ctx: AgentContext, prompt: str):
        result, stdout, stderr = self.run(ctx, self.argv(ctx, prompt), self.env(ctx), prompt)
        return result, stdout, stderr, parse_json(stdout)

    def send_task(self, ctx: AgentContext, prompt: str) -> AgentRun:
        result, stdout, stderr, data = self.run_openclaw(ctx, prompt)
        return self.finish(result, stdout, stderr, harness_usage(data), failure(data), ctx=ctx)

    def backup_session(self, ctx: AgentContext, dest: Path) -> None:
        # the state dir holds no token (the config names an environment variable); sqlite files included
        super().backup_session(ctx, dest)
        if self.opts.workspace == "per-instance":  # the bootstrap files and anything else it put there
            ctx.workspace.copy_out(self.agent_workspace(ctx), dest / self.name)
        export_transcripts(dest / self.name / "state", dest / "transcript.jsonl")

    def delete_agent(self, ctx: AgentContext) -> None:
        super().delete_agent(ctx)
        if self.opts.workspace == "per-instance":
            ctx.workspace.exec(["rm", "-rf", self.agent_workspace(ctx)])


def failure(data: dict | None) -> str:
    """Why a run that exited 0 still failed, or ""."""
    if data is None:
        return "openclaw printed no JSON result"
    if data.get("ok") is False:  # e.g. {"ok": false, "error": {"type": "cli_error", "message": "... HTTP 401 ..."}}
        error = data.get("error")
        return reason(f"openclaw failed: {error_text(error) or 'no reason given'}")
    meta = data.get("meta") or {}
    stop = meta.get("stopReason") or (meta.get("completion") or {}).get("stopReason")
    if meta.get("aborted") or stop in ("error", "aborted"):
        error = meta.get("error") or meta.get("errorMessage") or stop
        return reason(f"openclaw's run ended with {error}")
    return ""


def harness_usage(data: dict | None) -> dict:
    if not data:
        return {}
    meta = data.get("meta") or {}
    agent = meta.get("agentMeta") or {}
    usage = agent.get("usage") or {}
    out = {
        **token_counts(usage, ("input", "output", "cacheRead", "cacheWrite")),
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
