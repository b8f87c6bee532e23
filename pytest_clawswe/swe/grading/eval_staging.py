"""The evaluation container made ahead (scoring.EvalContainer) also runs, while the agent works, the calls of
swebench's run_instance that do not depend on the patch: the `mkdir -p` before each copy into the container
(the patch to /tmp, the eval script to /) and the copy of the eval script itself. run_instance still makes them;
each is answered once with the result it had when it ran ahead, in the same fresh container no one else touched,
and only when it is the same call (the eval script: the same file, mode and owner, byte for byte; an instance
with binary assets adds commands to it, and is not copied ahead). Two execs and a copy off the critical path.

One more exec is saved on the path itself: when run_instance's first `git apply` succeeds, the next thing it
does is read `git -c core.fileMode=false diff` for its log; both run in one exec (the apply, then the diff, with
their exit codes), and the diff's call is answered with what it printed. An apply that fails runs no diff there
(run_instance's fallbacks and their diff run as they are). Both commands print to one stream (`2>&1`): the
engine merges two streams in no fixed order anyway; git apply writes only to stderr, git diff to stdout.
"""
from __future__ import annotations

import io
import os
import posixpath
import secrets
import tarfile
import tempfile

from docker.models.containers import ExecResult
from swebench.harness.constants import CONTAINER_PATCH_FILE
from swebench.harness.run_evaluation import GIT_APPLY_CMDS
from swebench.image_builder.constants import CONTAINER_USER, CONTAINER_WORKDIR

# the exact commands swebench.harness.docker_utils.copy_to_container runs before its two copies
AHEAD = tuple(f"mkdir -p {d}" for d in (posixpath.dirname(CONTAINER_PATCH_FILE), "/"))
EVAL_NAME = "eval.sh"  # run_instance copies the eval script to /eval.sh
APPLY = f"{GIT_APPLY_CMDS[0]} {CONTAINER_PATCH_FILE}"  # run_instance's first apply, then its diff for the log
DIFF = "git -c core.fileMode=false diff"


class MadeAhead:
    """A docker Container whose AHEAD commands already ran; everything else goes to the container itself."""

    def __init__(self, container, eval_script: str | None = None):
        self._container = container
        self._done = {}
        self._copied: tuple | None = None  # the eval script's tar member as copied ahead, and its bytes
        self._diff: ExecResult | None = None  # the diff read right after a successful apply
        for cmd in AHEAD:
            try:
                self._done[cmd] = container.exec_run(cmd)
            except Exception:  # noqa: BLE001  then run_instance runs it itself, and sees what fails
                pass
        if eval_script is not None:
            try:
                data = _tar_like_swebench(EVAL_NAME, eval_script)
                if container.put_archive("/", data):
                    self._copied = _members(data)
            except Exception:  # noqa: BLE001  run_instance copies it itself
                self._copied = None

    def put_archive(self, path, data):
        if path == "/" and self._copied is not None and _members(data) == self._copied:
            self._copied = None  # once
            return True
        return self._container.put_archive(path, data)

    def exec_run(self, cmd, *args, **kwargs):
        diff, self._diff = self._diff, None  # answers only the call right after the apply
        if not args and not kwargs and isinstance(cmd, str) and cmd in self._done:
            return self._done.pop(cmd)  # once: a second identical call runs
        if diff is not None and cmd == DIFF and not args and kwargs == {"workdir": CONTAINER_WORKDIR}:
            return diff
        if cmd == APPLY and not args and kwargs == {"workdir": CONTAINER_WORKDIR, "user": CONTAINER_USER} \
                and self._root_by_default():
            return self._apply_then_diff()
        return self._container.exec_run(cmd, *args, **kwargs)

    def _root_by_default(self) -> bool:
        """The diff runs as the container's default user, the apply as CONTAINER_USER: one exec serves both only
        when they are the same (root)."""
        try:
            user = self._container.attrs["Config"].get("User") or "root"
        except (AttributeError, KeyError, TypeError):
            return False
        return CONTAINER_USER == "root" and user in ("root", "0", "0:0")

    def _apply_then_diff(self):
        mark = secrets.token_hex(16)  # before, between and after: the answer is read only whole
        script = (f"printf '%s' {mark}; {APPLY} 2>&1; a=$?; printf '%s' {mark}; d=-\n"
                  f"if [ $a -eq 0 ]; then {DIFF} 2>&1; d=$?; fi\n"
                  f"printf '%s%s %s' {mark} $a $d; exit $a")
        result = self._container.exec_run(["/bin/sh", "-c", script], workdir=CONTAINER_WORKDIR, user=CONTAINER_USER)
        parts = (result.output or b"").split(mark.encode())
        if len(parts) != 4 or parts[0]:
            # cut (the engine's stream, a kill): the exit code is the engine's and stands; what came is logged as
            # the apply's output, and run_instance reads the diff itself
            return ExecResult(result.exit_code, b"".join(parts))
        codes = parts[3].decode(errors="replace").split()
        if len(codes) == 2 and codes[1] != "-":
            self._diff = ExecResult(int(codes[1]), parts[2])
        return ExecResult(result.exit_code, parts[1])

    def __getattr__(self, name):
        return getattr(self._container, name)



def _tar_like_swebench(name: str, text: str) -> bytes:
    """The archive docker_utils.copy_to_container makes of a file run_instance wrote with write_text."""
    with tempfile.TemporaryDirectory() as tmp:
        src = os.path.join(tmp, name)
        with open(src, "w") as f:
            f.write(text)
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w") as tar:
            tar.add(src, arcname=name)
        return buf.getvalue()


def _members(data: bytes) -> tuple | None:
    """What extracting `data` makes, but its time: each member's name, type, mode, owner and bytes."""
    try:
        with tarfile.open(fileobj=io.BytesIO(data), mode="r") as tar:
            return tuple((m.name, m.type, m.mode, m.uid, m.gid, m.uname, m.gname,
                          tar.extractfile(m).read() if m.isfile() else b"") for m in tar.getmembers())
    except (tarfile.TarError, OSError):
        return None
