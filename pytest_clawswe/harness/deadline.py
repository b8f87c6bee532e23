"""One item's deadline, made once by its benchmark's runner and read, never rewritten, by every phase.

Every time limit of an item comes from here (as Harbor's trial computes its timeouts once when it is made): the
setup, agent and verify stages' own limits (run/item/phases.py), the item's hard stop (pytest-timeout's backstop,
items.py), the agent's budget and what a retry gets of it (run/item/agent.py), the wrapper's deadline of a
harness run (budget + the harness's own grace_s, adapters/_bundled.py) and a harness's own timeout (openclaw's
--timeout). It lives on the harness layer because AgentContext, which adapters read, holds it; the runners above
make it.

A retry does not change the item's deadline: it gets a new frozen value (`for_retry`) whose `budget_s` is what was
left when the retry's agent existed, in its own AgentContext copy (run/item/agent.py).
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass, replace

# what the verify stage may take on top of grading's own timeout: the grading container's start, the inputs copied
# into it, the patch applied, the report read (run/item/phases.py stops the stage at grade_s + this)
VERIFY_ALLOWANCE_S = 300.0
# what the agent stage may take on top of the agent's budget and its wrapper's grace: the harness's set-up, its
# session backup, the patch or the sandbox's files collected, the sandbox removed (--agent-allowance; past it
# run/item/phases.py stops the stage: a step that hangs after the wrapper's kill, which stops only the agent)
AGENT_ALLOWANCE_S = 300.0
# what the hard stop leaves past every stage's own limit: a stage's watchdog removes the item's containers and the
# stage raises its own error (SetupTimeout, AgentTimeout, VerifyTimeout) before the backstop
HARD_STOP_MARGIN_S = 60.0


@dataclass(frozen=True)
class Deadline:
    agent_s: float  # the agent's budget for the item (--budget; WildClawBench: timeout_seconds x --budget-factor)
    setup_s: float = 0.0  # the setup stage's limit: images and containers (--setup-timeout, or its SETUP_ALLOWANCE_S)
    grade_s: float = 0.0  # grading's own timeout (--eval-timeout / --grade-timeout)
    verify_allowance_s: float = VERIFY_ALLOWANCE_S  # the verify stage's limit is grade_s + this (verify_s)
    retry_min_s: float = 1.0  # a retry with less of the budget left than this is not started
    agent_allowance_s: float = AGENT_ALLOWANCE_S  # the agent stage's limit is agent_s + grace + this (agent_stage_s)
    attempt_s: float | None = None  # this attempt's budget (a retry's: what was left); None: the whole agent_s

    @property
    def budget_s(self) -> float:
        """The wall-clock budget of this attempt of the agent."""
        return self.agent_s if self.attempt_s is None else self.attempt_s

    @property
    def verify_s(self) -> float:
        """The verify stage's limit: grading's own timeout (which ends the graded command itself, as it always did)
        and the allowance for the rest of the stage."""
        return self.grade_s + self.verify_allowance_s

    def agent_stage_s(self, grace_s: float) -> float:
        """The agent stage's limit: the whole budget (its retries run within it) plus the wrapper's grace (`grace_s`,
        as agent_timeout), which stop the agent itself, and the allowance for the stage's other steps."""
        return self.agent_s + grace_s + self.agent_allowance_s

    def hard_s(self, grace_s: float = 0.0) -> float:
        """The hard stop of the whole item (pytest-timeout's backstop): every stage's own limit, setup_s,
        agent_stage_s and verify_s, then HARD_STOP_MARGIN_S, so a stage that runs out ends with its own, more
        precise, error."""
        return self.setup_s + self.agent_stage_s(grace_s) + self.verify_s + HARD_STOP_MARGIN_S

    def left(self, since: float, now: float | None = None) -> float:
        """What is left of the agent's budget for an agent phase that began at `since` (time.monotonic())."""
        return self.agent_s - ((time.monotonic() if now is None else now) - since)

    def retry_allowed(self, since: float) -> bool:
        return self.left(since) >= self.retry_min_s

    def for_retry(self, since: float) -> Deadline:
        """The deadline of a retry that starts now in an agent phase begun at `since`: what is left (at least
        retry_min_s), never a fresh budget."""
        return replace(self, attempt_s=max(self.retry_min_s, self.left(since)))

    def agent_timeout(self, grace_s: float) -> float:
        """The wrapper's deadline of a harness run: the attempt's budget plus the harness's grace (Harness.grace_s,
        --harness-option grace: the harness's own setting), so its own timeout at the budget fires first."""
        return self.budget_s + grace_s

    def harness_timeout(self) -> int:
        """A harness's own timeout flag in whole seconds (at least 1): the attempt's budget."""
        return max(1, math.ceil(self.budget_s))
