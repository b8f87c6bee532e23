"""Scripted stand-ins for WildClawBench runs: the agent's model and the judge.

`scripted/gold` with a `solution` (a task's reference shell script) drives the harness's own shell tool to
run it in the task's workdir, then finishes; `scripted/noop` finishes at once. `scripted/judge` answers a
grader's judge request from the task's fixtures: {"<text the request contains>": {"score", "reason",
"when_contains": optional text, "otherwise": optional {"score", "reason"}}}; the first key found in the
request picks the criterion, and `when_contains` (looked for in the request, e.g. in the agent's output
the grader sent) picks between the answer and `otherwise`. Images in the request (data URLs) are
accepted; an entry with `"needs_image": true` gives its answer only when the request carries one (else
`otherwise`), so a judged visual criterion fails when the grader sent no picture. `scripted/vision`
answers the agent's own model calls (a task's `OPENROUTER_*` tools token, e.g. "describe this frame")
from the task's vision fixtures in the same format, with `"answer"` (free text) instead of score and
reason. Like ScriptedModel, all are stateless: each reply is decided from the request.
"""
from __future__ import annotations

import base64
import hashlib
import json
import re

from .protocols import Reply, RequestView
from .scripted import CHUNK_CHARS, HANG_MODE, MAX_TURNS, HangingModel, ScriptedModel, Step, _shell_call, pick_shell

JUDGE_MODE = "judge"
VISION_MODE = "vision"
_IMAGE = re.compile(r"data:image/[\w.+-]+;base64,")


class SolutionModel:
    """Runs a reference solution script through the harness's shell tool (gold), or does nothing (noop)."""

    def __init__(self, mode: str, solution: str = "", workdir: str = "/tmp_workspace"):
        if mode not in ("gold", "noop"):
            raise ValueError(f"unknown scripted model mode {mode!r}: use gold or noop")
        if mode == "gold" and not solution.strip():
            raise ValueError("scripted/gold needs the task's reference solution, and the task has none")
        self.mode, self.solution, self.workdir = mode, solution, workdir

    def steps(self) -> list[Step]:
        blob = base64.b64encode(self.solution.encode()).decode()
        tag = hashlib.sha1(self.solution.encode()).hexdigest()[:12]
        script = f"/tmp/clawswe-solution-{tag}.sh"
        chunks = [blob[i: i + CHUNK_CHARS] for i in range(0, len(blob), CHUNK_CHARS)]
        marker = lambda k: f"clawswe-solution-{tag}-{k}of{len(chunks) + 1}"  # noqa: E731
        steps = [Step(marker(k), f"printf '%s' '{c}' {'>' if k == 1 else '>>'} {script}.b64 && echo {marker(k)}")
                 for k, c in enumerate(chunks, 1)]
        n = len(chunks) + 1
        # the marker is echoed whatever the script's exit status: the run is graded on what it produced
        run = f"cd {self.workdir} && base64 -d {script}.b64 > {script} && bash {script}; echo {marker(n)}"
        return steps + [Step(marker(n), run)]

    def reply(self, view: RequestView) -> Reply:
        shell = pick_shell(view.tools)
        if self.mode == "noop" or view.assistant_turns >= MAX_TURNS:
            return Reply(text="I looked at the task and did nothing.")
        if not shell:
            return Reply(text="I found no shell tool, so I did nothing.")
        for step in self.steps():
            if step.marker not in view.history:
                return Reply(*_shell_call(shell, step.command, self.workdir))
        return Reply(text="I ran the reference solution; the results are in place.")


def pick(fixtures: dict, text: str) -> dict | None:
    """The fixture entry a request matches (the most specific key first), `otherwise` applied; None: no key."""
    for key in sorted(fixtures, key=len, reverse=True):
        if key in text:
            entry = fixtures[key]
            needle = entry.get("when_contains")
            missing = (needle is not None and needle not in text) or (entry.get("needs_image")
                                                                      and not _IMAGE.search(text))
            if missing:
                entry = entry.get("otherwise") or {"score": 0.0, "answer": "",
                                                   "reason": "the expected content (or image) is missing"}
            return entry
    return None


def _check_fixtures(fixtures, what: str) -> dict:
    if not isinstance(fixtures, dict):
        raise ValueError(f"scripted/{what} needs the task's {what} fixtures as a JSON object")
    return fixtures


class ScriptedJudge:
    def __init__(self, fixtures: dict):
        self.fixtures = _check_fixtures(fixtures, "judge")

    def reply(self, view: RequestView) -> Reply:
        entry = pick(self.fixtures, view.prompt)
        if entry is None:
            return Reply(text=json.dumps({"score": 0.0, "reason": "no judge fixture matches this request"}))
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
