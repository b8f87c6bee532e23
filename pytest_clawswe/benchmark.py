"""What the run session asks of a benchmark: its selection, its collector, and a runner for its items.

The session (session.py) owns the run: folder, run.json, gateway, Docker sweep, interrupts. A benchmark
owns what is collected and how one item runs. A second benchmark plugs in without editing the session:

    class WildClawBench(Benchmark):
        name = "wildclaw"
        def select(self): ...            # its tasks, checked; raise pytest.UsageError for bad input
        def collector(self, session): ...  # a pytest.Collector whose children are its items
        def runner(self, session): ...   # what its items call to run one task

    # in its plugin (e.g. pytest_clawswe/wildclaw/plugin.py, registered through pytest11):
    def pytest_clawswe_benchmark(config):
        if config.getoption("dataset").startswith("wildclaw"):
            return WildClawBench(config)

Its items call `session.report_result(item, result)` once per finished task, so the
pytest_clawswe_instance_result hook and the run's files see every benchmark alike.
"""
from __future__ import annotations

import pytest


class Benchmark:
    """One benchmark as the session sees it; subclasses fill in the three methods."""

    name = "benchmark"

    def __init__(self, config: pytest.Config):
        self.config = config

    def select(self) -> list:
        """The selected instances, every one checked; pytest.UsageError (one sentence) for bad input.

        Called in the controller before the run writes anything, and again (cached) when collecting."""
        raise NotImplementedError

    def collector(self, session: pytest.Session) -> pytest.Collector:
        """The root collector: its children are the items."""
        raise NotImplementedError

    def runner(self, run_session):
        """What the items of this process use to run one instance (closed at the end if it has close())."""
        raise NotImplementedError
