"""Issue 22: the rules that turn ledger lines into an instance's end (provider.py), the breaker, the spending
ceiling's arithmetic (spending.py) and the options' one-sentence refusals. Fast: no Docker."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_clawswe.gateway.upstream import failures
from pytest_clawswe.run import provider
from pytest_clawswe.run.spending import counted_spend, item_of, ledger_name, over_max_cost, unit_prices


def rec(status=200, failure=None, reason=None, **tokens):
    r = {"status": status, "input_tokens": 0, "output_tokens": 0, "cache_read_tokens": 0, "cache_write_tokens": 0,
         **tokens}
    if failure:
        r.update(failure=failure, reason=reason or f"{status} x")
    return r


def test_never_answered_is_an_error_with_the_reason():
    outcome = provider.judge([rec(402, "billing", "402 Insufficient credits")] * 2)
    assert outcome.failure is not None and outcome.failure.kind == "billing"
    assert str(outcome.failure) == ("the model never answered: the provider said 402 Insufficient credits (2 of 2 "
                                    "calls failed); --resume runs it again")
    assert outcome.failed_requests == {"billing": 2}


def test_stopped_right_after_a_failure_is_an_error_mid_run_failures_are_not():
    worked = [rec(), rec()]
    assert provider.judge(worked + [rec(429, "rate_limit"), rec()]).failure is None  # recovered: the agent's result
    ended = provider.judge(worked + [rec(429, "rate_limit")] * 3)  # the harness gave up after its retries
    assert ended.failure is not None and ended.failure.kind == "rate_limit"
    assert provider.judge(worked + [rec(401, "auth", "401 revoked")]).failure.kind == "auth"
    # a 400 the agent caused (context too long) is no provider failure
    assert provider.judge(worked + [rec(400)]).failure is None
    assert provider.judge([]).failure is None  # the harness never called: its own problem, graded


def test_cost_limit_is_graded_not_an_error():
    outcome = provider.judge([rec(), rec(400, "cost_limit")])
    assert outcome.failure is None and outcome.cost_limit and outcome.failed_requests == {"cost_limit": 1}


def test_the_breaker_needs_n_in_a_row_of_one_kind(tmp_path):
    def end(kind):
        error = provider.ProviderError("x", kind, "402 Insufficient credits") if kind else None
        provider.note(tmp_path, "i", error)

    end("billing"), end("billing")
    assert provider.tripped(tmp_path, 3) is None
    end(None)  # a verdict breaks the streak
    end("billing"), end("billing")
    assert provider.tripped(tmp_path, 3) is None
    end("billing")
    assert provider.tripped(tmp_path, 3) == ("the provider answered 402 Insufficient credits for 3 instances in a "
                                             "row; top up and --resume")
    assert provider.tripped(tmp_path, 0) is None  # --provider-breaker 0: never
    provider.reset(tmp_path)
    assert provider.tripped(tmp_path, 3) is None


@pytest.mark.parametrize("status,body,kind", [
    (200, {"error": {"code": 402, "message": "Insufficient credits"}}, "billing"),  # OpenRouter, inside a 200
    (200, {"id": "x", "error": None, "usage": {}}, None),  # Responses' error: null
    (400, {"error": {"message": "context too long", "type": "invalid_request_error"}}, None),
    (404, {"error": {"message": "The model `x` does not exist", "code": "model_not_found"}}, "model"),
    (503, b"<html>Service Unavailable</html>", "server"),
    (429, {"error": {"message": "You exceeded your current quota", "code": "insufficient_quota"}}, "billing"),
])
def test_plain_answers_are_classified(status, body, kind):
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    found = failures.of_answer(status, data)
    assert (found.kind if found else None) == kind


def _ledger(run_dir: Path, instance: str, model: str, n: int, tokens: int = 1000):
    usage = run_dir / "gateway" / "usage"
    usage.mkdir(parents=True, exist_ok=True)
    with open(usage / f"{instance}.jsonl", "a") as fh:
        for _ in range(n):
            fh.write(json.dumps({"instance_id": instance, "model": model, "status": 200, **rec(input_tokens=tokens)})
                     + "\n")


def test_max_cost_counts_every_process_and_the_running_items(tmp_path):
    prices = tmp_path / "prices.yaml"
    prices.write_text("p/m: {input: 10, output: 10}\n")  # $0.01 per 1000-token call
    items = tmp_path / "instances"
    items.mkdir()
    _ledger(tmp_path, "a", "p/m", 3)  # finished: $0.03
    assert counted_spend(tmp_path, str(prices)).counted == pytest.approx(0.03)
    assert over_max_cost(tmp_path, items, 0.05, str(prices)) is None
    (items / ".b.partial").mkdir()  # running, $0.01 so far: likely $0.02 more
    _ledger(tmp_path, "b", "p/m", 1)
    why = over_max_cost(tmp_path, items, 0.05, str(prices))
    assert why == ("not started: --max-cost $0.05 reached (counted $0.0400 + $0.0200 likely from 1 running); "
                   "--resume with a higher --max-cost runs it")


def test_unit_prices_and_unknown_models(tmp_path):
    prices = tmp_path / "prices.yaml"
    prices.write_text("p/m: {input: 10, output: 20, cache_read: 1}\n")
    assert unit_prices("p/m", str(prices)) == pytest.approx([10e-6, 20e-6, 1e-6, 10e-6])
    assert unit_prices("nobody/knows-this-model") is None
    assert unit_prices("scripted/gold") == [0, 0, 0, 0]


@pytest.mark.parametrize("args,message", [
    (["--max-cost", "5"], "--max-cost needs the price of openrouter/nobody/unknown-model, which is unknown; give it "
                          "in a --prices file"),
    (["--max-instance-cost", "-1"], "--max-instance-cost -1: give a positive amount of USD"),
    (["--provider-breaker", "-2"], "--provider-breaker -2: give 0 (never stop)"),
])
def test_bad_spending_options_are_one_sentence_before_anything(pytester, monkeypatch, args, message):
    monkeypatch.setenv("OPENROUTER_API_KEY", "sk-x")
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--harness", "claude-code", "--model",
                                           "openrouter/nobody/unknown-model", "--dataset", "demo", *args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert message in result.stderr.str()
    assert not (pytester.path / "reports").exists()


def test_max_cost_counts_an_items_judge_and_tools_as_the_item_s(tmp_path):
    """A WildClawBench task spends under three names in the ledger (the agent's, `<task>.tools`, `<task>.judge`):
    they are one item's cost. Counted as three finished items, the mean cost per item (what each running item is
    likely to add) came out a third of the truth, and a running task's own tool calls counted as a finished item."""
    prices = tmp_path / "prices.yaml"
    prices.write_text("p/m: {input: 10, output: 10}\n")  # $0.01 per 1000-token call
    items = tmp_path / "instances"
    items.mkdir()
    _ledger(tmp_path, "a", "p/m", 3)  # finished: $0.03 + $0.01 tools + $0.01 judge = $0.05
    _ledger(tmp_path, ledger_name("a", "tools"), "p/m", 1)
    _ledger(tmp_path, ledger_name("a", "judge"), "p/m", 1)
    (items / ".b.partial").mkdir()  # running, $0.02 so far (agent and tools): likely $0.03 more
    _ledger(tmp_path, "b", "p/m", 1)
    _ledger(tmp_path, ledger_name("b", "tools"), "p/m", 1)
    why = over_max_cost(tmp_path, items, 0.10, str(prices))
    assert why == ("not started: --max-cost $0.1 reached (counted $0.0700 + $0.0300 likely from 1 running); "
                   "--resume with a higher --max-cost runs it")
    assert item_of(ledger_name("a.b-1", "judge")) == "a.b-1" and item_of("a.b-1") == "a.b-1"
