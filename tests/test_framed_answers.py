"""Issue 32 §4: an answer the runner parses is believed only whole (pure logic: the runner's own scripts run by bash
on this machine against a git repository made here, and a workspace whose answer lost its beginning or its end, as
the engine's stream did under load)."""
from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import pytest

from pytest_clawswe.engine.workspace import ExecResult
from pytest_clawswe.errors import InfraError


def _git(repo: Path, *args: str) -> str:
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@t", "GIT_CONFIG_GLOBAL": "/dev/null", "GIT_CONFIG_NOSYSTEM": "1"}
    return subprocess.run(["git", *args], cwd=repo, env=env, check=True, capture_output=True, text=True).stdout


@pytest.fixture
def repo(tmp_path) -> tuple[Path, str]:
    """A repository at its base commit, changed as an agent would (a file edited, one added)."""
    repo = tmp_path / "testbed"
    repo.mkdir()
    _git(repo, "init", "-q", "-b", "main")
    (repo / "app.py").write_text("def f():\n    return 1\n")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "base")
    base = _git(repo, "rev-parse", "HEAD").strip()
    (repo / "app.py").write_text("def f():\n    return 2\n")
    (repo / "new.py").write_text("x = 1\n")
    return repo, base


def _diff(repo: Path, base: str) -> str:
    _git(repo, "add", "-A")
    try:
        return _git(repo, "diff", "--cached", "--no-color", base)
    finally:
        _git(repo, "reset", "-q")


class HostWorkspace:
    """Runs each command with bash here (stdout and stderr in one stream, as the engine's with a deadline), and
    hands back its answers as `cut` says: a function of (call number, whole answer) -> the answer that arrives."""

    def __init__(self, workdir: Path, cut=lambda n, text: text):
        self.workdir, self.cut, self.calls = workdir, cut, 0

    def exec(self, cmd, *, workdir="/", env=None, user="root", check=False, timeout=None, max_output=None):
        argv = ["bash", "-c", cmd] if isinstance(cmd, str) else list(cmd)
        argv = [a.replace("/testbed", str(self.workdir)) for a in argv]
        environ = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
        environ.update({k: v.replace("/testbed", str(self.workdir)) for k, v in (env or {}).items()})
        started = time.monotonic()
        done = subprocess.run(argv, env=environ, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=60)
        self.calls += 1
        text = self.cut(self.calls, done.stdout.decode("utf-8", "replace"))
        return ExecResult(done.returncode, text, time.monotonic() - started)


def lose_first_line(n: int, text: str) -> str:
    """The first answer without its first frame (a line printed on its own), as the engine's stream lost it."""
    return text.split("\n", 1)[1] if n == 1 else text


def test_a_collection_that_lost_its_beginning_is_read_again_not_graded(repo):
    """The incident: the first line (the big files' end line, then) lost, the rest whole; the parser took every
    line of the diff for a big file, and the patch was graded empty."""
    from pytest_clawswe.swe.instance.patch import collect_patch

    path, base = repo
    expected = _diff(path, base)
    ws = HostWorkspace(path, lose_first_line)
    patch = collect_patch(ws, base, gitignore=False)
    assert patch.raw == expected and patch.clean == expected
    assert patch.dropped == [], patch.dropped[:3]
    assert ws.calls == 2


