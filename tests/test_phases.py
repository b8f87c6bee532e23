"""Issue 33 §3: both runners run an item as a list of named phases (run/item/phases.py); a timed phase's seconds are
kept under its name, the timings keys the reports and `clawswe export harbor` read."""
from __future__ import annotations

import pytest

from pytest_clawswe.run.item.phases import ALWAYS, NEVER, Phase, run_phases
from pytest_clawswe.swe.benchmark import ClawSweBench
from pytest_clawswe.swe.instance.phases import InstancePhases
from pytest_clawswe.wildclaw.benchmark import WildClawBench
from pytest_clawswe.wildclaw.task_phases import TaskPhases


class Boom(Exception):
    pass


def _fail(state):
    raise Boom("the phase failed")


def test_timed_phases_keep_their_seconds_under_their_names_and_the_first_failure_ends_the_item():
    seen, timings = [], {}
    phases = [Phase("one", seen.append), Phase("quiet", seen.append, NEVER),
              Phase("agent", _fail, ALWAYS, after=lambda s: seen.append("after")), Phase("never", seen.append)]
    with pytest.raises(Boom, match="the phase failed"):  # raised as the step raised it
        run_phases(phases, "state", timings)
    assert seen == ["state", "state", "after"]  # `after` ran though the step failed; the next phase never ran
    assert set(timings) == {"one", "agent"} and all(isinstance(v, float) for v in timings.values())


def test_a_phase_timed_when_it_ends_well_keeps_no_seconds_when_it_fails():
    timings = {}
    with pytest.raises(Boom):
        run_phases([Phase("prepare_image", _fail)], None, timings)
    assert timings == {}


@pytest.mark.parametrize("phases, bench, inside", [
    (InstancePhases, ClawSweBench, set()),
    (TaskPhases, WildClawBench, {"grade"}),  # grade_and_score times itself: a regrade grades so too
])
def test_each_runners_phases_are_named_as_the_timings_its_benchmark_reads(phases, bench, inside):
    names = [p.name for p in phases.phases(phases())]
    assert len(names) == len(set(names))
    timed = [p.name for p in phases.phases(phases()) if p.timed != NEVER]
    read = [key for key, _ in bench.timing_phases]
    assert [k for k in read if k not in inside] == [k for k in timed if k in read]  # in the order the runner takes them
