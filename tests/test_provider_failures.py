"""Issue 22: a paid run with a provider that fails, on real Docker with the real Claude Code harness; the only
stand-in is the provider (tests/provider_stub.py: the Anthropic Messages wire, OpenRouter's error bodies and
its usage.cost), reached through the run's gateway exactly as a paid provider would be (OPENROUTER_BASE_URL).

- 402 for every call: the instances end as pytest errors (never failures), with the provider's reason, and
  the breaker stops starting items after --provider-breaker of them; --resume with a working provider then
  resolves them all (model check included);
- 401: the model check stops the run before any item, in one sentence; with --no-model-check the instance is an
  error, not a verdict;
- --max-cost stops starting items once the counted cost reaches it (the figure: spend at stop vs ceiling);
- --max-instance-cost: the gateway refuses the instance's calls past it, its patch is graded (cost_limit);
- 429 three times then 200: a normal verdict, the failed calls counted apart.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from provider_stub import PROVIDER_COST, ProviderStub  # noqa: E402

pytestmark = [pytest.mark.docker, pytest.mark.harness]

IDS = ("clawswe__tinyjson-py-12", "clawswe__semver-go-41", "clawswe__pathnorm-c-15", "clawswe__cronspec-js-9")
MODEL = "openrouter/test/model"
KEY = "sk-or-TEST-KEY-MUST-NOT-LEAK"
CALL_USD = 0.01  # every successful call of the stub: 1000 input tokens at 10 USD per million


@pytest.fixture(scope="module")
def rows(demo_instances, docker_client):
    from pytest_clawswe.harness.bundles import build_bundle
    from pytest_clawswe.swe.dataset import load_row

    build_bundle("claude-code", client=docker_client, progress=lambda line: None)  # reused when built
    return {i.instance_id: load_row(i) for i in demo_instances if i.instance_id in IDS}


@pytest.fixture
def provider(rows, monkeypatch, tmp_path):
    with ProviderStub(list(rows.values())) as stub:
        monkeypatch.setenv("OPENROUTER_BASE_URL", stub.url + "/v1")
        monkeypatch.setenv("OPENROUTER_API_KEY", KEY)
        yield stub


@pytest.fixture
def prices(tmp_path) -> Path:
    path = tmp_path / "prices.yaml"
    path.write_text(f"{MODEL}: {{input: 10, output: 10, cache_read: 10, cache_write: 10}}\n")
    return path


def run(pytester, run_dir, ids, *args, workers=1):
    xdist = ("-n", str(workers) if workers > 1 else "0")  # the plugin defaults to -n 3
    return pytester.runpytest_subprocess("-p", "no:cacheprovider", "--run-dir", str(run_dir), "--harness",
                                         "claude-code", "--model", MODEL, "--dataset", "demo", "--instance-ids",
                                         ",".join(ids), *xdist, *args, timeout=1500)


def meta(run_dir: Path, iid: str) -> dict:
    return json.loads((run_dir / "instances" / iid / "metadata.json").read_text())


def records(run_dir: Path) -> list[dict]:
    out = []
    for path in (run_dir / "gateway" / "usage").glob("*.jsonl"):
        out += [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return sorted(out, key=lambda r: r["ts"])


def test_402_every_call_errors_and_breaks_then_resume_resolves(pytester, provider, prices, tmp_path):
    run_dir = tmp_path / "run"
    provider.mode = "402"
    first = run(pytester, run_dir, IDS, "--no-model-check", "--provider-breaker", "2", "--prices", str(prices),
                workers=2)
    out = first.stdout.str() + first.stderr.str()
    outcomes = first.parseoutcomes()
    # no verdict at all: errors, and items the breaker kept from starting
    assert outcomes.get("failed", 0) == 0 and outcomes.get("passed", 0) == 0, out
    assert outcomes.get("error", outcomes.get("errors", 0)) >= 2, out
    assert outcomes.get("skipped", 0) >= 1, out
    assert "the provider answered 402 Insufficient credits" in out and "for 2 instances in a row; top up and --resume" \
        in out, out
    errored = [i for i in IDS if (run_dir / "instances" / i / "metadata.json").is_file()]
    assert len(errored) >= 2
    for iid in errored:
        m = meta(run_dir, iid)
        assert (m["outcome"], m["finish_reason"]) == ("error", "provider_error"), m
        assert "402 Insufficient credits" in m["error"] and m["usage"]["requests"] == 0, m
        assert m["failed_requests"] == {"billing": m["failed_requests"]["billing"]} and m["failed_requests"]["billing"]
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["resolved"] == summary["unresolved"] == 0 and summary["errors"] == len(errored)

    provider.mode = "ok"  # credit topped up: the resume (its model check too) runs every instance
    again = run(pytester, run_dir, IDS, "--resume", str(run_dir), "--prices", str(prices), workers=2)
    out = again.stdout.str() + again.stderr.str()
    assert again.parseoutcomes().get("passed") == len(IDS), out
    for iid in IDS:
        m = meta(run_dir, iid)
        assert (m["outcome"], m["finish_reason"]) == ("resolved", "stop"), m
        assert m["provider_cost_usd"] == pytest.approx(PROVIDER_COST * m["usage"]["requests"]), m
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["resolved"] == len(IDS) and summary["errors"] == 0
    assert summary["provider_cost_usd"] == pytest.approx(PROVIDER_COST * summary["turns"])
    assert "provider billed" in out
    assert not [p for p in run_dir.rglob("*") if p.is_file() and KEY.encode() in p.read_bytes()]


def test_401_stops_at_the_model_check_and_is_an_error_without_it(pytester, provider, tmp_path):
    provider.mode = "401"
    checked = run(pytester, tmp_path / "checked", IDS[:1])
    err = checked.stderr.str()
    assert checked.ret == pytest.ExitCode.USAGE_ERROR, err
    assert f"the model check failed: {MODEL} at openrouter" in err and "answered 401 No auth credentials found" in err
    assert not (tmp_path / "checked" / "instances").exists()

    run_dir = tmp_path / "unchecked"
    # Claude Code itself retries a 401 ten times with back-off (0.5 s doubling to ~35 s between calls: ~2.5 min, as a
    # user with a wrong key and --no-model-check meets it); the budget cuts that short. The ledger's 401s make the
    # error whichever way the agent ended: one is enough (the first comes ~3 s into the agent phase here).
    result = run(pytester, run_dir, IDS[:1], "--no-model-check", "--budget", "15")
    outcomes = result.parseoutcomes()
    assert outcomes.get("failed", 0) == 0 and outcomes.get("error", outcomes.get("errors")) == 1, outcomes
    m = meta(run_dir, IDS[0])
    assert m["outcome"] == "error" and "401 No auth credentials found" in m["error"], m
    assert f"{IDS[0]}: the model never answered: the provider said 401 No auth credentials found" in \
        result.stdout.str()


def test_max_cost_stops_starting_items(pytester, provider, prices, tmp_path, record_property):
    provider.mode = "ok"
    ceiling = 0.03  # Claude Code's gold run here is 2 calls ($0.02): two items start, the third does not
    run_dir = tmp_path / "run"
    result = run(pytester, run_dir, IDS[:3], "--max-cost", str(ceiling), "--prices", str(prices), "--no-model-check")
    out = result.stdout.str() + result.stderr.str()
    started = [i for i in IDS[:3] if (run_dir / "instances" / i / "metadata.json").is_file()]
    outcomes = result.parseoutcomes()
    assert outcomes.get("skipped", 0) == 3 - len(started) >= 1, out
    assert outcomes.get("failed", 0) == 0 and not outcomes.get("error") and not outcomes.get("errors"), out
    assert f"not started: --max-cost ${ceiling:g} reached" in out
    recs = records(run_dir)
    spend = sum(CALL_USD for r in recs if r["status"] == 200)
    # every started item started under the ceiling; the run stopped starting at or past it
    last_start = min(r["ts"] for r in recs if r["instance_id"] == started[-1])
    before_last = sum(CALL_USD for r in recs if r["status"] == 200 and r["ts"] < last_start)
    assert before_last < ceiling <= spend + 1e-9, (before_last, spend)
    record_property("max_cost_figure", f"spend at stop ${spend:.2f} vs ceiling ${ceiling:.2f} "
                                       f"({len(started)} of 3 started)")
    print(f"FIGURE --max-cost: spend at stop ${spend:.2f} vs ceiling ${ceiling:.2f}; {len(started)} of 3 started")


def test_max_instance_cost_refuses_calls_and_grades_the_patch(pytester, provider, prices, tmp_path):
    provider.mode = "ok"
    run_dir = tmp_path / "run"
    result = run(pytester, run_dir, IDS[:1], "--max-instance-cost", "0.005", "--prices", str(prices),
                 "--no-model-check")
    out = result.stdout.str() + result.stderr.str()
    m = meta(run_dir, IDS[0])
    assert m["outcome"] in ("resolved", "unresolved") and m["finish_reason"] == "cost_limit", (m, out)
    assert m["failed_requests"].get("cost_limit", 0) >= 1 and "--max-instance-cost $0.005" in m["error"]
    recs = [r for r in records(run_dir) if r["instance_id"] == IDS[0]]
    answered = [r for r in recs if r["status"] == 200]
    assert len(answered) == 1, recs  # $0.00 counted before the first call; $0.01 >= $0.005 before the second
    assert recs[1:] and all(r["status"] == 400 and r["failure"] == "cost_limit" for r in recs[1:]), recs
    assert m["usage"]["requests"] == 1 and m["cost_usd"] == pytest.approx(CALL_USD)


def test_429_three_times_then_200_is_a_normal_verdict(pytester, provider, prices, tmp_path):
    provider.mode = "429x3"
    run_dir = tmp_path / "run"
    result = run(pytester, run_dir, IDS[:1], "--no-model-check", "--prices", str(prices))
    out = result.stdout.str() + result.stderr.str()
    assert result.parseoutcomes().get("passed") == 1, out
    m = meta(run_dir, IDS[0])
    assert (m["outcome"], m["finish_reason"]) == ("resolved", "stop"), m
    assert m["failed_requests"] == {"rate_limit": 3}, m
    recs = [r for r in records(run_dir) if r["instance_id"] == IDS[0]]
    assert m["usage"]["requests"] == sum(r["status"] == 200 for r in recs) == len(recs) - 3
    assert m["cost_usd"] == pytest.approx(CALL_USD * m["usage"]["requests"])


def test_wildclaw_402_is_an_error_not_a_score(pytester, provider, docker_client, tmp_path):
    """WildClawBench goes through the same rule (ItemRunner.provider_outcome): a task whose model never answered
    is an error with the provider's reason, not a failed score."""
    provider.mode = "402"
    run_dir = tmp_path / "wild"
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--benchmark", "wildclaw", "--dataset", "demo",
                                           "--harness", "claude-code", "--model", MODEL, "--judge-model", "scripted",
                                           "--run-dir", str(run_dir), "-k", "release_blockers", "--no-model-check",
                                           timeout=1500)
    out = result.stdout.str()
    outcomes = result.parseoutcomes()
    assert outcomes.get("failed", 0) == 0 and outcomes.get("error", outcomes.get("errors")) == 1, out[-3000:]
    task = json.loads(next(run_dir.glob("tasks/*/result.json")).read_text())
    assert task["outcome"] == "error" and "402 Insufficient credits" in task["error"], task
    assert task["failed_requests"].get("billing", 0) >= 1 and task["overall_score"] is None, task
