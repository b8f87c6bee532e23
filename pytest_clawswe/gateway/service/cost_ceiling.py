"""--max-instance-cost inside the gateway: an instance registered with a ceiling ({"usd", "prices"}) has its
calls refused once its own records (every worker's, this attempt's) priced per token reach it."""
from __future__ import annotations

from pytest_clawswe.gateway.record.ledger import USAGE_FIELDS


def refusal(ceiling: dict) -> str:
    return (f"clawswe: this instance reached its cost ceiling of ${float(ceiling['usd']):g} "
            "(--max-instance-cost); no more model calls are allowed.")


def reached(records: list[dict], ceiling: dict) -> bool:
    prices = ceiling.get("prices") or [0, 0, 0, 0]
    spent = sum(int(r.get(f) or 0) * float(p) for r in records for f, p in zip(USAGE_FIELDS, prices))
    return spent >= float(ceiling["usd"])
