"""pytest hooks of the WildClawBench mode: `pytest --benchmark wildclaw --dataset PATH|demo --harness H`.

Registered from pytest_clawswe.plugin (its `pytest_plugins`); the run machinery (run id, run dir, gateway,
locked network, leftovers sweep, xdist hand-over, resume) is the Claw-SWE-Bench session's, reused by
subclassing it; only collection, the runner and the run-level files differ.
"""
from __future__ import annotations

import pytest

from pytest_clawswe.run.options import add_options
from pytest_clawswe.wildclaw.benchmark import WildClawBench
from pytest_clawswe.wildclaw.items import register_markers
from pytest_clawswe.wildclaw.options import GROUP, OPTIONS


def pytest_addoption(parser: pytest.Parser) -> None:
    add_options(parser, GROUP, "WildClawBench: long-horizon agent tasks graded outside the agent", OPTIONS)


def is_wildclaw(config: pytest.Config) -> bool:
    return config.getoption("benchmark", None) == "wildclaw"


def pytest_configure(config: pytest.Config) -> None:
    register_markers(config)


@pytest.hookimpl
def pytest_clawswe_benchmark(config: pytest.Config):
    """WildClawBench when --benchmark wildclaw (the session asks; Claw-SWE-Bench answers otherwise)."""
    if is_wildclaw(config):
        return WildClawBench(config)
    return None


