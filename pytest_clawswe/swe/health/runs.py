"""What the health check's runs say of each instance: gold and nop outcomes, tests that changed, the verdict.

`clawswe health` (swe/health/cli.py) runs the oracle (the gold patch) and the nop (the base commit, its tests run)
N times per instance; this module reads those run folders back and writes one health-file entry per instance
(the format: report/health.py):

    {"verdict": "flaky", "reasons": ["gold resolved 1/3", "2 tests changed between repeats: ..."],
     "gold": {"runs": 3, "resolved": 1, "errors": 0, "timed_out": 0, "eval_s_max": 5.1, "eval_s_mean": 4.8,
              "failed": [tests failing in every run], "changed": [tests whose status changed between runs]},
     "nop":  {"runs": 3, "unresolved": 3, ... the same for the base commit},
     "tests_digest": "<sha256 of the FAIL_TO_PASS and PASS_TO_PASS names>", "eval_limit_s": 1800}

A test in neither list passed in every run. The verdict, first that applies: too_slow (an evaluation timed out,
or took more than SLOW_SHARE of its limit), flaky (a test changed between repeats, or the gold or the nop
resolved in some runs only), broken (the gold never resolved, or the nop always did), healthy; unknown when no
gold run or no nop run ended (an infrastructure error every time: run the check again, it resumes).
"""
from __future__ import annotations

import hashlib
import json
import statistics
from pathlib import Path

from pytest_clawswe.report.health import BROKEN, FLAKY, HEALTHY, TOO_SLOW, UNKNOWN
from pytest_clawswe.run.item.result import ERROR
from pytest_clawswe.swe.results.run_dir import RESOLVED, InstanceResult, instance_dir

GOLD, NOP = "gold", "nop"  # the oracle's runs, and the nop's (the base commit)
SLOW_SHARE = 0.5  # an evaluation that takes more than this share of --eval-timeout is too slow for its limit
TIMED_OUT = "Test timed out"  # swebench's words in run_instance.log when the eval's limit stopped it (as scoring.py reads)
TEST_KINDS = ("FAIL_TO_PASS", "PASS_TO_PASS")


def graded_tests_digest(names) -> str:
    """One digest of an instance's graded tests: a health entry applies to a row whose tests are these."""
    return hashlib.sha256("\n".join(sorted(set(names))).encode()).hexdigest()


def statuses_of_tests(report: dict | None, instance_id: str) -> dict[str, str] | None:
    """test -> "passed" / "failed" from swebench's report.json of one evaluation; None when its tests never ran."""
    entry = (report or {}).get(instance_id) or {}
    status = entry.get("tests_status")
    if not status:
        return None
    found = {}
    for kind in TEST_KINDS:
        for name in (status.get(kind) or {}).get("success") or []:
            found[name] = "passed"
        for name in (status.get(kind) or {}).get("failure") or []:
            found[name] = "failed"
    return found


def read_run(run_dir: Path, instance_id: str) -> dict | None:
    """One instance's end in one run of the check; None when it has not ended there."""
    folder = instance_dir(run_dir, instance_id)
    try:
        result = InstanceResult.from_json(json.loads((folder / "metadata.json").read_text()))
    except (OSError, ValueError):
        return None
    try:
        report = json.loads((folder / "eval" / "report.json").read_text())
    except (OSError, ValueError):
        report = None
    from swebench.harness.constants import LOG_INSTANCE  # swebench takes seconds to import: only when read

    log = folder / "eval" / LOG_INSTANCE
    return {"error": result.outcome == ERROR, "resolved": result.outcome == RESOLVED,
            "timed_out": log.is_file() and TIMED_OUT in log.read_text(errors="replace"),
            "eval_s": result.timings.get("score"),
            "tests": statuses_of_tests(report, instance_id)}


