"""Helpers shared by the Node-based adapters (openclaw, bare, codex, claude-code).

Each CLI runs headless in the workdir with stdout and stderr kept apart in files under the adapter's state
folder (outside /testbed), so its JSON output parses cleanly; the budget is enforced by Workspace.exec,
which kills every process in the container at the deadline.
"""
from __future__ import annotations

import json
import shlex

from ..harness import AgentRun, TaskContext
from ..workspace import ExecResult
from ._bundled import run_cli

STDOUT = "stdout.txt"
STDERR = "stderr.txt"
PROMPT = "prompt.txt"


def run_headless(ctx: TaskContext, home: str, argv: list[str], env: dict[str, str],
                 prompt: str) -> tuple[ExecResult, str, str]:
    """Write the prompt to home/prompt.txt, run argv (where "{prompt}" stands for the prompt's text and
    "{prompt_file}" for its path) until it exits or the budget ends; return (result, stdout, stderr)."""
    prompt_path = f"{home}/{PROMPT}"
    words = []
    for arg in argv:
        if arg == "{prompt}":
            words.append(f'"$(cat {shlex.quote(prompt_path)})"')
        else:
            words.append(shlex.quote(arg.replace("{prompt_file}", prompt_path)))
    out, err = f"{home}/{STDOUT}", f"{home}/{STDERR}"
    cmd = f"{' '.join(words)} </dev/null >{shlex.quote(out)} 2>{shlex.quote(err)}"
    result = run_cli(ctx, cmd, env=env, prompt=prompt, prompt_path=prompt_path)
    stdout = (ctx.workspace.read_file(out) or b"").decode("utf-8", "replace")
    stderr = (ctx.workspace.read_file(err) or b"").decode("utf-8", "replace")
    return result, stdout, stderr


def agent_log(stdout: str, stderr: str) -> str:
    text = stdout.rstrip("\n") + "\n" if stdout else ""
    if stderr:
        text += "--- stderr ---\n" + stderr.rstrip("\n") + "\n"
    return text


def last_line(text: str, default: str = "no output") -> str:
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return (lines[-1] if lines else default)[:300]


def finish(name: str, result: ExecResult, stdout: str, stderr: str, usage: dict, failed: str = "") -> AgentRun:
    """timeout when the budget ended the run, error when the CLI failed (exit code, or `failed`: why a run
    that exited 0 still failed, in a sentence), else stop."""
    output = agent_log(stdout, stderr)
    if result.timed_out:
        return AgentRun("timeout", output, None, usage, f"{name} was stopped at the budget")
    if result.exit_code != 0:
        why = failed or last_line(stderr or stdout)
        return AgentRun("error", output, result.exit_code, usage, f"{name} exited with code {result.exit_code}: {why}")
    if failed:
        return AgentRun("error", output, 0, usage, failed)
    return AgentRun("stop", output, 0, usage)


def parse_json(text: str) -> dict | None:
    """The JSON object a CLI printed, tolerating lines of noise before it."""
    text = text.strip()
    for start in (0, text.find("{")):
        if start < 0:
            break
        try:
            value = json.loads(text[start:])
        except ValueError:
            continue
        return value if isinstance(value, dict) else None
    return None


def parse_jsonl(text: str) -> list[dict]:
    events = []
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("{"):
            try:
                events.append(json.loads(line))
            except ValueError:
                continue
    return events


def num(value) -> int:
    try:
        return int(value or 0)
    except (TypeError, ValueError):
        return 0
