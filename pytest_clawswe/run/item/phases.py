"""An item's run as a list of named phases (as Harbor's trial runs setup, agent and verification one after another).

Each benchmark's runner lists its phases (swe/instance/runner.py, wildclaw/task_runner.py); `run_phases` runs them
in order on one per-item state object and keeps each timed phase's seconds in the result's timings under the
phase's name, the keys the reports and `clawswe export harbor` read (Benchmark.timing_phases). A phase's failure
is raised as its step raised it; the time limits the phases run under are the item's Deadline
(harness/deadline.py).
"""
from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

OK, ALWAYS, NEVER = "ok", "always", "never"  # when a phase's seconds are kept: when it ends well, always, never


@dataclass(frozen=True)
class Phase:
    name: str  # what it does; a timed phase's timings key
    step: Callable[[Any], None]  # runs the phase on the item's state
    timed: str = OK  # OK: its seconds are kept when it ends well; ALWAYS: however it ends; NEVER: not timed
    after: Callable[[Any], None] | None = None  # runs once its seconds are taken, however it ended (a finally)


def run_phases(phases: Sequence[Phase], state: Any, timings: dict) -> None:
    """Run `phases` in order on `state`; the first failure ends the item (raised as it is)."""
    for phase in phases:
        started, ended_well = time.monotonic(), False
        try:
            phase.step(state)
            ended_well = True
        finally:
            if phase.timed == ALWAYS or (phase.timed == OK and ended_well):
                timings[phase.name] = round(time.monotonic() - started, 3)
            if phase.after is not None:
                phase.after(state)
