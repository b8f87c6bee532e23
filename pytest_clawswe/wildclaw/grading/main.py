"""Runs inside the grader container (copied there as /clawswe/grade_main.py; standard library only), in two
processes of the image's Python started isolated (`-I -S`: no user site, no site-packages' .pth files, no
sitecustomize or usercustomize, no PYTHON* variables, the script's folder and the working folder not on sys.path).

    python3 -I -S /clawswe/grade_main.py GRADER_CODE TRANSCRIPT            (the parent: the runner starts it)
    python3 -I -S /clawswe/grade_main.py --child FD GRADER_CODE TRANSCRIPT  (the child: grade() runs here)

The parent never runs anything of the task's or the agent's. It makes itself non-dumpable, so no process of the
container (root, but without CAP_SYS_PTRACE) can open its file descriptors through /proc or trace it: its standard
output, the stream the runner reads, is written by it alone. It starts the child with standard output and error on
a pipe of its own (the log) and one more pipe for the result, reads both until the child has exited, stops every
other process of the container (but PID 1 and its keep-alive), and prints one frame: START, the length, the JSON
(the result, the log's tail), END.

The child adds the system's site-packages folders to sys.path (no .pth file is read), loads the task's Automated
Checks, reads the transcript (every line, as released), calls grade(), and at once stops every other process of the
container but PID 1, its keep-alive and the parent, so nothing grade() started (agent code it imported included)
outlives it or spends the judge's token after it; then it writes the result to the result pipe, once, and leaves
without running exit handlers.
"""
import json
import os
import selectors
import signal
import subprocess
import sys
import time
import traceback

START, END = b"<<<clawswe-grade-result", b"<<<clawswe-grade-result-end>>>"
CLEAN_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
MAX_RESULT = 4 * 2**20  # (with the log's tail, within what the runner keeps of an exec's output)
MAX_LOG = 2**20
SWEEP_S = 10.0
GRADER_ENV = "CLAWSWE_GRADER_CONTAINER"


def frame(payload: dict) -> bytes:
    body = json.dumps(payload, default=str).encode()
    return b"%s %d>>>\n%s\n%s\n" % (START, len(body), body, END)


# ------------------------------------------------------------------ stopping every other process
def _stat(pid: str):
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            fields = fh.read().rsplit(b")", 1)[1].split()
        return fields[0], int(fields[1]), int(fields[19])  # state, parent, start time
    except (OSError, IndexError, ValueError):
        return None


def _keep_alive() -> str:
    """The container's keep-alive: of PID 1's children, the one that started first."""
    first = None
    for pid in os.listdir("/proc"):
        st = _stat(pid) if pid.isdigit() else None
        if st and st[1] == 1 and (first is None or st[2] < first[1]):
            first = (pid, st[2])
    return first[0] if first else ""


def in_grader_container() -> bool:
    """Only where the runner said so (its container's environment) and PID 1 is the container's init: the sweep
    must never run on a machine's own processes (a test runs this file on the host)."""
    try:
        with open("/proc/1/cmdline", "rb") as fh:
            init = fh.read().split(b"\0")[0]
    except OSError:
        return False
    return os.environ.get(GRADER_ENV) == "1" and os.path.basename(init) in (b"docker-init", b"tini", b"tini-static")


def sweep(spare=()) -> int:
    """SIGKILL every process of the container but PID 1, its keep-alive, this one and `spare`, until none is left
    (zombies wait for their parent); the number of kills, or -1 when some survived SWEEP_S. Nothing outside a
    grader's container."""
    if not in_grader_container():
        return 0
    keep = {"1", str(os.getpid()), _keep_alive(), *map(str, spare)}
    kills, deadline = 0, time.monotonic() + SWEEP_S
    while time.monotonic() < deadline:
        left = 0
        for pid in os.listdir("/proc"):
            if not pid.isdigit() or pid in keep:
                continue
            st = _stat(pid)
            if st is None or st[0] == b"Z":
                continue
            try:
                os.kill(int(pid), signal.SIGKILL)
                kills, left = kills + 1, left + 1
            except OSError:
                pass
        if not left:
            return kills
        time.sleep(0.01)
    return -1


# ------------------------------------------------------------------ the child: grade()
def system_site_paths() -> list:
    import site  # with -S its main() is not run: nothing of it executes but the module itself

    return [p for p in site.getsitepackages() if os.path.isdir(p) and p not in sys.path]


