"""The evaluation's test output, believed only whole: each pipe starts with a line of ours; it ends with swebench's own.

run_instance reads the eval script's output through the engine's stream (docker_utils.exec_run_with_timeout:
`exec_create(container.id, "/bin/bash /eval.sh")`, then `exec_start(stream=True)`), writes it to test_output.txt
and grades that. An output without its beginning loses `>>>>> Start Test Output` (then no test parses: the instance
read as unresolved) or some test results (a test that passed read as failing); one without its end loses
`>>>>> End Test Output`, which scoring.score already takes for a cut evaluation. So the command becomes
`printf <begin line>; printf <begin line> >&2; exec /bin/bash /eval.sh` (the same process): each of the two pipes
the engine reads starts with the line, and the engine merges them as it always does (their order across pipes is the
engine's, so the line is looked for at the start of each: the output is read demultiplexed and merged again here, in the order it came). What is lost is the stream's
first frames, and the first frame is one of the two lines, so a lost beginning always shows. The lines are taken
off before swebench sees the output: test_output.txt is what swebench would write. An output without them is
marked `lost`, and score() makes it an infrastructure error. The tests cannot be read again without being run again
(they may change the container), so there is no second reading.

At its timeout, swebench stops the eval script with `exec_run("kill -TERM <pid>")`: a command with no shell, so it
fails where the image has no kill program (Debian's slim images, ours: procps is not in them), and the exec raises,
which swebench reports as an evaluator crash, not as the tests' timeout; and <pid> is the engine's, the host's pid,
which names no process in the container. So that command becomes a shell's kill of every process in the container but
its first (the idle process it was started with): the eval script and the tests it ran end, swebench writes the
timeout as it meant to, and the verdict is the tests' timeout (scoring.py), in any image.
"""
from __future__ import annotations

from collections.abc import Iterator

from pytest_clawswe.engine.framing.framed import Frame

EVAL_COMMAND = "/bin/bash /eval.sh"  # what run_instance runs through exec_run_with_timeout
TIMEOUT_KILL = "kill -TERM "  # how exec_run_with_timeout's stop at the timeout begins (then the exec's pid)
# every process in the container but PID 1 and the shell itself (kill's pid -1), from a shell: its kill is built in
STOP_EVAL = ["/bin/sh", "-c", "kill -TERM -1 2>/dev/null; true"]


class FramedEval:
    """A docker Container (or eval_staging.MadeAhead) whose eval script's output is framed at its start; every
    other call goes to the container as it is."""

    def __init__(self, container) -> None:
        self._container = container
        self.frame = Frame.new()
        self.lost = False  # the eval script's output came without its first line
        self.client = _Client(container.client, self)
        self._eval_exec: str | None = None

    def command(self) -> list[str]:
        line = f"printf '%s' '{self.frame.begin}'"
        return ["/bin/bash", "-c", f"{line}; {line} >&2; exec {EVAL_COMMAND}"]

    def unframed(self, pairs) -> Iterator[bytes]:
        """The demultiplexed stream ((stdout, None) or (None, stderr) as it came) merged again, each pipe without
        its begin line; `lost` when one did not start with it."""
        begin = self.frame.begin.encode()
        heads: list[bytes | None] = [b"", b""]  # None: that pipe's line is seen and taken off
        for pair in pairs:
            for pipe, data in enumerate(pair):
                if not data:
                    continue
                head = heads[pipe]
                if head is not None:
                    head += data
                    if len(head) < len(begin):
                        heads[pipe] = head
                        continue
                    heads[pipe] = None
                    if head.startswith(begin):
                        head = head[len(begin):]
                    else:
                        self.lost = True
                    data = head
                if data:
                    yield data
        for head in heads:
            if head is not None:  # the stream ended before the line (or with only part of it)
                self.lost = True
                if head:
                    yield head

    def exec_run(self, cmd, *args, **kwargs):
        """swebench's stop of the eval script at its timeout made one that works (see the module's text)."""
        if self._eval_exec is not None and isinstance(cmd, str) and cmd.startswith(TIMEOUT_KILL):
            cmd = STOP_EVAL
        return self._container.exec_run(cmd, *args, **kwargs)

    def __getattr__(self, name):
        return getattr(self._container, name)


class _Client:
    def __init__(self, client, framed: FramedEval):
        self._client = client
        self.api = _Api(client.api, framed)

    def __getattr__(self, name):
        return getattr(self._client, name)


class _Api:
    def __init__(self, api, framed: FramedEval):
        self._api, self._framed = api, framed

    def exec_create(self, container, cmd, *args, **kwargs):
        if cmd == EVAL_COMMAND and not args and not kwargs:
            created = self._api.exec_create(container, self._framed.command())
            self._framed._eval_exec = created["Id"]
            return created
        return self._api.exec_create(container, cmd, *args, **kwargs)

    def exec_start(self, exec_id, *args, **kwargs):
        if exec_id == self._framed._eval_exec and kwargs == {"stream": True} and not args:
            return self._framed.unframed(self._api.exec_start(exec_id, stream=True, demux=True))
        return self._api.exec_start(exec_id, *args, **kwargs)

    def __getattr__(self, name):
        return getattr(self._api, name)
