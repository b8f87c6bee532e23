"""The scripted model: a deterministic stand-in for an LLM, served by the gateway.

`scripted/gold` drives the harness's own tools to apply the instance's gold patch, then finishes;
`scripted/noop` answers without acting; `scripted/hang` never answers (each request is held until the
harness gives up or is stopped), so a test can force a budget cut whatever the machine's speed. It is stateless: each reply is decided from the request
alone, so retries, probes and side requests of a harness cannot confuse it.

Policy (gold):
1. No tools in the request (the "bare" adapter): answer with the patch in a ```diff block.
2. A shell-like tool exists (see SHELL_TOOLS, then a name/argument heuristic): call it with a
   command that base64-decodes the patch into /tmp and applies it with `git apply`, falling back
   to `patch -p1` (no heredocs, no quoting hazards, runs under sh and bash). Each command ends
   with a unique marker; a step whose marker already appears in the conversation is done. A patch
   too big for one command line (Linux caps one argument at 128 KiB) goes in several steps.
3. Otherwise an edit/write tool: one hunk (or new file) per turn, counted by earlier tool calls.
4. Then finish: a short text, or, when the harness needs a finishing tool call (mini-swe-agent
   asks for `echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT`: detected from that phrase in its prompt,
   or set with the `finish_command` option at registration), that command through the shell tool.

Usage is derived from the request size so every number is deterministic, and every turn after
the first reports a cached part (and the first a cache write), so cache accounting is exercised.
"""
from __future__ import annotations

import base64
import hashlib
import json
import shlex
from dataclasses import dataclass

from pytest_clawswe.gateway.protocols import Reply, RequestView, ToolCall, ToolSpec
from pytest_clawswe.model import GOLD, HANG, NOOP
from pytest_clawswe.usage import Usage

MODES = (GOLD, NOOP, HANG)
HANG_MODE = HANG  # never answers: a budget cut forced by the model, not by how fast the machine is
MINI_FINISH_PHRASE = "COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"
MINI_FINISH_COMMAND = f"echo {MINI_FINISH_PHRASE}"
CHUNK_CHARS = 60_000  # base64 characters per command: well under the 128 KiB argument limit
MAX_TURNS = 50  # past this many assistant turns, just stop (a harness stuck in a loop)

# known shell tools of the harnesses (harness-cli-notes) -> the argument that holds the command
SHELL_TOOLS = {
    "exec": "command",  # openclaw, nanobot
    "terminal": "command",  # hermes-agent
    "bash": "command",  # mini-swe-agent
    "Bash": "command",  # claude code
    "exec_command": "cmd",  # codex
    "code_run": "code",  # genericagent (it prefers the ```bash block in the text; see _shell_call)
    "shell": "command",  # codex's older tool, and a common name elsewhere
}
# Codex and OpenClaw put a command still running after 10 s in the background and answer "still running"
# (a model would poll it); the scripted model asks them to wait: codex at most 30 s, OpenClaw 5 min.
_WAIT_ARGS = {"yield_time_ms": 30_000, "yieldMs": 300_000}
_SHELL_WORDS = ("bash", "shell", "exec", "terminal", "command", "run")
_NOT_SHELL_WORDS = ("session", "list", "stdin", "process", "describe", "search")
_COMMAND_ARGS = ("command", "cmd", "code", "script")
_CWD_ARGS = ("workdir", "cwd", "working_dir", "working_directory", "directory")
_PATH_ARGS = ("file_path", "path", "filepath", "filename", "file")
_OLD_ARGS = ("old_string", "old_str", "old_text", "oldText", "old", "old_content", "search")
_NEW_ARGS = ("new_string", "new_str", "new_text", "newText", "new", "new_content", "replace")
_CONTENT_ARGS = ("content", "contents", "file_text", "text", "data")


@dataclass
class Step:
    marker: str  # unique text in the command; seeing it in the conversation means "done"
    command: str


class HangingModel:
    """`scripted/hang`: the gateway holds every request open (see server._hang); it makes no reply."""

    mode = HANG_MODE