def child(fd: int, code_path: str, transcript_path: str) -> None:
    sys.path.extend(system_site_paths())
    try:
        with open(transcript_path, encoding="utf-8") as fh:
            transcript = [json.loads(line) for line in fh if line.strip()]  # every line, as released
        scope = {"__name__": "grader"}
        with open(code_path, encoding="utf-8") as fh:
            exec(compile(fh.read(), "automated_checks.py", "exec"), scope)
        result = scope["grade"](transcript=transcript, workspace_path="/tmp_workspace")
        swept = sweep(spare=(os.getppid(),))  # the moment grade() returned
        if not isinstance(result, dict):
            raise TypeError(f"grade() returned {type(result).__name__}, not a dict")
        out = {"ok": True, "result": result, "swept": swept}
    except BaseException as exc:  # reported to the runner, which makes the item an error
        swept = sweep(spare=(os.getppid(),))
        out = {"ok": False, "error": f"{type(exc).__name__}: {exc}", "traceback": traceback.format_exc()[-4000:],
               "swept": swept}
    try:
        data = json.dumps(out, default=str).encode()
    except BaseException as exc:  # a result that cannot be written as JSON
        data = json.dumps({"ok": False, "error": f"grade() returned what JSON cannot hold: {exc}"}).encode()
    message = b"%d\n" % len(data) + data
    while message:
        message = message[os.write(fd, message):]
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


# ------------------------------------------------------------------ the parent
def _no_dumping() -> None:
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(4, 0, 0, 0, 0) != 0:  # PR_SET_DUMPABLE, 0
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_DUMPABLE, 0) failed")


def _env() -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "LD_"))}
    env["PATH"] = CLEAN_PATH
    env.setdefault("HOME", "/root")
    return env


def parent(code_path: str, transcript_path: str) -> dict:
    _no_dumping()
    result_r, result_w = os.pipe()
    log_r, log_w = os.pipe()
    proc = subprocess.Popen([sys.executable, "-I", "-S", os.path.abspath(__file__), "--child", str(result_w),
                             code_path, transcript_path], stdin=subprocess.DEVNULL, stdout=log_w,
                            stderr=subprocess.STDOUT, pass_fds=(result_w,), env=_env())
    os.close(result_w)
    os.close(log_w)
    got = {result_r: bytearray(), log_r: bytearray()}
    log_cut = False
    sel = selectors.DefaultSelector()
    for fd in got:
        os.set_blocking(fd, False)
        sel.register(fd, selectors.EVENT_READ)

    def read_ready(timeout: float) -> None:
        nonlocal log_cut
        for key, _ in sel.select(timeout):
            try:
                data = os.read(key.fd, 65536)
            except BlockingIOError:
                continue
            if not data:
                sel.unregister(key.fd)
                continue
            buf = got[key.fd]
            buf += data
            if key.fd == log_r and len(buf) > 2 * MAX_LOG:
                del buf[:-MAX_LOG]
                log_cut = True
            if key.fd == result_r and len(buf) > MAX_RESULT:
                sel.unregister(key.fd)

    while proc.poll() is None and sel.get_map():
        read_ready(0.2)
    proc.wait()
    swept = sweep()  # whatever the child's sweep left (the child ran the agent's code: it is not relied on)
    for _ in range(50):  # what the child wrote before it ended is in the pipes; nothing after counts
        if not sel.get_map() or not sel.select(0):
            break
        read_ready(0)
    log = bytes(got[log_r][-MAX_LOG:]).decode("utf-8", "replace")
    out = {"log": log, "log_truncated": log_cut or len(got[log_r]) > MAX_LOG, "child_exit": proc.returncode,
           "swept_after": swept}
    out.update(read_result(bytes(got[result_r])))
    return out


def read_result(data: bytes) -> dict:
    """The child's one message ("LENGTH\\n" + JSON); anything else is said so, never taken for a result."""
    head, _, rest = data.partition(b"\n")
    if not data:
        return {"ok": False, "error": "the grader's process ended without handing over a result"}
    if not head.isdigit() or len(rest) != int(head):
        return {"ok": False, "error": "the grader's result channel held something besides its one result (agent "
                                      "code that grade() ran wrote to it, or grade() was cut off)"}
    try:
        return json.loads(rest)
    except ValueError:
        return {"ok": False, "error": "the grader's result was not JSON"}


def main(argv: list) -> None:
    if argv[:1] == ["--child"]:
        child(int(argv[1]), argv[2], argv[3])
        return
    try:
        out = parent(argv[0], argv[1])
    except BaseException as exc:
        out = {"ok": False, "error": f"the grader's runner failed: {type(exc).__name__}: {exc}",
               "traceback": traceback.format_exc()[-4000:]}
    sys.stdout.buffer.write(frame(out))
    sys.stdout.buffer.flush()


if __name__ == "__main__":
    main(sys.argv[1:])
