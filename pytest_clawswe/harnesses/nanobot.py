"""`nanobot`: nanobot (PyPI nanobot-ai), one message, non-interactive, web tools off, iteration cap.

Run as `nanobot agent -m PROMPT -c CONFIG -w /testbed --no-markdown` inside the instance container, from the
bundle. Its workspace is /testbed, as in the paper, so its tools start there; it writes its templates into
the workspace (AGENTS.md, HEARTBEAT.md, SOUL.md, USER.md, memory/, prompts/, .nanobot/workspace-id): they
are `workspace_artifacts`, saved and scrubbed by the runner before the patch is collected.

Per-instance state: /tmp/clawswe-agent/nanobot (config.json; sessions/<hash>/<b64 key>.jsonl). Usage: the
session file's first line, metadata._last_usage (the one message's turn). nanobot counts input_tokens as the
whole prompt (cache reads and writes included); harness_usage reports the uncached part, like the gateway,
and keeps nanobot's number as prompt_tokens.
"""
from __future__ import annotations

import json
import shlex
from pathlib import Path

from ..gateway.client import openai_base_url
from ..harness import AgentRun, TaskContext
from ._bundled import STATE_ROOT, BundledHarness, agent_run, run_cli

HOME = f"{STATE_ROOT}/nanobot"
CONFIG = f"{HOME}/config.json"
MAX_TOOL_ITERATIONS = 300  # the same cap as hermes's turns (nanobot's default is 200)
MODEL_ERROR_PLACEHOLDER = "[Assistant reply unavailable due to model error.]"  # nanobot 0.3.5
TEMPLATE_FILES = ("AGENTS.md", "HEARTBEAT.md", "SOUL.md", "USER.md", "TOOLS.md")


class NanobotHarness(BundledHarness):
    name = "nanobot"
    bundle_name = "nanobot"
    workspace_artifacts = (*TEMPLATE_FILES, "memory", "prompts", "sessions", ".nanobot")  # 0.3.5 + the paper's list

    def _config(self, ctx: TaskContext) -> str:
        defaults = {
            "model": self.options.get("model_name") or ctx.model,
            "provider": "custom",
            "workspace": ctx.workdir,
            "timezone": "UTC",
            "maxToolIterations": int(self.options.get("max_iterations", MAX_TOOL_ITERATIONS)),
        }
        if self.options.get("max_tokens"):
            defaults["maxTokens"] = int(self.options["max_tokens"])
        config = {
            "agents": {"defaults": defaults},
            "providers": {"custom": {"apiKey": ctx.gateway_token, "apiBase": openai_base_url(ctx.gateway_url)}},
            "tools": {"web": {"enable": False}},  # no web_search / web_fetch
        }
        return json.dumps(config, indent=2)

    def create_agent(self, ctx: TaskContext) -> None:
        ctx.workspace.exec(["rm", "-rf", HOME])
        ctx.workspace.write_file(CONFIG, self._config(ctx), mode=0o600)

    def send_task(self, ctx: TaskContext, prompt: str) -> AgentRun:
        cmd = (f"{shlex.quote(self.bin('nanobot'))} agent -m \"$(cat {HOME}/prompt.txt)\" -c {CONFIG} "
               f"-w {shlex.quote(ctx.workdir)} --no-markdown </dev/null")
        result = run_cli(ctx, cmd, prompt=prompt, prompt_path=f"{HOME}/prompt.txt")
        usage, model_error = self._session(ctx)
        # nanobot exits 0 when the model call fails: it prints "Error: ..." and persists a placeholder reply
        failed = "nanobot's model call failed (see agent.log)" if model_error else ""
        return agent_run(result, usage, failed, name="nanobot")

    def _session(self, ctx: TaskContext) -> tuple[dict, bool]:
        """(usage from the session's metadata line, whether its last reply is nanobot's model-error placeholder)"""
        found = ctx.workspace.exec(f"cat {HOME}/sessions/*/*.jsonl 2>/dev/null")
        total: dict[str, int] = {}
        last_reply = ""
        for line in found.stdout.splitlines():
            try:
                record = json.loads(line)
            except ValueError:
                continue
            if record.get("role") == "assistant":
                last_reply = str(record.get("content") or "")
            if record.get("_type") != "metadata":
                continue
            last = (record.get("metadata") or {}).get("_last_usage") or {}
            for key in ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens", "request_count"):
                total[key] = total.get(key, 0) + int(last.get(key) or 0)
        model_error = last_reply.startswith(MODEL_ERROR_PLACEHOLDER)
        if not total:
            return {}, model_error
        prompt_tokens = total["input_tokens"]
        return {
            "input_tokens": prompt_tokens - total["cache_read_tokens"] - total["cache_write_tokens"],
            "output_tokens": total["output_tokens"],
            "cache_read_tokens": total["cache_read_tokens"],
            "cache_write_tokens": total["cache_write_tokens"],
            "requests": total["request_count"],
            "prompt_tokens": prompt_tokens,
        }, model_error

    def backup_session(self, ctx: TaskContext, dest: Path) -> None:
        ctx.workspace.copy_out(HOME, dest)  # config.json holds only the per-instance token

    def delete_agent(self, ctx: TaskContext) -> None:
        ctx.workspace.exec(["rm", "-rf", HOME])
