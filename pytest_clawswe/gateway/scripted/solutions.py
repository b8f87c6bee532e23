"""Scripted stand-ins for WildClawBench runs: the agent's model and the judge.

`scripted/gold` with a `solution` (a reference shell script: a task's solution/solve.sh, or a behaviour of
the user's own from --scripted-fixtures) acts it out through the harness's own shell tool, so a grader that
reads the transcript sees what was done and said (docs/fidelity.md, "Scripted behaviours"):
- each command of the script is one visible tool call, sent as written: a line, or the lines one command
  spans (a `\\` continuation, a heredoc, an `if`/`for`/`{ }` block, an open quote), as `bash -n` sees it;
- a line `#say <text>` is the agent's words: `#say` lines before a command are the text that comes with that
  tool call, those after the last command the final answer (default: one sentence saying it ran the script);
- comments, blank lines and `set -e`-style lines are not sent. Each command is its own shell call, in the
  task's workdir, so shell state (`cd`, variables) does not carry from one to the next: keep dependent lines
  in one command (`&&`, a `{ ... }` block, a heredoc).
`scripted/noop` finishes at once. `scripted/judge` answers a grader's judge request from the task's
fixtures: {"<text the request contains>": {"score", "reason", "when_contains": optional text, "otherwise":
optional {"score", "reason"}}}; the first key found in the request picks the criterion, and `when_contains`
(looked for in the request, e.g. in the agent's output the grader sent) picks between the answer and
`otherwise`; the key "*" answers whatever no other key matches; an entry with `"answer"` (text, or JSON
sent as text) is the reply verbatim, for graders that want their own shape. Images in the request (data URLs) are
accepted; an entry with `"needs_image": true` gives its answer only when the request carries one (else
`otherwise`), so a judged visual criterion fails when the grader sent no picture. `scripted/vision`
answers the agent's own model calls (a task's `OPENROUTER_*` tools token, e.g. "describe this frame")
from the task's vision fixtures in the same format, with `"answer"` (free text) instead of score and
reason. Like ScriptedModel, all are stateless: each reply is decided from the request.
"""
from __future__ import annotations

import functools
import json
import re
import shutil
import subprocess

from pytest_clawswe.model import JUDGE, VISION, Model
from pytest_clawswe.gateway.protocols import Reply, RequestView
from pytest_clawswe.gateway.scripted.responder import (
    HANG_MODE,
    MAX_TURNS,
    HangingModel,
    ScriptedModel,
    _shell_call,
    pick_shell,
)

JUDGE_MODE = JUDGE
VISION_MODE = VISION
ANY = "*"  # the fixture key that answers a request no other key matches
_IMAGE = re.compile(r"data:image/[\w.+-]+;base64,")
_SAY = re.compile(r"^\s*#\s*say\b:?\s?(.*)$")
_SET = re.compile(r"^set\s+[-+][a-zA-Z]+(\s+[-+]?o?\s*\w+)*\s*$")  # set -e, set -euo pipefail: no effect alone
FINAL_DEFAULT = "I ran the reference solution; the results are in place."


def _complete(text: str) -> bool:
    """Whether `text` is one or more complete shell commands: no trailing `\\`, and `bash -n` reaches no end
    of file inside a command (an open heredoc, block or quote)."""
    if re.search(r"(?<!\\)(\\\\)*\\\s*$", text):
        return False
    bash = shutil.which("bash")
    if bash is None:  # no bash where the gateway runs: line continuations are all we can see
        return True
    done = subprocess.run([bash, "-n"], input=text, capture_output=True, text=True, check=False)
    return not re.search(r"end.of.file|EOF", done.stderr)


@functools.lru_cache(maxsize=64)
def script_steps(script: str) -> tuple[tuple[tuple[str, str], ...], str]:
    """((words said with it, command) per tool call, the final answer) of a reference script."""
    steps: list[tuple[str, str]] = []
    said: list[str] = []
    chunk: list[str] = []
    for line in script.splitlines():
        if chunk:
            chunk.append(line)
        else:
            stripped = line.strip()
            say = _SAY.match(line)
            if say:
                said.append(say.group(1).rstrip())
                continue
            if not stripped or stripped.startswith("#") or _SET.match(stripped):
                continue
            chunk = [line]
        if _complete("\n".join(chunk)):
            steps.append(("\n".join(said), "\n".join(chunk)))
            said, chunk = [], []
    if chunk:  # a command the script never closes: sent as written, bash says what is wrong with it
        steps.append(("\n".join(said), "\n".join(chunk)))
        said = []
    return tuple(steps), "\n".join(said).strip()


