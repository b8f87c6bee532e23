"""Issue 33 §3: an item's phases run in three stages (setup, agent, verify, as Harbor's trial), each with its own
limit from the item's Deadline and its own error, and every item error records the phase it
happened in (run/item/phases.py). Pure logic: the stop here releases what the step waits on, as removing the item's
containers makes a blocked exec return (tests/test_stage_limits_docker.py does that with real containers)."""
from __future__ import annotations

import json
import time
import threading
from types import SimpleNamespace

import pytest

from pytest_clawswe.errors import AgentTimeout, InfraError, SetupTimeout, StageTimeout, VerifyTimeout
from pytest_clawswe.harness.deadline import AGENT_ALLOWANCE_S, VERIFY_ALLOWANCE_S, Deadline
from pytest_clawswe.run.config import RunConfig
from pytest_clawswe.run.item.phases import (AGENT, ALWAYS, NEVER, SETUP, VERIFY, Phase, StageLimit, phase_of,
                                            run_phases, stage_limits, staged)
from pytest_clawswe.swe.instance.phases import InstancePhases
from pytest_clawswe.wildclaw.task_phases import TaskPhases

LONG = 60.0  # what a blocked step waits at most here: the test fails (not hangs) when nothing stops it


class Blocked:
    """A step waiting on something only its stage's stop releases (a container's exec, its start)."""

    def __init__(self):
        self.released = threading.Event()
        self.stops = 0

    def stop(self):
        self.stops += 1
        self.released.set()

    def wait_then_fail(self, state):
        assert self.released.wait(LONG), "the stage's stop never came"
        raise InfraError("exec in container failed: the container is gone")

    def wait_then_return(self, state):
        assert self.released.wait(LONG), "the stage's stop never came"


def _limits(blocked: Blocked, seconds: float = 0.2) -> dict[str, StageLimit]:
    return {SETUP: StageLimit(seconds, SetupTimeout, "raise it with --setup-timeout", blocked.stop),
            VERIFY: StageLimit(seconds, VerifyTimeout, "raise --grade-timeout", blocked.stop)}


def test_a_setup_stage_past_its_limit_is_stopped_and_ends_with_its_own_error_naming_the_phase():
    blocked, seen, timings = Blocked(), [], {}
    phases = [*staged(SETUP, Phase("load", seen.append, NEVER), Phase("prepare_image", lambda s: None),
                      Phase("container_start", blocked.wait_then_fail)),
              *staged(AGENT, Phase("agent", seen.append, ALWAYS))]
    with pytest.raises(SetupTimeout) as caught:
        run_phases(phases, "state", timings, _limits(blocked))
    message = str(caught.value)
    assert "setup stage" in message and "0.2 s" in message and "phase container_start" in message
    assert "--setup-timeout" in message  # what to do
    assert isinstance(caught.value, InfraError) and not caught.value.retryable  # a pytest error; --resume reruns it
    assert isinstance(caught.value.__cause__, InfraError)  # what the stopped step raised, kept
    assert phase_of(caught.value) == "container_start"
    assert blocked.stops == 1 and seen == ["state"]  # the agent never started
    assert set(timings) == {"prepare_image"}  # timings kept as before: the failed phase's are not


def test_a_verify_stage_past_its_limit_ends_with_the_verify_error():
    blocked = Blocked()
    phases = [*staged(SETUP, Phase("setup", lambda s: None)), *staged(AGENT, Phase("agent", lambda s: None, ALWAYS)),
              *staged(VERIFY, Phase("score", blocked.wait_then_fail))]
    with pytest.raises(VerifyTimeout, match=r"verify stage .*\(phase score .*--grade-timeout") as caught:
        run_phases(phases, None, {}, _limits(blocked))
    assert phase_of(caught.value) == "score" and blocked.stops == 1


def test_a_step_that_returns_once_stopped_still_ends_as_its_stages_error():
    blocked = Blocked()
    after = []
    phases = staged(SETUP, Phase("setup", blocked.wait_then_return), Phase("never", after.append))
    with pytest.raises(SetupTimeout):
        run_phases(phases, None, {}, _limits(blocked))
    assert after == []  # what it waited on is gone: nothing runs on


