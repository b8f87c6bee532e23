"""Scripted stand-ins for WildClawBench runs: the agent's model and the judge.

`scripted/gold` with a `solution` (a task's reference shell script) drives the harness's own shell tool to
run it in the task's workdir, then finishes; `scripted/noop` finishes at once. `scripted/judge` answers a
grader's judge request from the task's fixtures: {"<text the request contains>": {"score", "reason",
"when_contains": optional text, "otherwise": optional {"score", "reason"}}}; the first key found in the
request picks the criterion, and `when_contains` (looked for in the request, e.g. in the agent's output
the grader sent) picks between the answer and `otherwise`. Images in the request (data URLs) are
accepted and ignored. Like ScriptedModel, both are stateless: each reply is decided from the request.
"""
from __future__ import annotations

import base64
import hashlib
import json

from .protocols import Reply, RequestView
from .scripted import CHUNK_CHARS, MAX_TURNS, ScriptedModel, Step, _shell_call, pick_shell

JUDGE_MODE = "judge"


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


class ScriptedJudge:
    def __init__(self, fixtures: dict):
        if not isinstance(fixtures, dict):
            raise ValueError("scripted/judge needs the task's judge fixtures as a JSON object")
        self.fixtures = fixtures

    def reply(self, view: RequestView) -> Reply:
        text = view.prompt
        for key in sorted(self.fixtures, key=len, reverse=True):  # the most specific key first
            if key in text:
                entry = self.fixtures[key]
                needle = entry.get("when_contains")
                if needle is not None and needle not in text:
                    entry = entry.get("otherwise") or {"score": 0.0, "reason": "the expected content is missing"}
                answer = {"score": float(entry.get("score", 0.0)), "reason": str(entry.get("reason", ""))}
                return Reply(text=json.dumps(answer))
        return Reply(text=json.dumps({"score": 0.0, "reason": "no judge fixture matches this request"}))


def scripted_for(config: dict):
    """The scripted model a registration asks for: the WildClawBench ones when their keys are present,
    else the Claw-SWE-Bench ScriptedModel (gold patch)."""
    if config.get("mode") == JUDGE_MODE:
        return ScriptedJudge(config.get("fixtures") or {})
    if "solution" in config:
        return SolutionModel(config.get("mode", "noop"), config.get("solution") or "",
                             config.get("workdir") or "/tmp_workspace")
    return ScriptedModel.from_config(config)
