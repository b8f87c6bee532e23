"""What every item's result holds, whatever the benchmark: who ran it, how it ended, what it cost.

A benchmark's result (InstanceResult, TaskResult) adds its own fields; its JSON file keeps its own keys.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field

# not a verdict: the machinery stopped the item (a resume runs it again); every benchmark's outcome set has it
ERROR = "error"
# cost_limit: --max-instance-cost stopped the agent; provider_error: --grade-provider-failures graded a failure
FINISH_REASONS = ("stop", "timeout", "error", "empty", "disk_limit", "cost_limit", "provider_error")


@dataclass(kw_only=True)
class ItemResult:
    """The fields every benchmark's result has (keyword-only: a benchmark's own fields come first)."""

    run_id: str = ""
    harness: str = ""
    model: str = ""
    outcome: str = ERROR
    finish_reason: str = ""  # one of FINISH_REASONS, or "" before the agent ran
    error: str = ""  # one sentence when outcome is ERROR (and for harness errors)
    error_type: str = ""  # the class of the exception that ended the item as an error ("" when none did)
    error_phase: str = ""  # the phase it happened in (run/item/phases.py; "" when unknown, and in older results)
    timings: dict = field(default_factory=dict)  # phase -> seconds; "total" too
    started_at: str = ""  # when the item's attempt began (UTC, ISO 8601): the timings are laid out from it
    harness_usage: dict = field(default_factory=dict)  # what the harness itself reported
    cost_usd: float | None = None  # None = unknown price, never a silent 0
    failed_requests: dict = field(default_factory=dict)  # provider failures by kind, not turns
    provider_cost_usd: float | None = None  # what the provider itself billed (OpenRouter's usage.cost)
    # a regraded item (`clawswe regrade`, run/regrade/): the run it comes from and how it ended there
    regrade: dict = field(default_factory=dict)
    node: str = ""  # the Kubernetes node its sandbox ran on (--kubernetes; "" on a Docker engine)

    @property
    def final(self) -> bool:
        """An error is not final: a resume runs the item again."""
        return self.outcome != ERROR

    def fail(self, error: str) -> None:
        """End as an error: `error` says why, unless an earlier, closer reason is already recorded."""
        self.outcome = ERROR
        self.error = self.error or error

    def error_line(self) -> str:
        """The error as the report shows it: with its phase when it is known."""
        return f"{self.error} (in phase {self.error_phase})" if self.error and self.error_phase else self.error

    def to_json(self) -> dict:
        return asdict(self)