def test_an_error_in_any_phase_is_raised_as_it_was_and_carries_its_phase():
    class Boom(Exception):
        pass

    def boom(state):
        raise Boom("the step failed")

    for stage, name in ((SETUP, "purge_check"), (AGENT, "patch"), (VERIFY, "verdict")):
        phases = [*staged(SETUP, Phase("load", lambda s: None)), *staged(stage, Phase(name, boom))]
        with pytest.raises(Boom) as caught:
            run_phases(phases, None, {}, _limits(Blocked(), seconds=LONG))
        assert phase_of(caught.value) == name
    # an exception raised from it (the runner's OSError -> InfraError) keeps the phase
    try:
        try:
            run_phases([Phase("images", boom, stage=SETUP)], None, {})
        except Boom as exc:
            raise InfraError("Docker failed") from exc
    except InfraError as wrapped:
        assert phase_of(wrapped) == "images"


def test_a_stage_that_ended_in_time_is_never_stopped_afterwards():
    blocked, gate = Blocked(), threading.Event()
    phases = [*staged(SETUP, Phase("setup", lambda s: None)),
              *staged(AGENT, Phase("agent", lambda s: gate.wait(1.0), ALWAYS))]  # longer than setup's limit
    run_phases(phases, None, {}, _limits(blocked, seconds=0.2))
    assert blocked.stops == 0  # the agent's containers are never the setup stage's to stop


def test_the_agent_stage_limit_comes_after_the_wrappers_stop_of_the_agent():
    """The agent itself is stopped by its wrapper at budget + grace (its work still graded); the stage's own limit is
    that plus the allowance for the steps around the agent, and a retry's shorter attempt does not shorten it."""
    deadline = Deadline(5.0, setup_s=1.0, grade_s=2.0, agent_allowance_s=7.0)
    limits = stage_limits(deadline, None, grace_s=3.0, verify_hint="")
    assert set(limits) == {SETUP, AGENT, VERIFY}
    assert limits[AGENT].seconds == 5.0 + 3.0 + 7.0 > deadline.agent_timeout(3.0)
    assert limits[AGENT].error is AgentTimeout and "--agent-allowance" in limits[AGENT].hint
    retry = deadline.for_retry(time.monotonic() - 4.0)
    assert retry.agent_timeout(3.0) < deadline.agent_timeout(3.0) and retry.agent_stage_s(3.0) == 15.0
    assert Deadline(5.0).agent_allowance_s == AGENT_ALLOWANCE_S


def test_an_agent_stage_step_that_hangs_after_the_agent_ends_with_the_agent_stage_error():
    blocked = Blocked()
    limits = {AGENT: StageLimit(0.2, AgentTimeout, "raise --agent-allowance", blocked.stop)}
    graded = []
    phases = [*staged(AGENT, Phase("agent", lambda s: None, ALWAYS), Phase("agent_end", blocked.wait_then_fail)),
              *staged(VERIFY, Phase("score", graded.append))]
    with pytest.raises(AgentTimeout, match=r"agent stage .*0\.2 s \(phase agent_end .*--agent-allowance") as caught:
        run_phases(phases, None, {}, limits)
    assert phase_of(caught.value) == "agent_end" and blocked.stops == 1
    assert graded == []  # its sandbox is gone: nothing is graded


