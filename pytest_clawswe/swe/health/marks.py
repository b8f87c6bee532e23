"""A run with `--health FILE`: each instance's verdict from the file, and the tests-flip check at scoring time.

The check costs nothing: swebench's report already says which PASS_TO_PASS tests failed; the health file says
how each test did at the base commit (the nop's runs) and under the gold patch. A failing PASS_TO_PASS test
that passed at the base commit in every run of the check was broken by this patch (or flips more rarely than
the check saw); one that changed between the check's runs is known to be flaky; one that failed there every
time fails without any patch (the instance's fault).
"""
from __future__ import annotations

from pathlib import Path

import pytest

from pytest_clawswe.report.health import UNHEALTHY, Health, HealthFileError, load_health
from pytest_clawswe.swe.health.runs import GOLD, NOP, TEST_KINDS, graded_tests_digest, statuses_of_tests
from pytest_clawswe.swe.paths import DEMO_TASK_REPO
from pytest_clawswe.swe.results.run_dir import InstanceResult

SHIPPED = {"demo": DEMO_TASK_REPO / "health.json"}  # `--health demo`: the demo set's file, shipped


def health_option(config: pytest.Config) -> Health | None:
    """The run's --health file, read and checked (pytest.UsageError, one sentence); None without the option."""
    value = config.getoption("health", None)
    if not value:
        return None
    path = Path(config.invocation_params.dir, value)
    if value in SHIPPED and not path.exists():
        path = SHIPPED[value]
    try:
        return load_health(path)
    except HealthFileError as exc:
        raise pytest.UsageError(str(exc)) from None


def p2p_vs_base(row: dict, report: dict | None, entry: dict) -> dict:
    """The PASS_TO_PASS tests failing in this evaluation, sorted by what the health entry says of them."""
    statuses = statuses_of_tests(report, row["instance_id"])
    if not statuses:
        return {}
    failing = sorted(n for n in row.get("PASS_TO_PASS") or [] if statuses.get(n) == "failed")
    if not failing:
        return {}
    names = [n for kind in TEST_KINDS for n in row.get(kind) or []]
    if entry.get("tests_digest") != graded_tests_digest(names):
        return {"not_checked": failing, "why": "the health file checked other tests (another dataset revision?)"}
    gold, nop = entry.get(GOLD) or {}, entry.get(NOP) or {}
    changed = set(gold.get("changed") or []) | set(nop.get("changed") or [])
    at_base_failed = set(nop.get("failed") or [])
    if not nop.get("runs"):
        return {"not_checked": failing, "why": "no run of the health check ran the tests at the base commit"}
    found: dict = {"passed_at_base": [], "flaky": [], "failing_at_base": []}
    for name in failing:
        key = "flaky" if name in changed else "failing_at_base" if name in at_base_failed else "passed_at_base"
        found[key].append(name)
    found["base_runs"] = nop["runs"]
    return {k: v for k, v in found.items() if v}


def mark(result: InstanceResult, health: Health) -> None:
    """Put the file's verdict on the result (from the item's start: one that ends in an error is marked too)."""
    if result.instance_id in health.items:
        result.health, result.health_reason = health.verdict(result.instance_id), health.reason(result.instance_id)


def check_tests(result: InstanceResult, row: dict, report: dict | None, health: Health) -> None:
    """After grading: what the failing PASS_TO_PASS tests did at the base commit in the health check."""
    entry = health.items.get(result.instance_id)
    if entry is not None:
        result.p2p_vs_base = p2p_vs_base(row, report, entry)


def check_selection(health: Health, selected: list[str]) -> None:
    """A file that names none of the selected instances is another dataset's: one sentence."""
    if selected and not set(selected) & set(health.items):
        raise pytest.UsageError(f"--health {health.path} names none of the {len(selected)} selected instances (it "
                                f"checked dataset {health.dataset or '?'}); give this dataset's health file")


def note(result: InstanceResult) -> str:
    """What an item's report says of its health, in one phrase ("" when there is nothing to say)."""
    parts = []
    if result.health in UNHEALTHY:
        parts.append(f"instance {result.health.replace('_', ' ')} in the health check ({result.health_reason})")
    found = result.p2p_vs_base
    if found.get("passed_at_base"):
        tests = found["passed_at_base"]
        parts.append(f"{len(tests)} PASS_TO_PASS test(s) failing here passed at the base commit in all "
                     f"{found['base_runs']} health runs (e.g. {tests[0]})")
    if found.get("flaky"):
        parts.append(f"{len(found['flaky'])} failing PASS_TO_PASS test(s) are flaky in the health check "
                     f"(e.g. {found['flaky'][0]})")
    if found.get("failing_at_base"):
        parts.append(f"{len(found['failing_at_base'])} failing PASS_TO_PASS test(s) fail at the base commit too "
                     f"(e.g. {found['failing_at_base'][0]})")
    return "; ".join(parts)