def role_figures(runs: list[dict]) -> dict:
    """The runs of one harness (gold or nop) on one instance, summed up."""
    ended = [r for r in runs if not r["error"]]
    seconds = [float(r["eval_s"]) for r in ended if r["eval_s"] is not None]
    statuses: dict[str, set[str]] = {}
    for r in ended:
        for name, status in (r["tests"] or {}).items():
            statuses.setdefault(name, set()).add(status)
    return {"runs": len(ended), "resolved": sum(r["resolved"] for r in ended), "errors": len(runs) - len(ended),
            "timed_out": sum(r["timed_out"] for r in ended),
            "eval_s_max": round(max(seconds), 3) if seconds else None,
            "eval_s_mean": round(statistics.fmean(seconds), 3) if seconds else None,
            "failed": sorted(n for n, s in statuses.items() if s == {"failed"}),
            "changed": sorted(n for n, s in statuses.items() if len(s) > 1),
            "_tests": sorted(statuses)}


def _names(tests: list[str], limit: int = 3) -> str:
    more = f", ... (+{len(tests) - limit})" if len(tests) > limit else ""
    return ", ".join(tests[:limit]) + more


def verdict(gold: dict, nop: dict, limit_s: float | None) -> tuple[str, list[str]]:
    """(verdict, reasons) of an instance from its gold and nop figures (role_figures) under `limit_s`."""
    reasons = []
    for role, figures in ((GOLD, gold), (NOP, nop)):
        if figures["errors"]:
            reasons.append(f"{figures['errors']} {role} run(s) ended in an infrastructure error (not counted)")
    if not gold["runs"] or not nop["runs"]:
        missing = " and ".join(role for role, f in ((GOLD, gold), (NOP, nop)) if not f["runs"])
        return UNKNOWN, [f"no {missing} run ended; run the check again (it resumes)", *reasons]
    slow = []
    for role, figures in ((GOLD, gold), (NOP, nop)):
        if figures["timed_out"]:
            slow.append(f"the {role} evaluation timed out in {figures['timed_out']}/{figures['runs']} runs "
                        f"(limit {limit_s:g} s)" if limit_s else f"the {role} evaluation timed out")
        elif limit_s and figures["eval_s_max"] is not None and figures["eval_s_max"] > SLOW_SHARE * limit_s:
            slow.append(f"the {role} evaluation took up to {figures['eval_s_max']:.0f} s of its {limit_s:g} s limit")
    flaky = []
    changed = sorted(set(gold["changed"]) | set(nop["changed"]))
    if changed:
        flaky.append(f"{len(changed)} test(s) changed between repeats ({len(gold['changed'])} in the gold runs, "
                     f"{len(nop['changed'])} in the nop runs): {_names(changed, 2)}")
    if 0 < gold["resolved"] < gold["runs"]:
        flaky.append(f"gold resolved {gold['resolved']}/{gold['runs']}")
    if 0 < nop["resolved"] < nop["runs"]:
        flaky.append(f"nop resolved {nop['resolved']}/{nop['runs']} (the base commit passed the tests sometimes)")
    broken = []
    if gold["resolved"] == 0:
        failing = f", {_names(gold['failed'])} failing in every run" if gold["failed"] else ""
        broken.append(f"gold resolved 0/{gold['runs']}{failing}")
    if nop["resolved"] == nop["runs"]:
        broken.append(f"nop resolved {nop['runs']}/{nop['runs']} (the tests pass without a fix)")
    for name, found in ((TOO_SLOW, slow), (FLAKY, flaky), (BROKEN, broken)):
        if found:
            return name, [*slow, *flaky, *broken, *reasons]
    return HEALTHY, reasons


def instance_entry(runs: dict[str, list[dict]], limit_s: float | None) -> dict:
    """The health-file entry of one instance from its runs ({"gold": [...], "nop": [...]}, read_run's)."""
    gold, nop = role_figures(runs[GOLD]), role_figures(runs[NOP])
    name, reasons = verdict(gold, nop, limit_s)
    tests = sorted(set(gold.pop("_tests")) | set(nop.pop("_tests")))
    nop = {"runs": nop["runs"], "unresolved": nop["runs"] - nop.pop("resolved"), **nop}
    return {"verdict": name, "reasons": reasons, GOLD: gold, NOP: nop,
            "tests_digest": graded_tests_digest(tests) if tests else None, "eval_limit_s": limit_s}