def test_the_stage_limits_come_from_the_items_deadline():
    from pytest_clawswe.harness.deadline import HARD_STOP_MARGIN_S
    from pytest_clawswe.swe.items import SETUP_ALLOWANCE_S, new_deadline
    from pytest_clawswe.wildclaw.items import SETUP_ALLOWANCE_S as WILD_SETUP_S
    from pytest_clawswe.wildclaw.items import new_deadline as new_task_deadline

    cfg = SimpleNamespace(budget_s=600.0, setup_timeout_s=None, agent_allowance_s=AGENT_ALLOWANCE_S)
    limits = stage_limits(new_deadline(cfg, 1800.0), None, grace_s=60.0, verify_hint="b")
    assert limits[SETUP].seconds == SETUP_ALLOWANCE_S and limits[SETUP].error is SetupTimeout
    assert limits[VERIFY].seconds == 1800.0 + VERIFY_ALLOWANCE_S and limits[VERIFY].error is VerifyTimeout
    assert limits[AGENT].seconds == 600.0 + 60.0 + AGENT_ALLOWANCE_S and limits[AGENT].error is AgentTimeout
    given = new_deadline(SimpleNamespace(budget_s=600.0, setup_timeout_s=30.0, agent_allowance_s=40.0), 1800.0)
    assert given.setup_s == 30.0 and given.agent_stage_s(0.0) == 640.0
    assert given.hard_s() == 30.0 + 640.0 + given.verify_s + HARD_STOP_MARGIN_S  # the backstop follows them
    options = SimpleNamespace(budget=lambda s: s * 2, grade_timeout_s=120.0)
    task = SimpleNamespace(timeout_seconds=300)
    assert new_task_deadline(options, task).setup_s == WILD_SETUP_S
    assert new_task_deadline(options, task, 20.0).setup_s == 20.0
    assert new_task_deadline(options, task).verify_s == 120.0 + VERIFY_ALLOWANCE_S
    assert new_task_deadline(options, task).agent_stage_s(0.0) == 600.0 + AGENT_ALLOWANCE_S
    assert new_task_deadline(options, task, None, 10.0).agent_stage_s(0.0) == 610.0


@pytest.mark.parametrize("phases, where", [
    (InstancePhases, {"prepare_image": SETUP, "container_start": SETUP, "purge_check": SETUP, "agent": AGENT,
                      "patch": AGENT, "score": VERIFY}),
    (TaskPhases, {"images": SETUP, "setup": SETUP, "agent": AGENT, "snapshot": AGENT, "verify": VERIFY}),
])
def test_each_runners_phases_are_in_the_three_stages_in_order(phases, where):
    listed = phases.phases(phases())
    stages = [p.stage for p in listed]
    assert stages == sorted(stages, key=[SETUP, AGENT, VERIFY].index) and set(stages) == {SETUP, AGENT, VERIFY}
    assert {p.name: p.stage for p in listed if p.name in where} == where


def test_the_runner_records_the_phase_of_an_error_and_reads_results_without_it(tmp_path):
    from pytest_clawswe.wildclaw.options import WildOptions
    from pytest_clawswe.wildclaw.results import TaskResult
    from pytest_clawswe.wildclaw.task_runner import TaskRunner

    runner = TaskRunner(RunConfig("r", tmp_path, "claude-code", "m"), WildOptions(tmp_path), None, None,
                        progress=lambda line: None)
    task = SimpleNamespace(id="t-1", name="t", category="code", modality="text", timeout_seconds=60)

    def hang(state):
        raise SetupTimeout("the setup stage did not finish within its limit of 1 s (phase setup was stopped)")

    runner.run_phases = lambda task, work, result: run_phases([Phase("setup", hang, stage=SETUP)], None, {})
    with pytest.raises(SetupTimeout):
        runner.run(task)
    written = json.loads((tmp_path / "tasks" / "t-1" / "result.json").read_text())
    assert written["outcome"] == "error" and written["error_type"] == "SetupTimeout"
    assert written["error_phase"] == "setup"
    assert TaskResult.from_json(written).error_line().endswith("(in phase setup)")
    del written["error_phase"]  # a result written before the field: read as unknown
    old = TaskResult.from_json(written)
    assert old.error_phase == "" and old.error_line() == old.error


def test_the_timeouts_are_stage_timeouts_and_grades_stay_grade_errors():
    from pytest_clawswe.wildclaw.grading.grader import GradeError, GradeTimeout

    assert issubclass(GradeTimeout, GradeError) and issubclass(GradeTimeout, VerifyTimeout)
    assert issubclass(SetupTimeout, StageTimeout) and not GradeTimeout("x").retryable


