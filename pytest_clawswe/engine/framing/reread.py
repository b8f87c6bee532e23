"""An answer read again when it came cut, then an infrastructure error: the one loop of every framed reading.

Used by engine/framing/framed.py (a command's answer, framed by lines of its own) and engine/framing/archive.py (a copy's archive,
framed by tar's own first member and end marker). Apart from both so that either can use it.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from pytest_clawswe.errors import InfraError

READS = 2  # one more reading after a cut answer; a second cut says the engine, not chance, is at fault
T = TypeVar("T")


class Cut(Exception):
    """An answer that came without its beginning or its end (the message says which, and what came)."""


def read_whole(read_once: Callable[[], T], what: str, reads: int = READS) -> T:
    """`read_once()` returns the answer, or raises Cut; cut `reads` times, it is an InfraError, never a verdict."""
    why = ""
    for _ in range(reads):
        try:
            return read_once()
        except Cut as exc:
            why = str(exc)
    times = "twice" if reads == 2 else f"{reads} times"
    raise InfraError(f"{what} came back cut {times} ({why}); an infrastructure error, not a verdict: the item ends "
                     "as an error (retried once, and --resume runs it again)")
