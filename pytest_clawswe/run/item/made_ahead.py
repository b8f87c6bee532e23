"""What the next item of this process needs before its agent starts (its started sandbox), made in a thread while
this item's agent works (after `after_s`, as the evaluation container: an agent that ends at once makes it start
then, while its patch is read and graded): the container start leaves the next item's critical path.

The session tells the runner which item this process runs next (pytest's `nextitem`); the benchmark's runner
makes it ahead and its next item takes it when what it would make itself is the same (the key), else it is
discarded and the item makes its own. Nothing of the agent's budget or of what is graded changes: the agent's
clock starts when the agent does, in a container no one used. `CLAWSWE_AHEAD=0` turns it off.
"""
from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

T = TypeVar("T")


def enabled() -> bool:
    return os.environ.get("CLAWSWE_AHEAD", "1") != "0"


class Ahead(Generic[T]):
    """`make()` run in a thread, returning (key, value) or None (nothing to make); `discard(value)` undoes a value
    nobody takes. A make that raises is as if nothing was made: the item makes its own and reports what fails."""

    def __init__(self, item_id: str, make: Callable[[], tuple[Hashable, T] | None],
                 discard: Callable[[T], None], after_s: float = 0.0):
        self.item_id = item_id
        self.seconds = 0.0  # how long making it took (off the critical path)
        self._make, self._discard = make, discard
        self._made: tuple[Hashable, T] | None = None
        self._go = threading.Event()  # set: make it now (else after `after_s`)
        self._cancelled = False
        self._thread = threading.Thread(target=self._run, args=(after_s,), name=f"clawswe-ahead-{item_id}",
                                        daemon=True)
        self._thread.start()

    def hurry(self) -> None:
        """Make it now, not after `after_s`."""
        self._go.set()

    def _run(self, after_s: float) -> None:
        self._go.wait(after_s)
        if self._cancelled:
            return
        start = time.monotonic()
        try:
            self._made = self._make()
        except Exception:  # noqa: BLE001  the item makes its own, and sees what fails
            self._made = None
        self.seconds = round(time.monotonic() - start, 3)

    def take(self, item_id: str, key: Hashable) -> T | None:
        """The value when it was made for `item_id` with `key` (waits while it is being made); else None, and what
        was made is discarded."""
        self._go.set()
        self._thread.join()
        made, self._made = self._made, None
        if made is None:
            return None
        if item_id == self.item_id and made[0] == key:
            return made[1]
        self._discard(made[1])
        return None

    def discard(self) -> None:
        """Undo what was made; nothing is made when it had not started."""
        self._cancelled = True
        self._go.set()
        self._thread.join()
        made, self._made = self._made, None
        if made is not None:
            self._discard(made[1])
