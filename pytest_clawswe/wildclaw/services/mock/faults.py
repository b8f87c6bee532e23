"""Seeded fault injection with the released semantics (Claw-Eval's): with probability `error_rate` a POST
answers 429 (Retry-After: 2) or 500, or is delayed 2-4 s, at weights 0.35 / 0.35 / 0.30.

Each service draws from its own generator seeded by (seed, service), three numbers per POST whatever the
outcome, so the faults depend only on the seed and the order of calls to that service."""
from __future__ import annotations

import random
from dataclasses import dataclass


@dataclass(frozen=True)
class Fault:
    kind: str  # "429" | "500" | "delay"
    delay: float = 0.0


class FaultPlan:
    def __init__(self, error_rate: float, seed: int | str, service: str):
        if not 0.0 <= float(error_rate) <= 1.0:
            raise ValueError(f"error_rate must be between 0 and 1, not {error_rate}")
        self.error_rate = float(error_rate)
        self._rng = random.Random(f"{seed}/{service}")

    def next(self) -> Fault | None:
        hit, kind, spread = self._rng.random(), self._rng.random(), self._rng.random()
        if hit >= self.error_rate:
            return None
        if kind < 0.35:
            return Fault("429")
        if kind < 0.70:
            return Fault("500")
        return Fault("delay", round(2.0 + 2.0 * spread, 3))
