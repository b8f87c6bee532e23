"""`zeroclaw`: ZeroClaw, a single Rust binary, run as `zeroclaw agent -m PROMPT` (the paper's setting).

No reachable registry carries it (PyPI's `zeroclaw` is an unrelated installer, npm has none), so the user
supplies the executable: `--harness-option binary=/path/to/zeroclaw` or CLAWSWE_ZEROCLAW_BINARY. It must
run on the instance images (static, or glibc <= 2.31 for the bullseye-based ones). It is copied into each
instance container at create_agent; no bundle is needed.

Config, per its documented reference (docs/config-reference.md, docs/custom-providers.md): ZEROCLAW_WORKSPACE
points at a per-instance dir outside /testbed holding config.toml: the gateway as a `custom:` OpenAI-compatible
provider with the per-instance token, 300 tool iterations, full autonomy (no approval prompts, commands
outside its workspace allowed), cost tracking on (its per-turn costs.jsonl). Usage: any costs.jsonl it
writes under that dir, summed.

Not run end to end here: no zeroclaw binary was available on this machine.
"""
from __future__ import annotations

import json
import os
import shlex
from pathlib import Path

from ..gateway.client import openai_base_url
from ..harness import AgentRun, Harness, HarnessError, TaskContext
from ._bundled import STATE_ROOT, agent_run, run_cli

HOME = f"{STATE_ROOT}/zeroclaw"
BIN_DIR = f"{STATE_ROOT}/bin"
ENV_BINARY = "CLAWSWE_ZEROCLAW_BINARY"
MAX_TOOL_ITERATIONS = 300
MISSING = ("zeroclaw is on no package registry; pass --harness-option binary=/path/to/zeroclaw "
           f"or set {ENV_BINARY}")


def _toml(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return str(value)
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    return json.dumps(str(value))  # a TOML basic string is a JSON string


class ZeroClawHarness(Harness):
    name = "zeroclaw"

    def __init__(self, model: str = "", options: dict | None = None):
        super().__init__(model, options)
        binary = self.options.get("binary") or os.environ.get(ENV_BINARY)
        if not binary:
            raise HarnessError(MISSING)
        path = Path(binary).expanduser()
        if not path.is_file():
            raise HarnessError(f"zeroclaw binary {binary}: no such file")
        if not os.access(path, os.X_OK):
            raise HarnessError(f"zeroclaw binary {binary} is not executable (chmod +x it)")
        self.binary = path.resolve()

    def _config(self, ctx: TaskContext) -> str:
        top = {
            "default_provider": "custom:" + openai_base_url(ctx.gateway_url),
            "api_key": ctx.gateway_token,
            "default_model": self.options.get("model_name") or ctx.model,
        }
        sections = {
            "agent": {"max_tool_iterations": int(self.options.get("max_iterations", MAX_TOOL_ITERATIONS))},
            "autonomy": {"level": "full", "workspace_only": False, "allowed_commands": ["*"],
                         "block_high_risk_commands": False, "require_approval_for_medium_risk": False,
                         "max_actions_per_hour": 100000, "max_cost_per_day_cents": 100000000},
            "cost": {"enabled": True, "daily_limit_usd": 1e6, "monthly_limit_usd": 1e6},
            "browser": {"enabled": False},
            "http_request": {"enabled": False},
            "skills": {"open_skills_enabled": False},
        }
        lines = [f"{k} = {_toml(v)}" for k, v in top.items()]
        for name, table in sections.items():
            lines += ["", f"[{name}]"] + [f"{k} = {_toml(v)}" for k, v in table.items()]
        return "\n".join(lines) + "\n"

    def create_agent(self, ctx: TaskContext) -> None:
        ws = ctx.workspace
        ws.exec(["rm", "-rf", HOME])
        ws.write_file(f"{BIN_DIR}/zeroclaw", self.binary.read_bytes(), mode=0o755)
        ws.write_file(f"{HOME}/config.toml", self._config(ctx), mode=0o600)

    def send_task(self, ctx: TaskContext, prompt: str) -> AgentRun:
        cmd = f"{BIN_DIR}/zeroclaw agent -m \"$(cat {HOME}/prompt.txt)\" </dev/null"
        env = {"ZEROCLAW_WORKSPACE": HOME, "ZEROCLAW_OPEN_SKILLS_ENABLED": "false"}
        result = run_cli(ctx, cmd, env=env, prompt=prompt, prompt_path=f"{HOME}/prompt.txt")
        return agent_run(result, self._usage(ctx))

    def _usage(self, ctx: TaskContext) -> dict:
        found = ctx.workspace.exec(f"find {shlex.quote(HOME)} -name costs.jsonl -exec cat {{}} +")
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

    def backup_session(self, ctx: TaskContext, dest: Path) -> None:
        ctx.workspace.copy_out(HOME, dest)

    def delete_agent(self, ctx: TaskContext) -> None:
        ctx.workspace.exec(["rm", "-rf", HOME, BIN_DIR])