class ScriptedModel:
    def __init__(self, mode: str, gold_patch: str = "", workdir: str = "/testbed",
                 finish_command: str | None = None) -> None:
        if mode not in MODES or mode == HANG_MODE:
            raise ValueError(f"unknown scripted model mode {mode!r}: use one of {', '.join(MODES)}")
        if mode == "gold" and not gold_patch.strip():
            raise ValueError("scripted/gold needs the instance's gold patch, and none was given")
        self.mode = mode
        self.patch = gold_patch if gold_patch.endswith("\n") else gold_patch + "\n"
        self.workdir = workdir
        self.finish_command = finish_command

    @classmethod
    def from_config(cls, config: dict) -> "ScriptedModel":
        return cls(config.get("mode", "noop"), config.get("gold_patch") or "",
                   config.get("workdir") or "/testbed", config.get("finish_command"))

    # ------------------------------------------------------------------ policy
    def reply(self, view: RequestView) -> Reply:
        shell = pick_shell(view.tools)
        if self.mode == "noop" or view.assistant_turns >= MAX_TURNS:
            return self._finish(view, shell, "I looked at the task and made no changes.")
        if not view.tools:
            return Reply(text=f"Here is the fix.\n\n```diff\n{self.patch}```\n")
        if shell:
            for step in self.steps():
                if step.marker not in view.history:
                    return Reply(*_shell_call(shell, step.command, self.workdir))
            return self._finish(view, shell, "I applied the fix.")
        edits = self._edit_calls(view.tools)
        if edits and view.tool_calls_made < len(edits):
            return Reply(tool_calls=[edits[view.tool_calls_made]])
        if edits:
            return Reply(text="I applied the fix.")
        return Reply(text="I found no shell or edit tool, so I changed nothing.")

    def _finish(self, view: RequestView, shell: ToolSpec | None, text: str) -> Reply:
        command = self.finish_command or (MINI_FINISH_COMMAND if MINI_FINISH_PHRASE in view.prompt else None)
        if command and shell:
            return Reply(*_shell_call(shell, command, self.workdir))
        return Reply(text=text)

    # ------------------------------------------------------------------ the shell commands
    def steps(self) -> list[Step]:
        """The commands that apply the gold patch: usually one, several for a huge patch."""
        blob = base64.b64encode(self.patch.encode()).decode()
        tag = hashlib.sha1(self.patch.encode()).hexdigest()[:12]
        tmp = f"/tmp/clawswe-gold-{tag}"
        chunks = [blob[i : i + CHUNK_CHARS] for i in range(0, len(blob), CHUNK_CHARS)]
        n = len(chunks) if len(chunks) == 1 else len(chunks) + 1
        marker = lambda k: f"clawswe-step-{tag}-{k}of{n}"  # noqa: E731
        apply = (
            # already applied (a repeated call) counts as success; else git apply, else patch
            f"{{ git apply --reverse --check {tmp}.diff 2>/dev/null"
            f" || git apply --whitespace=nowarn {tmp}.diff"
            f" || patch -p1 --forward --batch < {tmp}.diff; }}"
        )
        cd = f"cd {shlex.quote(self.workdir)}"
        if len(chunks) == 1:
            cmd = f"{cd} && printf '%s' '{blob}' | base64 -d > {tmp}.diff && {apply} && echo {marker(1)}"
            return [Step(marker(1), cmd)]
        steps = []
        for k, chunk in enumerate(chunks, 1):
            redirect = ">" if k == 1 else ">>"
            steps.append(Step(marker(k), f"printf '%s' '{chunk}' {redirect} {tmp}.b64 && echo {marker(k)}"))
        last = f"{cd} && base64 -d {tmp}.b64 > {tmp}.diff && {apply} && echo {marker(n)}"
        steps.append(Step(marker(n), last))
        return steps

    # ------------------------------------------------------------------ the edit-tool fallback
    def _edit_calls(self, tools: list[ToolSpec]) -> list[ToolCall]:
        edit, write = pick_edit_tools(tools)
        calls = []
        for path, old, new in patch_edits(self.patch):
            full = f"{self.workdir.rstrip('/')}/{path}"
            if old is None and write:  # a new file
                args = {_arg(write, _PATH_ARGS): full, _arg(write, _CONTENT_ARGS): new}
                calls.append(ToolCall(write.name, args))
            elif old is not None and edit:
                args = {_arg(edit, _PATH_ARGS): full, _arg(edit, _OLD_ARGS): old, _arg(edit, _NEW_ARGS): new}
                calls.append(ToolCall(edit.name, args))
        return calls


# ---------------------------------------------------------------------- tool selection
def _props(tool: ToolSpec) -> dict:
    props = tool.params.get("properties") if isinstance(tool.params, dict) else None
    return props if isinstance(props, dict) else {}


