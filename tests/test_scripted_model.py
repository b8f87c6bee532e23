"""The scripted model's policy, without a server: which tool it picks for each harness, and that
the commands and edits it sends really apply a gold patch (run here with sh and bash)."""
from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from pytest_clawswe.gateway.protocols import RequestView, ToolSpec
from pytest_clawswe.gateway.scripted.responder import (
    CHUNK_CHARS,
    MINI_FINISH_COMMAND,
    ScriptedModel,
    patch_edits,
    pick_shell,
    scripted_usage,
)

needs_git = pytest.mark.skipif(not shutil.which("git"), reason="needs git")


def schema(*names: str, array: tuple[str, ...] = ()) -> dict:
    props = {n: {"type": "array", "items": {"type": "string"}} if n in array else {"type": "string"} for n in names}
    return {"type": "object", "properties": props}


def tools(spec: dict[str, tuple[str, ...]]) -> list[ToolSpec]:
    return [ToolSpec(name, schema(*args)) for name, args in spec.items()]


# tool lists as each harness sends them (harness-cli-notes); argument names only where they matter
HARNESS_TOOLS = {
    "openclaw": tools({"apply_patch": ("input",), "edit": ("path", "oldText", "newText"),
                       "exec": ("command", "workdir", "yieldMs"), "ls": ("path",), "process": ("action",), "read": ("path",),
                       "sessions_yield": (),
                       "tool_call": ("name",), "tool_describe": ("name",), "tool_search": ("query",),
                       "write": ("path", "content")}),
    "hermes": tools({"patch": ("path", "old_string", "new_string"), "process": ("action",), "read_file": ("path",),
                     "search_files": ("pattern",), "terminal": ("command", "background"),
                     "write_file": ("path", "content")}),
    "nanobot": tools({"apply_patch": ("patch",), "edit_file": ("path", "old_text", "new_text"), "exec": ("command",),
                      "exec_session": ("command",), "list_exec_sessions": (), "read_file": ("path",),
                      "run_cli_app": ("command",), "write_file": ("path", "content")}),
    "mini-swe-agent": tools({"bash": ("command",)}),
    "codex": tools({"exec_command": ("cmd", "workdir", "yield_time_ms"), "write_stdin": ("session_id", "chars"),
                    "request_user_input": ("questions",), "view_image": ("path",), "get_goal": ()}),
    "claude-code": tools({"Agent": ("prompt",), "Bash": ("command", "timeout"), "Edit": ("file_path", "old_string",
                          "new_string"), "Read": ("file_path",), "Write": ("file_path", "content")}),
    "genericagent": tools({"code_run": ("type", "timeout", "cwd"), "file_read": ("path",),
                           "file_patch": ("path", "old_content", "new_content"), "file_write": ("path", "content")}),
}
EXPECTED = {  # harness -> (tool, argument holding the command, other arguments set)
    "openclaw": ("exec", "command", {"workdir", "yieldMs"}),  # waited for, not backgrounded at 10 s
    "hermes": ("terminal", "command", set()),
    "nanobot": ("exec", "command", set()),
    "mini-swe-agent": ("bash", "command", set()),
    "codex": ("exec_command", "cmd", {"workdir", "yield_time_ms"}),  # 30 s: a slow command is not cut at 10
    "claude-code": ("Bash", "command", set()),
    "genericagent": ("code_run", "code", {"type", "cwd"}),
}

PATCH = """\
diff --git a/app.txt b/app.txt
index 1111111..2222222 100644
--- a/app.txt
+++ b/app.txt
@@ -1,3 +1,3 @@
 first
-broken
+fixed
 last
diff --git a/hello.txt b/hello.txt
new file mode 100644
index 0000000..3333333
--- /dev/null
+++ b/hello.txt
@@ -0,0 +1,2 @@
+hello
+it's "quoted" $HOME `x` \\n
"""


def view(tool_list, history="[]", prompt="", turns=0, calls=0) -> RequestView:
    return RequestView(tool_list, history, prompt or history, turns, calls)


def make_repo(path: Path, git: bool = True) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    (path / "app.txt").write_text("first\nbroken\nlast\n")
    if git:
        subprocess.run(["git", "init", "-q", str(path)], check=True)
    return path


