"""When a provider's failure, not the agent, ended an instance; and the breaker that stops a run after a few.

The gateway classifies every answer of the provider (gateway/upstream/failures.py) and writes the kind into the
instance's ledger lines. When the agent has ended, its lines are read here (the same rule for every
benchmark, item_runner.ItemRunner.provider_outcome):

- the model never answered: no call succeeded and at least one failed at the provider -> error;
- the agent stopped right after a provider failure: its last call failed (401/402/403/unknown model, or
  429/5xx/unreachable after the harness's own retries) -> error.
Otherwise the agent's result stands and is graded; failed calls are counted apart (failed_requests). An
error is an InfraError: the instance ends as a pytest error with the provider's reason, and --resume runs it
again. --grade-provider-failures grades it instead (finish reason provider_error), as the released code did.

The breaker: each ended item appends one line to <run dir>/provider-streak.jsonl (its failure kind, or
null); N lines in a row of the same kind (--provider-breaker) and no further item starts, in any xdist
worker. The controller empties the file when a run (or its resume) starts.
"""
from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass
from pathlib import Path

from pytest_clawswe.errors import InfraError
from pytest_clawswe.gateway.upstream.failures import COST_LIMIT

STREAK_FILE = "provider-streak.jsonl"
ADVICE = {"billing": "top up and --resume", "auth": "check the API key and --resume",
          "permission": "check the key's access to the model and --resume",
          "model": "check the --model name and --resume"}


class ProviderError(InfraError):
    """The provider failed the agent: not a verdict, and not retried inside the run (--resume runs it)."""

    def __init__(self, message: str, kind: str, reason: str) -> None:
        super().__init__(message, retryable=False)
        self.kind, self.reason = kind, reason


@dataclass
class Outcome:
    failed_requests: dict[str, int]
    provider_cost_usd: float | None
    cost_limit: bool  # the gateway refused a call: the instance reached --max-instance-cost
    failure: ProviderError | None  # set when the provider, not the agent, ended the instance


def judge(records: list[dict]) -> Outcome:
    """What an instance's ledger lines (its last attempt) say about its provider."""
    from pytest_clawswe.gateway.record.ledger import failed_requests, provider_cost

    failed = failed_requests(records)
    cost_limit = any(r.get("failure") == COST_LIMIT for r in records)
    calls = [r for r in records if r.get("failure") != COST_LIMIT]
    bad = [r for r in calls if r.get("failure")]
    ok = [r for r in calls if not r.get("failure") and int(r.get("status") or 0) < 400]
    failure = None
    if bad and not ok:
        last = bad[-1]
        failure = ProviderError(f"the model never answered: the provider said {last.get('reason')} "
                                f"({len(bad)} of {len(calls)} calls failed); --resume runs it again",
                                last["failure"], str(last.get("reason") or ""))
    elif calls and calls[-1].get("failure") and not cost_limit:
        last = calls[-1]
        failure = ProviderError(f"the agent stopped after the provider answered {last.get('reason')} "
                                f"({len(bad)} of {len(calls)} calls failed); --resume runs it again",
                                last["failure"], str(last.get("reason") or ""))
    return Outcome(failed, provider_cost(records), cost_limit, failure)


# ---------------------------------------------------------------------------------------------- breaker
def reset(run_dir: Path) -> None:
    """A new run or resume: earlier streaks do not count (the key check has passed again)."""
    (Path(run_dir) / STREAK_FILE).unlink(missing_ok=True)


def note(run_dir: Path, item_id: str, error: BaseException | None) -> None:
    """One ended item: its provider failure kind, or null (a verdict, or an error of another kind)."""
    kind = reason = None
    if isinstance(error, ProviderError):
        kind, reason = error.kind, error.reason
    line = json.dumps({"ts": time.time(), "item": item_id, "kind": kind, "reason": reason}) + "\n"
    fd = os.open(Path(run_dir) / STREAK_FILE, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:  # one short write with O_APPEND: whole lines even when workers end items at once
        os.write(fd, line.encode())
    finally:
        os.close(fd)


def tripped(run_dir: Path, count: int) -> str | None:
    """The sentence that says why no item starts any more, or None."""
    if count <= 0:
        return None
    try:
        text = (Path(run_dir) / STREAK_FILE).read_text(encoding="utf-8")
    except OSError:
        return None
    lines = []
    for raw in text.splitlines():
        try:
            lines.append(json.loads(raw))
        except ValueError:
            continue
    last = lines[-count:]
    if len(last) < count or not last[0].get("kind") or any(x.get("kind") != last[0]["kind"] for x in last):
        return None
    reason = (last[-1].get("reason") or last[-1]["kind"]).split(". ")[0].rstrip(".")  # its first sentence
    advice = ADVICE.get(last[0]["kind"], "wait and --resume")
    return f"the provider answered {reason} for {count} instances in a row; {advice}"