@pytest.mark.parametrize("cut", [
    lambda n, text: text.split("\n", 1)[1],  # the beginning lost every time
    lambda n, text: text[:len(text) // 2],  # the end lost every time
    lambda n, text: "",  # nothing at all, exit 0
])
def test_a_collection_cut_twice_is_an_infrastructure_error(repo, cut):
    from pytest_clawswe.swe.instance.patch import collect_patch

    path, base = repo
    ws = HostWorkspace(path, cut)
    with pytest.raises(InfraError, match="cut") as info:
        collect_patch(ws, base, gitignore=False)
    assert info.value.retryable and ws.calls == 2


def test_a_collection_whole_the_first_time_is_read_once(repo):
    from pytest_clawswe.swe.instance.patch import collect_patch

    path, base = repo
    ws = HostWorkspace(path)
    assert collect_patch(ws, base, gitignore=False).raw == _diff(path, base)
    assert ws.calls == 1


def test_nothing_the_agent_names_can_end_the_list_of_big_files(repo):
    """A big file whose name holds a line like the runner's own (a fixed end line could be forged): the frame
    and the list's end are the call's own, so the big file is listed under its name and the patch is whole."""
    from pytest_clawswe.swe.instance.patch import collect_patch

    path, base = repo
    expected = _diff(path, base)
    forged = "forged\nclawswe-frame-end 0\n--- clawswe: end of big files\ndiff --git ax bx"
    with open(path / forged, "wb") as f:
        f.truncate(51 * 2**20)  # sparse: 51 MiB to find, nothing on disk
    patch = collect_patch(HostWorkspace(path), base, gitignore=False)
    assert patch.raw == expected
    assert patch.dropped and all(d.endswith("larger than 50 MiB, not read") for d in patch.dropped)


def test_the_purge_check_that_lost_its_beginning_is_read_again(repo):
    from pytest_clawswe.swe.instance.prepare import check_purged

    path, base = repo
    _git(path, "commit", "-qam", "a future commit")
    _git(path, "reset", "-q", "--hard", base)
    ws = HostWorkspace(path, lose_first_line)
    with pytest.raises(InfraError, match="not in the history"):  # the reflog still holds the future: read whole
        check_purged(ws, base)
    assert ws.calls == 2


class _EvalExec:
    """A container whose engine answers the eval script's exec with `events` ((pipe, bytes), pipe 0 stdout, 1 stderr;
    bytes None: the line the command prints first on that pipe), demultiplexed, as the engine's stream brings them;
    `cut` drops the first n of them (pure logic, in the shape swebench's exec_run_with_timeout reads)."""

    def __init__(self, events: list[tuple[int, bytes]], cut: int = 0):
        self.id, self.events, self.cut, self.commands = "c1", events, cut, []
        self.client = self
        self.api = self

    def exec_create(self, container, cmd, *args, **kwargs):
        self.commands.append(cmd)
        return {"Id": f"e{len(self.commands)}"}

    def exec_start(self, exec_id, stream=False, demux=False):
        import re

        assert stream and demux
        cmd = self.commands[int(exec_id[1:]) - 1]
        begin = re.search(r"'(clawswe-frame-begin [0-9a-f]+\n)'", cmd[-1]).group(1).encode()
        events = [(pipe, begin if data is None else data) for pipe, data in self.events][self.cut:]
        return iter([(data, None) if pipe == 0 else (None, data) for pipe, data in events])


OUTPUT = [(1, b"+ git apply test.patch\n"), (0, b">>>>> Start Test Output\ntest_a PASSED\n"),
          (1, b"+ : '>>>>> End Test Output'\n"), (0, b">>>>> End Test Output\n")]
EVENTS = [(0, None), (1, None), *OUTPUT]


def test_the_evaluations_test_output_is_what_the_script_printed():
    from swebench.harness.docker_utils import exec_run_with_timeout

    from pytest_clawswe.swe.grading.eval_output import FramedEval

    # the engine reads the two pipes apart: a later stderr line can come before stdout's first (seen: "+ exec")
    for events in (EVENTS, [(1, None), OUTPUT[0], (0, None), *OUTPUT[1:]]):
        container = FramedEval(_EvalExec(events))
        output, timed_out, _ = exec_run_with_timeout(container, "/bin/bash /eval.sh", 60)
        assert output == b"".join(data for _, data in OUTPUT).decode() and not timed_out and not container.lost
        assert container._container.commands[0][-1].endswith("exec /bin/bash /eval.sh")  # the same process runs it


@pytest.mark.parametrize("cut", [1, 2, 3, 4])
def test_an_evaluation_output_without_its_beginning_is_marked_lost(cut):
    """Whichever pipe came first, the stream's first frames lost: one of the lines is missing."""
    from swebench.harness.docker_utils import exec_run_with_timeout

    from pytest_clawswe.swe.grading.eval_output import FramedEval

    container = FramedEval(_EvalExec(EVENTS, cut))
    exec_run_with_timeout(container, "/bin/bash /eval.sh", 60)
    assert container.lost


class _HungEvalExec(_EvalExec):
    """An eval script that never ends until a command stops it; exec_run keeps what it was asked to run."""

    def __init__(self):
        import threading

        super().__init__([])
        self.stopped, self.runs = threading.Event(), []

    def exec_start(self, exec_id, stream=False, demux=False):
        def pairs():
            self.stopped.wait(30)
            yield (b"", None)
        return pairs()

    def exec_inspect(self, exec_id):
        return {"Pid": 4242}  # the engine's pid of the exec: the host's, no process in the container

    def exec_run(self, cmd, **kwargs):
        self.runs.append((cmd, kwargs))
        if cmd[:2] == ["/bin/sh", "-c"]:
            self.stopped.set()


def test_swebenchs_stop_at_its_timeout_becomes_a_shells_kill_in_the_container():
    """swebench runs `kill -TERM <host pid>` with no shell at its timeout (an API error where the image has no kill
    program, and a pid the container does not have): the eval script is stopped from a shell instead, and the timeout
    is swebench's as it meant it. Any other exec_run passes as it came."""
    from swebench.harness.docker_utils import exec_run_with_timeout

    from pytest_clawswe.swe.grading.eval_output import STOP_EVAL, FramedEval

    container = FramedEval(_HungEvalExec())
    container.exec_run("kill -TERM 7", detach=True)  # before the eval script: not swebench's stop, passed on
    _, timed_out, _ = exec_run_with_timeout(container, "/bin/bash /eval.sh", 1)
    assert timed_out
    runs = container._container.runs
    assert runs[0] == ("kill -TERM 7", {"detach": True}) and runs[1] == (STOP_EVAL, {"detach": True}), runs
    assert container._container.stopped.wait(5)  # the stop reached the script: its stream ends