def test_a_cleanup_that_fails_after_a_stage_ran_out_does_not_hide_the_stages_error(tmp_path):
    """The stop removed the item's containers: a cleanup that then fails on them (a services sidecar's audit copy)
    is a consequence; the item ends with the stage's error, not retried as the cleanup's InfraError would be."""
    from contextlib import ExitStack

    from pytest_clawswe.wildclaw.options import WildOptions
    from pytest_clawswe.wildclaw.task_runner import TaskRunner

    runner = TaskRunner(RunConfig("r", tmp_path, "claude-code", "m"), WildOptions(tmp_path), None, None,
                        progress=lambda line: None)
    task = SimpleNamespace(id="t-1", name="t", category="code", modality="text", timeout_seconds=60)
    attempts = []

    def copy_audit():
        raise InfraError("could not copy the audit out: gone")  # retryable, as the sidecar's is

    def run(task, work, result):
        attempts.append(1)
        blocked = Blocked()
        with ExitStack() as stack:
            stack.callback(copy_audit)
            run_phases(staged(SETUP, Phase("setup", blocked.wait_then_fail)), None, {}, _limits(blocked))

    runner.run_phases = run
    with pytest.raises(SetupTimeout) as caught:
        runner.run(task)
    assert attempts == [1]  # a stage's error is not retried from scratch
    assert "could not copy the audit out" in "".join(getattr(caught.value, "__notes__", []))
    written = json.loads((tmp_path / "tasks" / "t-1" / "result.json").read_text())
    assert written["error_type"] == "SetupTimeout" and written["error_phase"] == "setup"


def test_a_wait_on_a_machine_wide_build_is_not_the_items_and_restarts_the_clock():
    """A cold harness bundle or image build (one per machine, no container of the item) that outlasts the setup
    limit ended the item as SetupTimeout once it finished (a first run on a slow machine lost its items to the
    cache it was filling); when the stop finds nothing of the item to stop, the stage's clock starts again."""
    stops, timings = [], {}

    def stop():
        stops.append(time.monotonic())
        return 0  # no container of the item: the step waits on the machine's build

    def build(state):
        time.sleep(0.7)  # outlasts the 0.2 s limit more than once

    limits = {SETUP: StageLimit(0.2, SetupTimeout, "raise it with --setup-timeout", stop)}
    run_phases([*staged(SETUP, Phase("harness", build), Phase("container_start", lambda s: None)),
                *staged(AGENT, Phase("agent", lambda s: None, ALWAYS))], "state", timings, limits)
    assert len(stops) >= 2 and set(timings) >= {"harness", "container_start", "agent"}


def test_after_a_machine_wide_wait_the_items_own_work_gets_at_least_its_limit():
    """A cluster's first run pushes its images for minutes (no pod of the item yet: the clock starts again), then the
    item's pods start at some moment of a period: its own work is not stopped at that period's end, but one whole
    period later at the earliest; a step that still waits then is stopped."""
    present, stops = [0], []

    def stop():
        stops.append(time.monotonic())
        return present[0]

    def push(state):
        time.sleep(0.95)  # machine-wide: the clock (0.4 s) runs out at 0.4 and 0.8 with nothing of the item

    def own(state):
        present[0] = 1  # its pod: at 0.95, 0.25 s before the period ends at 1.2
        time.sleep(0.3)

    limits = {SETUP: StageLimit(0.4, SetupTimeout, "raise it with --setup-timeout", stop, lambda: present[0])}
    timings: dict = {}
    run_phases([*staged(SETUP, Phase("push", push), Phase("start", own)), *staged(AGENT, Phase("agent", print))],
               None, timings, limits)  # not stopped at 1.2, though the stage has run three periods
    # stopped (and found nothing) once: from then on the count alone says it still waits, then that its pod came
    assert len(stops) == 1 and {"push", "start"} <= set(timings)

    blocked = Blocked()
    present[0] = 0
    started = []

    def own_forever(state):
        present[0] = 1
        started.append(time.monotonic())
        blocked.wait_then_fail(state)

    def stop_own():  # removes the item's containers, when it has any: what its step waits on returns
        if present[0]:
            blocked.stop()
        return present[0]

    limits = {SETUP: StageLimit(0.4, SetupTimeout, "raise it with --setup-timeout", stop_own, lambda: present[0])}
    with pytest.raises(SetupTimeout):
        run_phases(staged(SETUP, Phase("push", push), Phase("start", own_forever)), None, {}, limits)
    assert time.monotonic() - started[0] >= 0.4 - 0.05 and blocked.stops == 1  # its own work had a whole limit
