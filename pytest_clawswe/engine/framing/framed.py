"""Answers the runner parses, believed only whole: framed at both ends, read once more when cut, then an error.

Under load the engine's stream of an exec's output came back without its beginning (engine/docker/attach_stream.py says
why) and, at other times, without its end; parsed anyway, a cut answer became a verdict (a whole diff read as the
list of big files: a correct patch graded as empty). So a command whose output the runner parses is run inside a
frame: a line of its own before the command's first byte and after its last, each carrying a nonce made for this
call (nothing the command prints, and no file name an agent chose, can forge or end it), stderr in the same stream
so that nothing overtakes either line. An answer without both lines is read again (the commands framed here only
read, or work in a scratch area of their own), and cut twice it is an InfraError (the item is retried), never a
verdict.
"""
from __future__ import annotations

import secrets
from dataclasses import dataclass

from pytest_clawswe.engine.framing.reread import READS, Cut, read_whole
from pytest_clawswe.engine.workspace import MAX_EXEC_OUTPUT, BaseWorkspace, ExecResult

@dataclass(frozen=True)
class Frame:
    nonce: str

    @classmethod
    def new(cls) -> "Frame":
        return cls(secrets.token_hex(16))

    @property
    def begin(self) -> str:
        return f"clawswe-frame-begin {self.nonce}\n"

    @property
    def end(self) -> str:
        return f"clawswe-frame-end {self.nonce}\n"

    def around(self, script: str) -> str:
        """A POSIX shell script: the begin line, `script` in a subshell (its `exit` and EXIT trap stay its own;
        positional parameters carry over), then the end line right after its last byte; exits with its code."""
        return (f"exec 2>&1\nprintf '%s\\n' 'clawswe-frame-begin {self.nonce}'\n(\n{script}\n)\n"
                f"clawswe_code=$?\nprintf '%s\\n' 'clawswe-frame-end {self.nonce}'\nexit $clawswe_code\n")

    def inside(self, answer: str) -> str | None:
        """What the command printed, when the answer holds both lines; None when it was cut."""
        if answer.startswith(self.begin) and answer.endswith(self.end):
            return answer[len(self.begin):-len(self.end)]
        return None


def read_framed(ws: BaseWorkspace, shell: list[str], script: str, *, what: str, args: tuple[str, ...] = (),
                env: dict | None = None, timeout: float | None = None, max_output: int = MAX_EXEC_OUTPUT,
                reads: int = READS) -> ExecResult:
    """Run `script` with `shell` (e.g. ["bash", "-c"]; `args` after it are $0, $1, ...) inside a frame and return
    its whole answer: stdout is what it printed (stderr included, in order) and stderr is empty. An answer that
    timed out or passed `max_output` (only its tail kept) is returned as it came, for the caller to say what
    that means. `what` names the reading in the error ("reading the patch from /testbed")."""

    def read_once() -> ExecResult:
        frame = Frame.new()
        result = ws.exec([*shell, frame.around(script), *args], env=env, timeout=timeout, max_output=max_output)
        if result.timed_out or result.truncated:
            return result
        answer = result.stdout + result.stderr
        inside = frame.inside(answer)
        if inside is None:
            lost = "its first line" if not answer.startswith(frame.begin) else "its last line"
            raise Cut(f"without {lost}: {len(answer)} bytes, exit {result.exit_code}")
        return ExecResult(result.exit_code, inside, result.seconds)

    return read_whole(read_once, f"the engine's answer to {what}", reads)