class SolutionModel:
    """Acts out a reference script through the harness's shell tool (gold), or does nothing (noop)."""

    def __init__(self, mode: str, solution: str = "", workdir: str = "/tmp_workspace"):
        if mode not in ("gold", "noop"):
            raise ValueError(f"unknown scripted model mode {mode!r}: use gold or noop")
        if mode == "gold" and not solution.strip():
            raise ValueError("scripted/gold needs the task's reference solution, and the task has none")
        self.mode, self.solution, self.workdir = mode, solution, workdir

    def steps(self) -> list[tuple[str, str]]:
        return list(script_steps(self.solution)[0])

    def final_answer(self) -> str:
        return script_steps(self.solution)[1] or FINAL_DEFAULT

    def reply(self, view: RequestView) -> Reply:
        if self.mode == "noop":
            return Reply(text="I looked at the task and did nothing.")
        steps = self.steps()
        # one tool call per step, in order: the calls already in the conversation are the steps done
        done = view.tool_calls_made
        if done >= len(steps) or view.assistant_turns >= len(steps) + MAX_TURNS:
            return Reply(text=self.final_answer())
        shell = pick_shell(view.tools)
        if not shell:
            return Reply(text="I found no shell tool, so I did nothing.")
        words, command = steps[done]
        text, calls = _shell_call(shell, command, self.workdir)
        return Reply("\n\n".join(t for t in (words, text) if t), calls)


def pick(fixtures: dict, text: str) -> dict | None:
    """The fixture entry a request matches (the most specific key first), `otherwise` applied; else the "*"
    entry; None: neither."""
    for key in sorted(fixtures, key=len, reverse=True):
        if key != ANY and key in text:
            entry = fixtures[key]
            needle = entry.get("when_contains")
            missing = (needle is not None and needle not in text) or (entry.get("needs_image")
                                                                      and not _IMAGE.search(text))
            if missing:
                entry = entry.get("otherwise") or {"score": 0.0, "reason": "the expected content (or image) is missing"}
            return entry
    return fixtures.get(ANY)


def _check_fixtures(fixtures, what: str) -> dict:
    if not isinstance(fixtures, dict):
        raise ValueError(f"{Model.scripted(what).spec} needs the task's {what} fixtures as a JSON object")
    return fixtures


class ScriptedJudge:
    def __init__(self, fixtures: dict):
        self.fixtures = _check_fixtures(fixtures, "judge")

    def reply(self, view: RequestView) -> Reply:
        entry = pick(self.fixtures, view.prompt)
        if entry is None:
            return Reply(text=json.dumps({"score": 0.0, "reason": "no judge fixture matches this request"}))
        if entry.get("answer") and "score" not in entry:  # a grader that wants its own shape (several criteria in one JSON), verbatim
            answer = entry["answer"]
            return Reply(text=answer if isinstance(answer, str) else json.dumps(answer))
        answer = {"score": float(entry.get("score", 0.0)), "reason": str(entry.get("reason", ""))}
        return Reply(text=json.dumps(answer))


class ScriptedVision:
    """The agent's own model calls (vision and the like) answered from the task's vision fixtures."""

    def __init__(self, fixtures: dict):
        self.fixtures = _check_fixtures(fixtures, "vision")

    def reply(self, view: RequestView) -> Reply:
        entry = pick(self.fixtures, view.prompt)
        return Reply(text=str((entry or {}).get("answer") or "I cannot answer that from this request."))


def scripted_for(config: dict):
    """The scripted model a registration asks for: the WildClawBench ones when their keys are present,
    else the Claw-SWE-Bench ScriptedModel (gold patch)."""
    if config.get("mode") == HANG_MODE:
        return HangingModel()
    if config.get("mode") == JUDGE_MODE:
        return ScriptedJudge(config.get("fixtures") or {})
    if config.get("mode") == VISION_MODE:
        return ScriptedVision(config.get("fixtures") or {})
    if "solution" in config:
        return SolutionModel(config.get("mode", "noop"), config.get("solution") or "",
                             config.get("workdir") or "/tmp_workspace")
    return ScriptedModel.from_config(config)
