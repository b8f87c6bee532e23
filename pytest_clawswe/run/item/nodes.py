"""A benchmark's collector and item: the item runs in setup (what stops it is a pytest error) and asserts its verdict in runtest (a wrong answer is a failure)."""
from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

import pytest

from pytest_clawswe.errors import ClawsweError, ItemError
from pytest_clawswe.run.item.result import ERROR

if TYPE_CHECKING:
    from pytest_clawswe.harness.deadline import Deadline


class BenchmarkCollector(pytest.Collector):
    """A benchmark's root collector: a CollectError (bad task file, refused selection) is its one sentence."""

    def repr_failure(self, excinfo):
        if excinfo.errisinstance(self.CollectError):
            return str(excinfo.value.args[0])
        return super().repr_failure(excinfo)


class BenchmarkItem(pytest.Item):
    """One item of a benchmark. The run happens in setup, so what stops it (the machinery, a grader, a judge)
    is a pytest error; runtest only asserts the verdict, so a wrong answer is a failure."""

    # exceptions shown as one line, "<item id>: <message>" (no traceback); subclasses add their own
    ONE_LINE: tuple[type[BaseException], ...] = (ClawsweError,)
    # set by a subclass: its id, and what the runner's run() takes (an Instance, a Task)
    item_id: str = ""
    target: object = None
    result = None  # the item's result once setup ran
    reused = False  # True: a final result of an earlier attempt of the run, kept by --resume

    def __init__(self, *, target: object = None, item_id: str = "", markers: Iterable[str] = (),
                 keywords: Iterable[str] = (), **kwargs):
        """What every benchmark's item sets up: what its runner runs (`target`) and its id, its markers (-m), the
        words -k matches beside its name, and its hard stop (the deadline's, when deadline() gives one)."""
        super().__init__(**kwargs)
        self.target, self.item_id = target, item_id
        for marker in markers:
            self.add_marker(marker)
        self.extra_keyword_matches.update(keywords)
        deadline = self.deadline()
        if deadline is not None:
            self.hard_timeout(deadline.hard_s(self._harness_grace()))

    def deadline(self) -> Deadline | None:
        """The item's deadline (harness/deadline.py) when its time limits are known at collection (a benchmark's
        item says how; the base has none): its hard stop is the item's."""
        return None

    def _harness_grace(self) -> float:
        """The run's harness wrapper's grace past the budget (RunConfig.harness_grace_s): in the hard stop."""
        cfg = getattr(self.config.pluginmanager.get_plugin("clawswe-session"), "cfg", None)
        return 0.0 if cfg is None else cfg.harness_grace_s()

    def hard_timeout(self, seconds: float) -> None:
        """pytest-timeout as the hard stop of the whole item, unless --timeout was given."""
        if self.config.getoption("timeout", None) is None:
            self.add_marker(pytest.mark.timeout(seconds, method="signal"))

    def setup(self) -> None:
        run_session = self.config.pluginmanager.get_plugin("clawswe-session")
        if run_session.stopping:  # after the first Ctrl-C no item starts
            pytest.skip("not started: the run was interrupted")
        runner = run_session.runner
        previous = runner.finished(self.item_id)
        if previous is not None:  # --resume: a final result is kept, never run twice
            self.result, self.reused = previous, True
            run_session.report_result(self, previous)
            return
        why_not = run_session.why_not_start(runner)  # the provider breaker, --max-cost
        if why_not:
            pytest.skip(why_not)
        from pytest_clawswe.run import provider

        try:
            self.result = runner.run(self.target)  # retries: the runner's policy (item_runner.py)
        except Exception as exc:
            provider.note(run_session.cfg.run_dir, self.item_id, exc)
            errored = runner.error_result(self.item_id)  # what the failed attempt left on disk
            if errored is not None:
                run_session.report_result(self, errored)
            raise
        provider.note(run_session.cfg.run_dir, self.item_id, None)
        run_session.report_result(self, self.result)
        if self.result.outcome == ERROR:
            raise ItemError(self.result.error or "error")

    def repr_failure(self, excinfo, style=None):
        if excinfo.errisinstance(self.ONE_LINE):
            return f"{self.item_id}: {self._without_id(str(excinfo.value))}"
        return super().repr_failure(excinfo, style)

    def _without_id(self, sentence: str) -> str:
        """`sentence` without a leading "<item id>: " (a benchmark's errors may name their item first, as
        WildClawBench's do): the line names the id once."""
        return sentence.removeprefix(f"{self.item_id}: ") if self.item_id else sentence

    def _repr_failure_py(self, excinfo, style=None):
        """An item's error (its setup runs the item) is one sentence and where its record is; the whole traceback
        with --tb=long, and in the item's log."""
        if style == "long" or excinfo.errisinstance((pytest.skip.Exception, KeyboardInterrupt)):
            return super()._repr_failure_py(excinfo, style)
        first = self._without_id((str(excinfo.value).strip().splitlines() or [""])[0])[:500]
        sentence = first if excinfo.errisinstance(self.ONE_LINE) else f"{excinfo.typename}: {first}"
        return f"{self.item_id}: {sentence}{self._phase(excinfo.value)}{self._record_hint()}"

    def _phase(self, exc: BaseException) -> str:
        """Where the item ended (run/item/phases.py): the exception's phase, or its result's (an item error)."""
        from pytest_clawswe.run.item.phases import phase_of

        phase = phase_of(exc) or getattr(self.result, "error_phase", "")
        return f" [phase {phase}]" if phase else ""

    def _record_hint(self) -> str:
        session = self.config.pluginmanager.get_plugin("clawswe-session")
        runner = getattr(session, "_runner", None)
        if runner is None or not hasattr(runner, "item_dir"):
            return ""
        return f" (details: {runner.item_dir(self.item_id) / runner.RESULT_FILE}; the traceback: --tb=long)"
