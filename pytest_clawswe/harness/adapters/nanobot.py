"""`nanobot`: nanobot (PyPI nanobot-ai) with the released settings (settings.yaml).

Run as `nanobot agent -m PROMPT -c CONFIG -w /testbed --no-markdown --logs` inside the instance container,
from the bundle (the released flags; the paper's text shows --no-logs, its code --logs); the wrapper kills it
120 s after the budget. Its workspace is /testbed, as released, so its tools start there; it writes its
templates into the workspace (AGENTS.md, HEARTBEAT.md, SOUL.md, TOOLS.md, USER.md, memory/, sessions/,
.nanobot/, and since 0.3.x prompts/): they are `workspace_artifacts`, saved and scrubbed by the runner
before the patch is collected.

Per-instance state: /tmp/clawswe-agent/nanobot (config.json; sessions/<hash>/<b64 key>.jsonl). Usage: the
session file's first line, metadata._last_usage (the one message's turn). nanobot counts input_tokens as the
whole prompt (cache reads and writes included); harness_usage reports the uncached part, like the gateway,
and keeps nanobot's number as prompt_tokens.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field

from pytest_clawswe.engine.framing.framed import read_framed
from pytest_clawswe.harness.adapter import AgentContext, AgentRun
from pytest_clawswe.harness.adapters._bundled import STATE_ROOT, BundledHarness, BundledOptions
from pytest_clawswe.harness.gateway_urls import openai_base_url

HOME = f"{STATE_ROOT}/nanobot"
CONFIG = f"{HOME}/config.json"
MODEL_ERROR_PLACEHOLDER = "[Assistant reply unavailable due to model error.]"  # nanobot 0.3.5
# the released clean-up list; prompts/ is what 0.3.x writes besides
TEMPLATE_FILES = ("AGENTS.md", "HEARTBEAT.md", "SOUL.md", "TOOLS.md", "USER.md")


@dataclass
class NanobotOptions(BundledOptions):
    max_iterations: int = field(default=300, metadata={"help": "agents.defaults.maxToolIterations"})
    max_tokens: int | None = field(default=None, metadata={"help": "agents.defaults.maxTokens (default: nanobot's)"})


class NanobotHarness(BundledHarness):
    name = "nanobot"
    bundle_name = "nanobot"
    Options = NanobotOptions
    grace_s = 120.0
    workspace_artifacts = (*TEMPLATE_FILES, "memory", "sessions", ".nanobot", "prompts")

    def config(self, ctx: AgentContext) -> dict:
        defaults = {"model": self.model_id(ctx), "provider": "custom", "workspace": ctx.workdir, "timezone": "UTC",
                    "maxToolIterations": self.opts.max_iterations}
        if self.opts.max_tokens:
            defaults["maxTokens"] = self.opts.max_tokens
        return {
            "agents": {"defaults": defaults},
            "providers": {"custom": {"apiKey": ctx.gateway_token, "apiBase": openai_base_url(ctx.gateway_url)}},
            "tools": {"web": {"enable": False}, "restrictToWorkspace": False},
        }

    def config_files(self, ctx: AgentContext) -> dict[str, str]:
        return {CONFIG: json.dumps(self.config(ctx), indent=2)}

    def argv(self, ctx: AgentContext) -> list[str]:
        return [self.bin("nanobot"), "agent", "-m", "{prompt}", "-c", CONFIG, "-w", ctx.workdir, "--no-markdown",
                "--logs"]

    def send_task(self, ctx: AgentContext, prompt: str) -> AgentRun:
        result, stdout, stderr = self.run(ctx, self.argv(ctx), {}, prompt)
        usage, model_error = self._session(ctx)
        # nanobot exits 0 when the model call fails: it prints "Error: ..." and persists a placeholder reply
        failed = "nanobot's model call failed (see agent.log)" if model_error else ""
        return self.finish(result, stdout, stderr, usage, failed, ctx=ctx)

    def _session(self, ctx: AgentContext) -> tuple[dict, bool]:
        """(usage from the session's metadata line, whether its last reply is nanobot's model-error placeholder)"""
        found = read_framed(ctx.workspace, ["bash", "-c"], f"cat {HOME}/sessions/*/*.jsonl 2>/dev/null",
                            what="reading nanobot's session files")
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