def _arg(tool: ToolSpec, names: tuple[str, ...]) -> str | None:
    props = _props(tool)
    return next((n for n in names if n in props), None)


def pick_shell(tools: list[ToolSpec]) -> ToolSpec | None:
    """The harness's shell tool: a known name first, then any tool named like a shell that
    takes a command-like argument."""
    by_name = {t.name: t for t in tools}
    for name in SHELL_TOOLS:
        if name in by_name:
            return by_name[name]
    for tool in tools:
        low = tool.name.lower()
        if (any(w in low for w in _SHELL_WORDS) and not any(w in low for w in _NOT_SHELL_WORDS)
                and _arg(tool, _COMMAND_ARGS)):
            return tool
    return None


def pick_edit_tools(tools: list[ToolSpec]) -> tuple[ToolSpec | None, ToolSpec | None]:
    """(a search/replace edit tool, a whole-file write tool), chosen by their argument names."""
    edit = next((t for t in tools if _arg(t, _PATH_ARGS) and _arg(t, _OLD_ARGS) and _arg(t, _NEW_ARGS)), None)
    write = next((t for t in tools if _arg(t, _PATH_ARGS) and _arg(t, _CONTENT_ARGS) and not _arg(t, _OLD_ARGS)),
                 None)
    return edit, write


def _shell_call(tool: ToolSpec, command: str, workdir: str) -> tuple[str, list[ToolCall]]:
    """(text, [tool call]) running `command` through `tool`, shaped to its argument schema."""
    props = _props(tool)
    name = SHELL_TOOLS.get(tool.name) or _arg(tool, _COMMAND_ARGS) or "command"
    if tool.name == "code_run":
        # GenericAgent runs the last ```<type> block of the assistant text, else args.code
        args = {"type": "bash", "cwd": workdir, "code": command}
        return f"<summary>apply the fix</summary>\n```bash\n{command}\n```", [ToolCall(tool.name, args)]
    is_array = (props.get(name) or {}).get("type") == "array"
    args = {name: ["bash", "-lc", command] if is_array else command}
    cwd = _arg(tool, _CWD_ARGS)
    if cwd:
        args[cwd] = workdir
    for key, wait in _WAIT_ARGS.items():  # a command that runs long is waited for, not left in the background
        if key in props:
            args[key] = wait
    return "", [ToolCall(tool.name, args)]


# ---------------------------------------------------------------------- unified diff -> edits
def patch_edits(patch: str) -> list[tuple[str, str | None, str]]:
    """(path, old text or None for a new file, new text) for each hunk of a unified diff (parsed by
    unidiff). Deleted, renamed and binary files are not expressible as edits and are skipped."""
    import unidiff
    from unidiff.constants import LINE_TYPE_ADDED, LINE_TYPE_CONTEXT, LINE_TYPE_NO_NEWLINE, LINE_TYPE_REMOVED

    edits: list[tuple[str, str | None, str]] = []
    for patched in unidiff.PatchSet(patch):
        if patched.is_removed_file or patched.is_binary_file or patched.is_rename:
            continue
        for hunk in patched:
            old: list[str] = []
            new: list[str] = []
            last: tuple = ()
            for line in hunk:
                if line.line_type == LINE_TYPE_NO_NEWLINE:  # the line before has no newline
                    for side in last:
                        side[-1] = side[-1].removesuffix("\n")
                    continue
                last = {LINE_TYPE_CONTEXT: (old, new), LINE_TYPE_REMOVED: (old,),
                        LINE_TYPE_ADDED: (new,)}.get(line.line_type, ())
                for side in last:
                    side.append(line.value)
            edits.append((patched.path, None if patched.is_added_file else "".join(old), "".join(new)))
    return edits


# ---------------------------------------------------------------------- usage
def scripted_usage(request_bytes: int, view: RequestView, reply: Reply) -> Usage:
    """Deterministic usage for one reply: ~4 characters a token. The first turn writes half the
    prompt to the cache; later turns read half from it and write a quarter of the rest."""
    prompt = max(1, request_bytes // 4)
    if view.assistant_turns == 0:
        read, write = 0, prompt // 2
    else:
        read = prompt // 2
        write = (prompt - read) // 4
    said = reply.text + "".join(c.arguments if isinstance(c.arguments, str) else json.dumps(c.arguments)
                                for c in reply.tool_calls)
    return Usage(requests=1, input_tokens=prompt - read - write, output_tokens=max(1, len(said) // 4),
                 cache_read_tokens=read, cache_write_tokens=write)
