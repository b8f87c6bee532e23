"""Issue 33 §2: one deadline per item, made once by the benchmark's runner and read, never rewritten, by the item's
hard stop, the agent phase and its retries, and the harness's wrapper (harness/deadline.py)."""
from __future__ import annotations

import ast
import dataclasses
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

import pytest_clawswe
from pytest_clawswe.harness.adapter import AgentContext, AgentRun, Harness
from pytest_clawswe.harness.deadline import AGENT_ALLOWANCE_S, Deadline
from pytest_clawswe.run.item.agent import run_attempt
from pytest_clawswe.swe.items import MIN_RETRY_BUDGET_S, SETUP_ALLOWANCE_S, new_deadline

PACKAGE = Path(pytest_clawswe.__file__).parent
# the one attribute named budget_s that is assigned: WildClawBench's result.json records the agent's budget
RECORDS = {("wildclaw/task_phases.py", "s.result")}


def _assigned(attr: str) -> list[tuple[str, int, str]]:
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE).as_posix()
        for node in ast.walk(ast.parse(path.read_text())):
            targets = node.targets if isinstance(node, ast.Assign) else \
                [node.target] if isinstance(node, (ast.AugAssign, ast.AnnAssign)) else []
            for target in [t for tt in targets for t in (tt.elts if isinstance(tt, ast.Tuple) else [tt])]:
                if isinstance(target, ast.Attribute) and target.attr == attr:
                    owner = target.value.id if isinstance(target.value, ast.Name) else ast.unparse(target.value)
                    found.append((rel, node.lineno, owner))
    return found


def test_nothing_assigns_the_budget_and_the_deadline_is_set_once_when_the_context_is_made():
    assert [(f, n, o) for f, n, o in _assigned("budget_s") if (f, o) not in RECORDS] == []
    # AgentContext.__post_init__ turns a number of seconds into a Deadline; nothing else sets one
    assert [(f, o) for f, _, o in _assigned("deadline")] == [("harness/adapter.py", "self")]


def test_the_budget_is_a_read_only_view_of_the_deadline():
    ctx = AgentContext("i", {}, None, Path("/nonexistent"), "m", 300.0)  # a number, as before the deadline
    assert ctx.deadline == Deadline(300.0) and ctx.budget_s == 300.0
    with pytest.raises(AttributeError):
        ctx.budget_s = 1.0  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        ctx.deadline.agent_s = 1.0  # type: ignore[misc]


def test_claw_swe_bench_computes_every_limit_of_an_instance_in_one_place():
    from pytest_clawswe.harness.deadline import HARD_STOP_MARGIN_S

    # the RunConfig fields it reads; the eval timeout is SweOptions'
    cfg = SimpleNamespace(budget_s=600.0, setup_timeout_s=None, agent_allowance_s=AGENT_ALLOWANCE_S)
    deadline = new_deadline(cfg, 300.0)
    assert deadline.budget_s == 600.0 and deadline.retry_min_s == MIN_RETRY_BUDGET_S
    assert deadline.hard_s() == (600.0 + AGENT_ALLOWANCE_S + SETUP_ALLOWANCE_S + deadline.verify_s
                                 + HARD_STOP_MARGIN_S)  # the backstop


def test_a_retry_gets_what_is_left_never_a_fresh_budget_nor_less_than_the_minimum():
    deadline = Deadline(100.0, retry_min_s=1.0)
    now = time.monotonic()
    assert 59.0 <= deadline.for_retry(now - 40).budget_s <= 60.0
    assert deadline.for_retry(now - 40).agent_s == 100.0  # the item's budget stays
    assert deadline.retry_allowed(now - 98.5) and not deadline.retry_allowed(now - 99.5)
    assert deadline.for_retry(now - 200).budget_s == 1.0


def test_the_wrapper_adds_the_harness_grace_and_a_harness_timeout_is_whole_seconds():
    deadline = Deadline(10.2)
    assert deadline.agent_timeout(60.0) == pytest.approx(70.2)
    assert deadline.harness_timeout() == 11 and Deadline(0.2).harness_timeout() == 1


class _Workspace:
    def kill_all(self):
        pass

    def running(self):
        return True


class _Seen(Harness):
    name = "seen"

    def __init__(self):
        super().__init__("m")
        self.budgets = []

    def send_task(self, ctx, prompt):
        self.budgets.append(ctx.budget_s)
        return AgentRun("stop")


def test_a_retry_runs_with_its_own_copy_and_the_items_context_is_left_as_made(tmp_path, monkeypatch):
    from pytest_clawswe.run.item import agent

    monkeypatch.setattr(agent, "DiskWatch", lambda ws, limit: _NoWatch())
    harness = _Seen()
    ctx = AgentContext("i", {}, _Workspace(), tmp_path, "m", Deadline(50.0))
    _, first = run_attempt(harness, ctx, "p", None)
    assert first is ctx and harness.budgets == [50.0]
    _, retry = run_attempt(harness, ctx, "p", None, since=time.monotonic() - 20)
    assert retry is not ctx and 29.0 <= retry.budget_s <= 30.0 and harness.budgets[1] == retry.budget_s
    assert ctx.budget_s == 50.0 and ctx.deadline == Deadline(50.0)


class _NoWatch:
    tripped_at = 0

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def test_the_hard_stop_covers_every_stages_own_limit_so_each_stage_ends_with_its_own_error():
    """The verify stage may take grade_s + its allowance (verify_s), the agent stage budget + its wrapper's grace +
    its allowance: an item whose setup, agent and verify stages each take their whole limit ends with that stage's
    error, never the hard stop's."""
    from pytest_clawswe.harness.deadline import HARD_STOP_MARGIN_S, VERIFY_ALLOWANCE_S

    deadline = Deadline(600.0, setup_s=1200.0, grade_s=300.0)
    every_stage = deadline.setup_s + deadline.agent_stage_s(60.0) + deadline.verify_s
    assert deadline.hard_s(60.0) > every_stage and deadline.agent_stage_s(60.0) > deadline.agent_timeout(60.0)
    assert deadline.hard_s(60.0) == (1200.0 + 600.0 + 60.0 + AGENT_ALLOWANCE_S + 300.0 + VERIFY_ALLOWANCE_S
                                     + HARD_STOP_MARGIN_S)
    assert deadline.hard_s() == deadline.hard_s(0.0) < deadline.hard_s(60.0)  # no wrapper grace: none counted
    # a retry's deadline keeps the item's hard stop: it is the item's, not the attempt's
    assert deadline.for_retry(time.monotonic() - 500).hard_s(60.0) == deadline.hard_s(60.0)
