"""The run's spending ceilings: --max-cost for the run, --max-instance-cost for one instance.

The counted cost is the gateway's: every model request of the run is a line in <run dir>/gateway/usage/
(gateway/record/ledger.py), written before its answer went out, by whichever xdist worker or gateway process served it.
So every pytest process reads the same figure, and a resumed run counts what its earlier parts spent.

--max-cost: before an item starts, the cost counted so far plus what the running items are likely to add
(each running item: the mean cost of the instances that have finished, in this run) is compared with the
ceiling; at or past it the item is not started (reported as skipped: not run, and --resume runs it).
--max-instance-cost: the gateway is told the ceiling and the model's prices per token when the instance is
registered, and refuses its calls once the instance's own records reach it (gateway/service/app.py).
"""
from __future__ import annotations

import json
import warnings
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

from pytest_clawswe.usage import Usage

USAGE_FIELDS = ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens")
_PROBE = 1_000_000  # tokens priced at once to read a price per token (1000 requests of 1000: no long-context tier)


# An item may use models under names of its own beside its agent's (the agent's tools, grading's judge): the
# gateway counts each name apart (its ledger lines, its ceiling); spending adds them up as the item's.
ROLES = ("tools", "judge")


def ledger_name(item_id: str, role: str = "") -> str:
    """The name the gateway counts `item_id`'s calls under: the agent's is the item's id, a `role` in ROLES has its
    own (`<item id>.<role>`)."""
    if role and role not in ROLES:
        raise ValueError(f"unknown model role {role!r}: one of {', '.join(ROLES)}")
    return f"{item_id}.{role}" if role else item_id


def item_of(name: str) -> str:
    """The item a ledger name counts for (ledger_name's inverse)."""
    base, dot, role = name.rpartition(".")
    return base if dot and role in ROLES else name


def unit_prices(model: str, prices_file: str | None = None) -> list[float] | None:
    """USD per token of (input, output, cache read, cache write) for `model`; None when it cannot be priced."""
    from pytest_clawswe.prices import PriceBook

    book = PriceBook.from_file(prices_file)
    prices = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the caller says it in its own sentence
        for name in USAGE_FIELDS:
            cost = book.cost_usd(Usage(1000, **{name: _PROBE}), model)
            if cost is None:
                return None
            prices.append(cost / _PROBE)
    return prices


def _records(usage_dir: Path):
    for path in sorted(usage_dir.glob("*.jsonl")):
        try:
            text = path.read_text(encoding="utf-8")
        except OSError:
            continue
        for line in text.splitlines():
            try:
                yield json.loads(line)
            except ValueError:  # a line being written, or torn
                continue


@dataclass
class Spend:
    counted: float  # USD of every request the gateway counted in this run folder
    by_instance: dict[str, float]
    unpriced: int  # requests of models without a price (counted as 0 here)


def counted_spend(run_dir: str | Path, prices_file: str | None = None) -> Spend:
    """What the gateway counted so far, priced request group by model (one price lookup per model)."""
    from pytest_clawswe.prices import PriceBook

    book = PriceBook.from_file(prices_file)
    tokens: dict[tuple[str, str], Usage] = defaultdict(Usage)
    for r in _records(Path(run_dir) / "gateway" / "usage"):
        key = (str(r.get("instance_id") or ""), str(r.get("model") or ""))
        tokens[key] += Usage(1, *(int(r.get(f) or 0) for f in USAGE_FIELDS))
    by_instance: dict[str, float] = defaultdict(float)
    unpriced = 0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for (instance, model), usage in tokens.items():
            cost = book.cost_usd(usage, model)
            if cost is None:
                unpriced += usage.requests
                continue
            by_instance[instance] += cost
    return Spend(sum(by_instance.values()), dict(by_instance), unpriced)


def over_max_cost(run_dir: str | Path, items_dir: Path, ceiling: float, prices_file: str | None = None) -> str | None:
    """The one sentence that stops an item from starting, or None while the run is under its ceiling."""
    spend = counted_spend(run_dir, prices_file)
    running = {p.name[1:-len(".partial")] for p in items_dir.glob(".*.partial")} if items_dir.is_dir() else set()
    by_item: dict[str, float] = defaultdict(float)
    for name, cost in spend.by_instance.items():
        by_item[item_of(name)] += cost
    finished = [c for i, c in by_item.items() if i not in running and not i.startswith("_")]
    mean = sum(finished) / len(finished) if finished else 0.0
    # a running item is likely to cost what a finished one did; what it spent already is in `counted`
    likely = sum(max(0.0, mean - by_item.get(i, 0.0)) for i in running)
    if spend.counted + likely < ceiling:
        return None
    return (f"not started: --max-cost ${ceiling:g} reached (counted ${spend.counted:.4f} + ${likely:.4f} likely "
            f"from {len(running)} running); --resume with a higher --max-cost runs it")
