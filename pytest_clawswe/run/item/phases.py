"""An item's run as a list of named phases in three stages (as Harbor's trial runs setup, agent and verification,
each with its own timeout and its own error).

Each benchmark's runner lists its phases (swe/instance/phases.py, wildclaw/task_phases.py), each in a stage:
`setup` (images, the sandbox, its services), `agent` (the agent and what is collected from its sandbox), `verify`
(grading). `run_phases` runs them in order on one per-item state object and keeps each timed phase's seconds in the
result's timings under the phase's name, the keys the reports and `clawswe export harbor` read
(Benchmark.timing_phases).

A stage with a limit (`StageLimit`, from the item's Deadline: harness/deadline.py) runs under a watchdog: at the
limit it calls the stage's `stop` (the runner's: it removes the item's containers, so the exec, attach or start the
step waits on returns), and the stage ends with its own error (SetupTimeout, AgentTimeout, VerifyTimeout: errors.py)
naming the phase, the limit and what to do. When the stop finds no container of the item, the step waits on a machine-wide
build, pull or push (a harness bundle, an image: filled once for every later item): that time is not the item's, and
the stage's clock starts again; pytest-timeout's hard stop (Deadline.hard_s) stays the backstop. After such a wait the
item's own containers appeared at some moment of the last period: when the clock next runs out and they are there
(`count`), they get one whole period more, so an item's own work always has at least its limit (a first run on a
cluster pushes its images for minutes, then the items' pods all start at once). The agent itself is stopped by the
harness wrapper (Deadline.agent_timeout: budget + grace), which leaves its work to be graded; the agent stage's own
limit (Deadline.agent_stage_s: that and --agent-allowance) ends a step that hangs after it (AgentTimeout).

Whatever ends an item, the exception carries the phase it happened in (`phase_of`): the runner records it in the
result (`error_phase`) and the item's error line shows it.
"""
from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from pytest_clawswe.errors import AgentTimeout, SetupTimeout, StageTimeout, VerifyTimeout

OK, ALWAYS, NEVER = "ok", "always", "never"  # when a phase's seconds are kept: when it ends well, always, never
SETUP, AGENT, VERIFY = "setup", "agent", "verify"  # the stages, in Harbor's trial's order
PHASE_ATTR = "clawswe_phase"  # the attribute an exception carries its phase in (phase_of)


@dataclass(frozen=True)
class Phase:
    name: str  # what it does; a timed phase's timings key
    step: Callable[[Any], None]  # runs the phase on the item's state
    timed: str = OK  # OK: its seconds are kept when it ends well; ALWAYS: however it ends; NEVER: not timed
    after: Callable[[Any], None] | None = None  # runs once its seconds are taken, however it ended (a finally)
    stage: str = ""  # SETUP, AGENT or VERIFY ("": none, no limit)


def staged(stage: str, *phases: Phase) -> list[Phase]:
    """`phases` in `stage`."""
    return [replace(p, stage=stage) for p in phases]


@dataclass(frozen=True)
class StageLimit:
    """A stage's own limit and how it ends: `error` (a StageTimeout) with `hint`, what the user can do."""

    seconds: float
    error: type[StageTimeout]
    hint: str
    # stops what the stage's steps wait on (called from the watchdog); returns how many of the item's containers it
    # stopped: 0 means the step waits on nothing of the item's (a machine-wide build), and the clock starts again
    stop: Callable[[], int | None] | None = None
    count: Callable[[], int | None] | None = None  # how many of the item's containers there are, none stopped


# what to do about a setup or agent stage past its limit: the same for every benchmark (the options are the core's)
SETUP_HINT = "raise it with --setup-timeout, or check that the Docker engine answers (docker info); then --resume"
AGENT_HINT = ("the agent was stopped at its budget, and a step after it hung (its session backup, the collection "
              "of its work): check the harness's agent.log and the Docker engine, or raise --agent-allowance; "
              "then --resume")


def stage_limits(deadline, stop: Callable[[], int | None] | None, *, grace_s: float, verify_hint: str,
                 setup_hint: str = SETUP_HINT, count: Callable[[], int | None] | None = None) -> dict[str, StageLimit]:
    """The stages' limits of an item from its Deadline (computed there once, never here); `grace_s`: the run's
    harness wrapper's grace past the budget (Harness.grace_s)."""
    return {SETUP: StageLimit(deadline.setup_s, SetupTimeout, setup_hint, stop, count),
            AGENT: StageLimit(deadline.agent_stage_s(grace_s), AgentTimeout, AGENT_HINT, stop, count),
            VERIFY: StageLimit(deadline.verify_s, VerifyTimeout, verify_hint, stop, count)}


