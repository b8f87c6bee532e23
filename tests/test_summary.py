import json

import pytest

from pytest_clawswe.files import write_atomic
from pytest_clawswe.swe.results.run_dir import InstanceResult
from pytest_clawswe.swe.results.summary import (
    instance_properties,
    junit_properties,
    progress_line,
    summarize,
    terminal_lines,
    write_summary,
)
from pytest_clawswe.usage import Usage


def result(iid, language, outcome, cost=0.5, requests=10, input_tokens=1000, cache_read=9000, total=100.0,
           **extra):
    return InstanceResult(
        instance_id=iid, harness="openclaw", model="m", language=language, outcome=outcome,
        resolved={"resolved": True, "error": None}.get(outcome, False), finish_reason="stop",
        timings={"agent": total - 10, "total": total}, cost_usd=cost,
        usage=Usage(requests=requests, input_tokens=input_tokens, output_tokens=200, cache_read_tokens=cache_read,
                    cache_write_tokens=50),
        **extra,
    )


@pytest.fixture
def results():
    return [
        result("a-1", "Go", "resolved", total=100),
        result("a-2", "Go", "unresolved", total=200, requests=20),
        result("b-1", "Rust", "resolved", total=300, cache_read=0),
        result("b-2", "Rust", "apply_failed", total=400),
        result("c-1", "Java", "error", cost=0.0, requests=0, input_tokens=0, cache_read=0, total=0.0,
               error="image missing"),
    ]


def test_pass_at_1_counts_every_instance_and_errors_apart(results):
    s = summarize(results)
    assert (s["instances"], s["resolved"], s["unresolved"], s["apply_failed"], s["errors"]) == (5, 2, 1, 1, 1)
    assert s["pass_at_1"] == pytest.approx(2 / 5)
    assert s["per_language"] == {
        "Go": {"instances": 2, "resolved": 1, "pass_at_1": 0.5},
        "Java": {"instances": 1, "resolved": 0, "pass_at_1": 0.0},
        "Rust": {"instances": 2, "resolved": 1, "pass_at_1": 0.5},
    }


def test_totals_are_sums_of_instances(results):
    s = summarize(results)
    for name in ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens"):
        assert s[name] == sum(getattr(r.usage, name) for r in results)
    assert s["turns"] == sum(r.usage.requests for r in results)
    assert s["mean_turns"] == pytest.approx(s["turns"] / 5)
    assert s["cost_usd"] == pytest.approx(sum(r.cost_usd for r in results))
    assert s["mean_duration_s"] == pytest.approx(sum(r.duration_s for r in results) / 5)
    assert s["mean_agent_s"] == pytest.approx(sum(r.timings["agent"] for r in results) / 5)
    # the paper's cache hit rate over the run: token-weighted, not a mean of per-instance rates
    assert s["cache_hit_rate"] == pytest.approx(s["cache_read_tokens"] / (s["input_tokens"] + s["cache_read_tokens"]))


def test_one_unknown_price_makes_the_total_unknown(results):
    results[0].cost_usd = None
    s = summarize(results)
    assert s["cost_usd"] is None
    assert s["cost_unknown_instances"] == 1
    assert s["cost_usd_known"] == pytest.approx(sum(r.cost_usd for r in results[1:]))
    assert "unknown" in terminal_lines(s)[2]


def test_harness_usage_is_totalled_beside_the_gateway(results):
    results[0].harness_usage = {"input_tokens": 900, "cost_usd": 0.4, "model": "x"}
    results[1].harness_usage = {"input_tokens": 100, "streamed": True}
    hu = summarize(results)["harness_usage"]
    assert hu == {"instances_reporting": 2, "input_tokens": 1000, "cost_usd": 0.4}


def test_write_summary_reads_run_info(tmp_path, results):
    write_atomic(tmp_path / "run.json", json.dumps({"run_id": "r1", "harness": "hermes", "model": "glm",
                                                    "dataset": "lite"}))
    returned = write_summary(tmp_path, results)
    on_disk = json.loads((tmp_path / "summary.json").read_text())
    assert on_disk == json.loads(json.dumps(returned))
    assert (on_disk["run_id"], on_disk["harness"], on_disk["dataset"]) == ("r1", "hermes", "lite")


def test_empty_run_summarizes_without_dividing_by_zero():
    s = summarize([])
    assert s["instances"] == 0 and s["pass_at_1"] is None and s["mean_duration_s"] is None
    assert terminal_lines(s)


def test_terminal_lines_show_the_headline_numbers(results):
    text = "\n".join(terminal_lines(summarize(results)))
    for part in ("Pass@1 40.0%", "(2/5 resolved)", "apply failed 1", "errors 1", "Go 50.0% (1/2)", "$2.00",
                 "mean turns"):
        assert part in text


def test_junit_properties(results):
    props = dict(junit_properties(summarize(results)))
    assert props["clawswe.resolved"] == "2"
    assert float(props["clawswe.pass_at_1"]) == pytest.approx(0.4)
    assert props["clawswe.pass_at_1.Rust"] == "0.5"
    results[0].cost_usd = None
    assert dict(junit_properties(summarize(results)))["clawswe.cost_usd"] == "unknown"


def test_instance_properties(results):
    props = dict(instance_properties(results[0]))
    assert props["clawswe.outcome"] == "resolved"
    assert props["clawswe.turns"] == "10"
    assert float(props["clawswe.cache_hit_rate"]) == pytest.approx(0.9)


def test_progress_line(results):
    results[1].cost_usd = None
    line = progress_line(results[:3], total=80)
    assert line.startswith("3/80 done · resolved 2 (66.7%)")
    assert "cost so far $1.00 (+1 unpriced)" in line
