"""One wait for the tests: poll a condition until it holds or its deadline passes. A test watches another process
(a run, a gateway, a cluster) that gives no event to wait on, so it looks again every `interval` seconds."""
from __future__ import annotations

import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

T = TypeVar("T")


def wait_until(condition: Callable[[], T], timeout: float, what: str, interval: float = 0.3,
               proc: subprocess.Popen | None = None) -> T:
    """`condition()`'s first truthy value; AssertionError naming `what` when `timeout` seconds pass first, or at
    once when `proc` (the run being watched) ended before it held (then its output, when piped, is in the error)."""
    deadline = time.monotonic() + timeout
    while True:
        got = condition()
        if got:
            return got
        if proc is not None and proc.poll() is not None:
            try:  # (bounded: a process it started may still hold the pipe)
                out = proc.communicate(timeout=30)[0] if proc.stdout is not None else ""
            except subprocess.TimeoutExpired:
                out = ""
            raise AssertionError(f"the run ended (exit {proc.returncode}) before this held: {what}\n{out}")
        if time.monotonic() >= deadline:
            raise AssertionError(f"waited {timeout:.0f} s, and still not: {what}")
        time.sleep(interval)


def alive(pid: int) -> bool:
    """The process has not stopped: it is there and not a zombie (whose reaping only is pending)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False
    return "\nState:\tZ" not in status
