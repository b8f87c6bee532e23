"""`hermes`: Hermes Agent (PyPI hermes-agent), the paper's settings: toolsets terminal,file, --yolo, 300 turns.

Run headless as `hermes chat -q PROMPT -Q --yolo --toolsets terminal,file --max-turns 300` inside the
instance container, from the bundle. Not `hermes -z`: one-shot mode builds its agent with the fixed default
of 90 iterations and ignores both --max-turns and agent.max_turns, so the paper's 300 turns need chat mode
(checked in 0.19.0: the session row records max_iterations 90 under -z, 300 here).

Per-instance state: HERMES_HOME=/tmp/clawswe-agent/hermes (config.yaml, state.db, logs/, SOUL.md, ...);
the workspace is untouched. Its network-fetching command scanner (tirith, downloaded on first use) is off.
Usage: hermes's own session store (state.db, table sessions) holds exactly what `-z --usage-file` writes;
the adapter saves it in that file's shape as session/usage.json and reports it as harness_usage.
"""
from __future__ import annotations

import json
import shlex
from pathlib import Path

from ..gateway.client import openai_base_url
from ..harness import AgentRun, TaskContext
from ._bundled import STATE_ROOT, BundledHarness, agent_run, run_cli

HOME = f"{STATE_ROOT}/hermes"
USAGE_FILE = f"{HOME}/usage.json"
MAX_TURNS = 300
TOOLSETS = "terminal,file"
SCRIPTED_CONTEXT = 200_000

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


class HermesHarness(BundledHarness):
    name = "hermes"
    bundle_name = "hermes"

    def _config(self, ctx: TaskContext) -> str:
        model = {"provider": "custom", "base_url": openai_base_url(ctx.gateway_url),
                 "default": self.options.get("model_name") or ctx.model, "api_key": ctx.gateway_token}
        # Else hermes asks the endpoint (the gateway gives no context length), then OpenRouter's public model
        # list: on the locked network that lookup waits ~10 s for DNS and falls back to 200k. A scripted
        # model has no real window, so it gets 200k at once.
        context = self.options.get("context_length") or (SCRIPTED_CONTEXT if ctx.model.startswith("scripted/") else None)
        if context:
            model["context_length"] = int(context)
        config = {
            "model": model,
            "agent": {"max_turns": MAX_TURNS},
            "security": {"tirith_enabled": False},  # else it downloads the tirith scanner binary
        }
        return json.dumps(config, indent=2)  # JSON is YAML

    def create_agent(self, ctx: TaskContext) -> None:
        ctx.workspace.exec(["rm", "-rf", HOME])
        ctx.workspace.write_file(f"{HOME}/config.yaml", self._config(ctx), mode=0o600)

    def send_task(self, ctx: TaskContext, prompt: str) -> AgentRun:
        cmd = (f"{shlex.quote(self.bin('hermes'))} chat -q \"$(cat {HOME}/prompt.txt)\" -Q --yolo "
               f"--toolsets {TOOLSETS} --max-turns {MAX_TURNS} --source tool </dev/null")
        result = run_cli(ctx, cmd, env={"HERMES_HOME": HOME}, prompt=prompt, prompt_path=f"{HOME}/prompt.txt")
        usage = self._usage(ctx)
        return agent_run(result, usage, name="hermes")

    def _usage(self, ctx: TaskContext) -> dict:
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

    def backup_session(self, ctx: TaskContext, dest: Path) -> None:
        ctx.workspace.copy_out(HOME, dest)  # config.yaml holds only the per-instance token, revoked by now

    def delete_agent(self, ctx: TaskContext) -> None:
        ctx.workspace.exec(["rm", "-rf", HOME])
