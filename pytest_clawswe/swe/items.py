"""Claw-SWE-Bench as pytest sees it: the benchmark the session asks, the dataset collector and the item.

Node ids are "<dataset>::<instance id>". The run of an item happens in its setup, so an infrastructure
failure is a pytest error; the call phase only asserts the evaluator's verdict, so "not resolved" is a failure.
"""
from __future__ import annotations

import pytest

from pytest_clawswe.errors import Verdict
from pytest_clawswe.harness.deadline import Deadline
from pytest_clawswe.run.benchmark import Benchmark
from pytest_clawswe.run.item.nodes import BenchmarkCollector, BenchmarkItem
from pytest_clawswe.swe.dataset import Instance, language_marker
from pytest_clawswe.swe.options import DEFAULT_EVAL_TIMEOUT_S
from pytest_clawswe.swe.results.run_dir import RESOLVED, InstanceResult

# The setup stage's limit (image pulls and builds, the first preparation, the container) unless --setup-timeout
# gives one; in the item's hard stop on top of the agent budget and the evaluation timeout.
SETUP_ALLOWANCE_S = 1200
MIN_RETRY_BUDGET_S = 1.0  # a retry with less budget left than this is not started (instance_runner's retry policy)


def new_deadline(cfg, eval_timeout_s: float) -> Deadline:
    """An instance's deadline (harness/deadline.py), the one place its time limits are computed: made once per
    item by InstanceRunner, read by the agent phase and its retries and the harness's wrapper; the item's hard
    stop below is the same function's."""
    return Deadline(cfg.budget_s, setup_s=cfg.setup_timeout_s or SETUP_ALLOWANCE_S, grade_s=eval_timeout_s,
                    retry_min_s=MIN_RETRY_BUDGET_S, agent_allowance_s=cfg.agent_allowance_s)


class DatasetCollector(BenchmarkCollector):
    """The dataset as a pytest collector: its children are the instance items."""

    def __init__(self, *, benchmark: Benchmark, eval_timeout_s: float = DEFAULT_EVAL_TIMEOUT_S, **kwargs):
        super().__init__(**kwargs)
        self.benchmark = benchmark
        self.eval_timeout_s = eval_timeout_s  # SweOptions.eval_timeout_s: in each item's hard timeout

    def collect(self):
        try:
            instances = self.benchmark.select()
        except pytest.UsageError as exc:  # a worker meets what the controller already refused
            raise self.CollectError(str(exc)) from None
        for inst in instances:
            yield InstanceItem.from_parent(self, name=inst.instance_id, instance=inst,
                                           eval_timeout_s=self.eval_timeout_s)

    def reportinfo(self):
        return self.path, None, f"dataset {self.name}"


class NotResolved(Verdict):
    """The evaluator says the instance is not resolved: a test failure with the reason."""


class InstanceItem(BenchmarkItem):
    """One benchmark instance. The run happens in setup (BenchmarkItem's), so an infrastructure failure is a
    pytest error; the call phase only asserts the evaluator's verdict, so 'not resolved' is a failure."""

    result: InstanceResult | None = None

    def __init__(self, *, instance: Instance, eval_timeout_s: float = DEFAULT_EVAL_TIMEOUT_S, **kwargs):
        self.instance, self.eval_timeout_s = instance, eval_timeout_s  # first: the base's set-up asks deadline()
        # -k matches the language, the repository and its short name
        super().__init__(target=instance, item_id=instance.instance_id,
                         markers=("clawswe", language_marker(instance.language)),
                         keywords=(instance.language, instance.repo, instance.repo_name), **kwargs)

    def deadline(self) -> Deadline | None:
        """The hard stop of the whole item, once the run's config is known; the agent's own budget ends earlier."""
        from pytest_clawswe.run.session import RUN_KEY

        cfg = self.config.stash.get(RUN_KEY, None)
        return None if cfg is None else new_deadline(cfg, self.eval_timeout_s)

    def runtest(self) -> None:
        from pytest_clawswe.swe.results.summary import instance_properties

        r = self.result
        for key, value in _properties(r).items():
            self.user_properties.append((key, value))
        self.user_properties.extend(instance_properties(r))
        if r.outcome != RESOLVED:
            from pytest_clawswe.swe.health.marks import note

            health = note(r)  # --health: the instance's verdict, and failing tests that passed at the base commit
            raise NotResolved(f"{r.outcome}: {r.error or 'not resolved'}" + (f" [{health}]" if health else ""))

    def reportinfo(self):
        return self.path, None, f"{self.instance.instance_id} [{self.instance.language}, {self.instance.repo}]"


def _properties(r: InstanceResult) -> dict:
    # the accounting (clawswe.* properties) comes from summary.instance_properties
    return {"resolved": bool(r.resolved), "language": r.language, "repo": r.repo}
