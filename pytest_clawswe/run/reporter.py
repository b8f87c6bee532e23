"""What the run shows on the terminal: the progress line as items end, and the run's totals at the end.

A plugin object of its own (registered beside the RunSession as "clawswe-reporter"), as pytest-xdist keeps its
terminal reporting (TerminalDistReporter) apart from its DSession: the session runs the run and keeps its files,
this reads them and writes to pytest's terminal reporter.
"""
from __future__ import annotations

import json

import pytest

from pytest_clawswe.run import regrade

ITEMS_KEY = pytest.StashKey["list"]()  # the run's items as collected (the xdist controller: as a worker reported)


class RunReporter:
    """The terminal side of a run (run/session.py's RunSession is the rest)."""

    def __init__(self, run):
        self.run = run  # the RunSession: its config, cfg, benchmark, and the results of its last rebuild
        self.config = run.config
        self._done = 0
        self._not_started: dict[str, int] = {}  # why items were not started -> how many
        self._last_not_started = ""

    @pytest.hookimpl(trylast=True)  # after the session rebuilt the run files (RunSession.pytest_runtest_logreport)
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        """Count the items not started (and why); after an item ended, one progress line now and then."""
        if report.when == "setup" and report.skipped and isinstance(report.longrepr, tuple):
            why = str(report.longrepr[2]).removeprefix("Skipped: ")
            if why.startswith("not started:"):  # the breaker or --max-cost (RunSession.why_not_start)
                self._not_started.setdefault(why.split(" (counted")[0], 0)
                self._not_started[why.split(" (counted")[0]] += 1
                self._last_not_started = why
        if report.when != "teardown" or not self.run.writes:
            return
        results = self.run.results
        if results is None:
            return
        self._done += 1
        total = len(self.config.stash.get(ITEMS_KEY, [])) or None
        every = max(1, (total or 10) // 10)
        if self.config.option.verbose > 0 or self._done % every == 0 or self._done == total:
            line = self.run.benchmark.progress_line(results, total)
            reporter = self.config.pluginmanager.get_plugin("terminalreporter")
            if reporter is not None and line:
                if not self.config.option.verbose > 0:
                    reporter.write("\n")  # the line of dots is still open
                reporter.write_line(f"[clawswe] {line}")

    def pytest_terminal_summary(self, terminalreporter) -> None:
        """Print the run's totals."""
        run = self.run
        summary_file = run.cfg.run_dir / "summary.json"
        if not run.writes or not summary_file.is_file():
            return
        tr = terminalreporter
        tr.write_sep("=", "clawswe summary")
        tr.write_line(f"run dir: {run.cfg.run_dir}")
        if run.regrade is not None:
            tr.write_line(regrade.terminal_line(run.regrade, run.benchmark), bold=True)
        for line in run.benchmark.warning_lines(run.cfg.run_dir):
            tr.write_line(line, red=True, bold=True)
        summary = json.loads(summary_file.read_text())
        for line in run.benchmark.terminal_lines(run.cfg.run_dir):
            tr.write_line(line)
        if summary.get("disk"):
            from pytest_clawswe.engine.images.cache_level import disk_line

            tr.write_line(disk_line(summary["disk"]))
        if self._not_started:  # one sentence: why the run stopped starting items
            count = sum(self._not_started.values())
            tr.write_line(f"{count} item(s) {self._last_not_started}", red=True, bold=True)
