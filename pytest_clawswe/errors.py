"""One exception hierarchy: every error of ours is one sentence that says what to do, never a traceback.

    ClawsweError
    ├── UserError      the user's to fix, found before anything is written where it can be (a dataset, a harness,
    │                  a price file, a task file, no runs to report)
    ├── InfraError     the machinery (Docker, an image, the gateway, the evaluator, a provider): the item errors,
    │   │              it never fails; `retryable` says whether a second attempt from scratch may succeed
    │   └── StageTimeout   a stage of the item (run/item/phases.py) ran over its own limit and was stopped
    │       ├── SetupTimeout    images, containers, the sandbox's set-up (the Deadline's setup_s)
    │       ├── AgentTimeout    the agent stage past the budget, the wrapper's grace and --agent-allowance
    │       └── VerifyTimeout   grading (the Deadline's verify_s)
    │   └── HardStop       the item ran past its hard stop (pytest-timeout, the Deadline's hard_s): the backstop
    ├── ItemError      the item ends as an error result (a task's setup, its grader)
    └── Verdict        a wrong answer: a pytest failure (not resolved, not passed)

A benchmark's own classes live in its package on these bases; classes that were ValueErrors or RuntimeErrors stay
that too (callers catch them so).
"""
from __future__ import annotations


class ClawsweError(Exception):
    """Ours: one sentence, shown without a traceback (pytest items and the `clawswe` command)."""


class UserError(ClawsweError):
    """A problem the user can fix; printed as one sentence, no traceback."""


class DatasetError(UserError):
    """Bad or unreachable dataset input; the message is one sentence that says what to do."""


class HarnessError(UserError):
    """The harness cannot run as configured (missing binary, bad option); one sentence for the user."""


class InfraError(ClawsweError):
    """The machinery failed (Docker, image, evaluator), not the agent: the item errors, never fails.

    `retryable`: a second attempt from scratch may succeed (a daemon hiccup, an evaluator crash), as
    opposed to a missing image or a full disk, which would only fail again."""

    def __init__(self, message: str, retryable: bool = True):
        super().__init__(message)
        self.retryable = retryable


class StageTimeout(InfraError):
    """A stage of an item ran over its own limit (the item's Deadline): what it waited on was stopped, and the
    item ends as an error naming the phase, never as a 0. Not retried from scratch (a hang tends to hang again):
    --resume runs the item again."""

    stage = ""

    def __init__(self, message: str):
        super().__init__(message, retryable=False)


class SetupTimeout(StageTimeout):
    """The setup stage (images, the sandbox, its services and warmup) ran over its limit (--setup-timeout)."""

    stage = "setup"


class AgentTimeout(StageTimeout):
    """The agent stage ran over its limit (the budget, the wrapper's grace and --agent-allowance): a step after the
    agent's own stop hung (a session backup, the patch's collection); its sandbox was removed, so nothing is graded."""

    stage = "agent"


class VerifyTimeout(StageTimeout):
    """The verify stage (the evaluation, the grader) ran over its limit (the benchmark's grading timeout)."""

    stage = "verify"


class HardStop(InfraError):
    """The item ran past its hard stop (pytest-timeout at the Deadline's hard_s, or --timeout): a step waited on what
    its stage's stop could not end (a machine-wide build or pull, an engine that stopped answering). Not retried from
    scratch: --resume runs the item again."""

    def __init__(self, message: str):
        super().__init__(message, retryable=False)


class ItemError(ClawsweError):
    """The item ended as an error result (see its `error`): a pytest error, never a failure."""


class Verdict(ClawsweError):
    """The item's answer is wrong: a pytest failure with the reason."""


class BundleBuildError(ClawsweError, RuntimeError):
    """docker build failed; the message ends with the builder's last lines."""