@pytest.mark.parametrize("harness", sorted(HARNESS_TOOLS))
def test_first_turn_calls_each_harness_shell_tool(harness, tmp_path):
    model = ScriptedModel("gold", PATCH, workdir=str(tmp_path))
    reply = model.reply(view(HARNESS_TOOLS[harness]))
    name, arg, extra = EXPECTED[harness]
    assert len(reply.tool_calls) == 1
    call = reply.tool_calls[0]
    assert call.name == name
    assert set(call.arguments) == {arg} | extra
    command = call.arguments[arg]
    assert command.startswith(f"cd {tmp_path} && ") and "clawswe-step-" in command
    for key in extra & {"workdir", "cwd"}:
        assert call.arguments[key] == str(tmp_path)
    if harness == "genericagent":  # it runs the ```bash block of the text; type bash selects bash -c
        assert call.arguments["type"] == "bash"
        assert f"```bash\n{command}\n```" in reply.text


def test_shell_heuristics_for_unknown_harnesses():
    assert pick_shell(tools({"read": ("path",), "run_shell_command": ("command",)})).name == "run_shell_command"
    assert pick_shell(tools({"list_exec_sessions": ("command",), "write": ("path", "content")})) is None
    legacy = [ToolSpec("shell", schema("command", "workdir", array=("command",)))]
    call = ScriptedModel("gold", PATCH, workdir="/testbed").reply(view(legacy)).tool_calls[0]
    assert call.arguments["command"][:2] == ["bash", "-lc"] and call.arguments["workdir"] == "/testbed"


@needs_git
@pytest.mark.parametrize("shell", ["sh", "bash"])
@pytest.mark.parametrize("git", [True, False], ids=["git-apply", "patch-fallback"])
def test_apply_command_applies_the_patch(tmp_path, shell, git):
    if not git and not shutil.which("patch"):
        pytest.skip("needs patch")
    repo = make_repo(tmp_path / "repo", git=git)
    model = ScriptedModel("gold", PATCH, workdir=str(repo))
    [step] = model.steps()
    for _ in range(2):  # a repeated call (a harness retry) must not fail or apply twice
        out = subprocess.run([shell, "-c", step.command], capture_output=True, text=True, timeout=60)
        assert out.returncode == 0, out.stderr
        assert step.marker in out.stdout
        assert (repo / "app.txt").read_text() == "first\nfixed\nlast\n"
        assert (repo / "hello.txt").read_text() == "hello\nit's \"quoted\" $HOME `x` \\n\n"


@needs_git
def test_huge_patch_goes_in_several_commands_under_the_argument_limit(tmp_path):
    repo = make_repo(tmp_path / "repo")
    big = "".join(f"+line {i} {'x' * 60}\n" for i in range(3000))
    header = "diff --git a/big.txt b/big.txt\nnew file mode 100644\n--- /dev/null\n+++ b/big.txt\n@@ -0,0 +1,3000 @@\n"
    patch = PATCH + header + big
    model = ScriptedModel("gold", patch, workdir=str(repo))
    steps = model.steps()
    assert len(steps) >= 3
    for step in steps:
        assert len(step.command.encode()) < 128 * 1024 and len(step.command) <= CHUNK_CHARS + 500
        out = subprocess.run(["sh", "-c", step.command], capture_output=True, text=True, timeout=60)
        assert out.returncode == 0, out.stderr
    assert len((repo / "big.txt").read_text().splitlines()) == 3000
    assert (repo / "app.txt").read_text() == "first\nfixed\nlast\n"


def test_conversation_is_decided_from_the_request_alone():
    model = ScriptedModel("gold", PATCH)
    shell = HARNESS_TOOLS["claude-code"]
    first = model.reply(view(shell))
    called = {"type": "tool_use", "input": first.tool_calls[0].arguments}
    history = json.dumps([{"role": "assistant", "content": [called]}, {"role": "user", "content": "ok"}])
    final = model.reply(view(shell, history, turns=1, calls=1))
    assert final.tool_calls == [] and final.text
    # the same first request again (a retry) gets the same call again
    assert model.reply(view(shell)).tool_calls[0].arguments == first.tool_calls[0].arguments