def causes(exc: BaseException | None, most: int = 20) -> Iterator[BaseException]:
    """`exc`, then what it was raised from or during, and so on (at most `most` of them: a chain may loop)."""
    while exc is not None and most > 0:
        yield exc
        exc, most = exc.__cause__ or exc.__context__, most - 1


def phase_of(exc: BaseException | None) -> str:
    """The phase an exception (or the one it was raised from) ended an item in; "" when none is known."""
    return next((phase for e in causes(exc) if (phase := getattr(e, PHASE_ATTR, ""))), "")


def _tag(exc: BaseException, phase: str) -> None:
    if not phase_of(exc):
        try:
            setattr(exc, PHASE_ATTR, phase)
        except (AttributeError, TypeError):  # an exception that takes no attribute: its phase stays unknown
            pass


class _Watchdog:
    """One stage's clock at a time: at its limit the stage's stop runs (once) unless the stage ended first."""

    def __init__(self, limits: Mapping[str, StageLimit]):
        self.limits, self.stage, self.lock = limits, "", threading.Lock()
        self.timer: threading.Timer | None = None
        self.fired = self.closed = False
        self.waited = False  # the last period ran out on a machine-wide wait (the stop found nothing of the item)

    def enter(self, stage: str, last_phase: str) -> None:
        """A phase of `stage` begins: a new stage closes the previous one (raising its error if it ran out)."""
        if stage == self.stage:
            return
        self.close(last_phase)
        self.stage, self.fired, self.closed, self.waited = stage, False, False, False
        if stage in self.limits:
            self._arm(stage)

    def _fire(self, stage: str) -> None:
        with self.lock:  # never after the stage closed: its stop would hit the next stage's containers
            if self.closed or stage != self.stage:
                return
            limit = self.limits[stage]
            if self.waited:  # the last period ended on a machine-wide wait
                found = _called(limit.count)
                if found is not None:  # still none of its own (still waiting), or they came since: a whole period more
                    self.waited = found == 0
                    self._arm(stage)
                    return
            stopped = _called(limit.stop)
            if stopped == 0:  # nothing of the item held it: a machine-wide build or pull it waits on, not the item's
                self.waited = True
                self._arm(stage)
                return
            self.fired = True

    def _arm(self, stage: str) -> None:
        self.timer = threading.Timer(self.limits[stage].seconds, self._fire, args=(stage,))
        self.timer.daemon = True
        self.timer.name = f"clawswe-{stage}-limit"
        self.timer.start()

    def expired(self, phase: str) -> StageTimeout | None:
        """The stage's error when its clock ran out (its stop ran): `phase` was running."""
        with self.lock:
            if not self.fired:
                return None
            limit = self.limits[self.stage]
        return limit.error(f"the {self.stage} stage did not finish within its limit of {limit.seconds:g} s "
                           f"(phase {phase} was stopped); {limit.hint}")

    def close(self, last_phase: str = "") -> None:
        with self.lock:
            self.closed = True
            if self.timer is not None:
                self.timer.cancel()
                self.timer = None
        if last_phase:
            over = self.expired(last_phase)
            if over is not None:
                _tag(over, last_phase)
                raise over


def _called(step: Callable[[], int | None] | None) -> int | None:
    """What a stage's stop or count says; None when it cannot (the step then returns late: the hard stop is the
    backstop)."""
    try:
        return step() if step is not None else None
    except Exception:  # noqa: BLE001
        return None


def run_phases(phases: Sequence[Phase], state: Any, timings: dict,
               limits: Mapping[str, StageLimit] | None = None) -> None:
    """Run `phases` in order on `state`; the first failure ends the item, tagged with its phase (phase_of): raised
    as the step raised it, or, when its stage ran over its limit, as the stage's error."""
    watchdog, last = _Watchdog(limits or {}), ""
    try:
        for phase in phases:
            watchdog.enter(phase.stage, last)
            last = phase.name
            try:
                _run_one(phase, state, timings)
            except BaseException as exc:
                over = watchdog.expired(phase.name)
                if over is None:
                    _tag(exc, phase.name)
                    raise
                _tag(over, phase.name)
                raise over from exc
            over = watchdog.expired(phase.name)  # stopped, and the step ended as if nothing happened
            if over is not None:
                _tag(over, phase.name)
                raise over
    finally:
        watchdog.close()


def _run_one(phase: Phase, state: Any, timings: dict) -> None:
    started, ended_well = time.monotonic(), False
    try:
        phase.step(state)
        ended_well = True
    finally:
        if phase.timed == ALWAYS or (phase.timed == OK and ended_well):
            timings[phase.name] = round(time.monotonic() - started, 3)
        if phase.after is not None:
            phase.after(state)