def test_mini_swe_agent_finishes_with_its_submit_command():
    model = ScriptedModel("gold", PATCH)
    mini = HARNESS_TOOLS["mini-swe-agent"]
    prompt = "When done, run `echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT`."
    first = model.reply(view(mini, prompt=prompt))
    history = json.dumps([first.tool_calls[0].arguments])
    second = model.reply(view(mini, history, prompt=prompt + history, turns=1, calls=1))
    assert second.tool_calls[0].name == "bash"
    assert second.tool_calls[0].arguments == {"command": MINI_FINISH_COMMAND}
    # or configured explicitly, for a mini config whose prompt does not say it
    custom = ScriptedModel("gold", PATCH, finish_command="echo DONE")
    assert custom.reply(view(mini, history, turns=1, calls=1)).tool_calls[0].arguments == {"command": "echo DONE"}
    # noop submits at once rather than answering in text (which mini counts as a format error)
    noop = ScriptedModel("noop").reply(view(mini, prompt=prompt))
    assert noop.tool_calls[0].arguments == {"command": MINI_FINISH_COMMAND}


def test_no_tools_answers_with_the_diff_and_noop_does_nothing():
    bare = ScriptedModel("gold", PATCH).reply(view([]))
    assert bare.tool_calls == [] and f"```diff\n{PATCH}```" in bare.text
    noop = ScriptedModel("noop").reply(view(HARNESS_TOOLS["openclaw"]))
    assert noop.tool_calls == [] and noop.text


def test_bad_configuration_is_refused():
    with pytest.raises(ValueError, match="gold patch"):
        ScriptedModel("gold", "")
    with pytest.raises(ValueError, match="mode"):
        ScriptedModel("perfect", PATCH)


def test_edit_tools_are_the_fallback_without_a_shell(tmp_path):
    """Claude Code's Edit/Write without Bash: one edit per turn, ending in the patched tree."""
    repo = make_repo(tmp_path / "repo", git=False)
    (repo / "app.txt").write_text("first\nbroken\nlast\n" + "".join(f"filler {i}\n" for i in range(20)) + "tail\n")
    patch = PATCH + (
        "diff --git a/app.txt b/app.txt\n--- a/app.txt\n+++ b/app.txt\n@@ -22,3 +22,3 @@\n filler 18\n"
        " filler 19\n-tail\n\\ No newline at end of file\n+tail2\n"
    )
    (repo / "app.txt").write_text((repo / "app.txt").read_text()[:-1])  # tail has no newline
    editors = [t for t in HARNESS_TOOLS["claude-code"] if t.name in ("Edit", "Write", "Read")]
    model = ScriptedModel("gold", patch, workdir=str(repo))
    for turn in range(10):
        reply = model.reply(view(editors, turns=turn, calls=turn))
        if not reply.tool_calls:
            break
        call = reply.tool_calls[0]
        path = Path(call.arguments["file_path"])
        if call.name == "Write":
            path.write_text(call.arguments["content"])
        else:
            text = path.read_text()
            assert text.count(call.arguments["old_string"]) == 1
            path.write_text(text.replace(call.arguments["old_string"], call.arguments["new_string"]))
    assert turn == 3 and reply.text
    assert (repo / "app.txt").read_text().startswith("first\nfixed\nlast\n")
    assert (repo / "app.txt").read_text().endswith("filler 19\ntail2\n")  # the new side has a newline
    assert (repo / "hello.txt").read_text() == "hello\nit's \"quoted\" $HOME `x` \\n\n"


def test_patch_edits_reads_hunks():
    edits = patch_edits(PATCH)
    assert edits == [("app.txt", "first\nbroken\nlast\n", "first\nfixed\nlast\n"),
                     ("hello.txt", None, "hello\nit's \"quoted\" $HOME `x` \\n\n")]


def test_usage_is_deterministic_with_a_cache_after_the_first_turn():
    model = ScriptedModel("gold", PATCH)
    first_view, later_view = view(HARNESS_TOOLS["codex"]), view(HARNESS_TOOLS["codex"], turns=2, calls=1)
    reply = model.reply(first_view)
    first = scripted_usage(4000, first_view, reply)
    assert first == scripted_usage(4000, first_view, reply)
    assert first.cache_read_tokens == 0 and first.cache_write_tokens > 0
    later = scripted_usage(4000, later_view, reply)
    assert later.cache_read_tokens > 0
    for u in (first, later):
        assert u.input_tokens + u.cache_read_tokens + u.cache_write_tokens == 1000 and u.output_tokens > 0
