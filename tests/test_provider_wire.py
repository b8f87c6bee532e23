"""Issue 22, part 5: real providers' answers, as their API references document them, replayed by the provider
stub through a real gateway process; per fixture the gateway's counted tokens, its classification of the
answer (a provider failure or none), the provider's own cost where it reports one (OpenRouter) and our
cost at fixed test prices are asserted exactly.

The fixtures (tests/data/provider_replay.json) are our own JSON, written from the documented shapes: OpenAI
Chat Completions and Responses (plain and streamed, usage in the last chunk), Anthropic Messages (cache
creation/read tokens, its SSE event types, an error event after the stream began, 401/403/529), OpenRouter
(usage with `cost`, 402, an error inside the stream), DeepSeek (cache hits in prompt_cache_hit_tokens,
reasoning tokens), DashScope's explicit cache fields, and 429s with Retry-After or insufficient_quota.
"""
from __future__ import annotations

import http.client
import json
import sys
from pathlib import Path

import pytest

from pytest_clawswe.gateway import Upstream
from pytest_clawswe.prices import Price
from pytest_clawswe.usage import Usage

sys.path.insert(0, str(Path(__file__).parent))
from gateway_stub import Stub, gateway_with_env  # noqa: E402

pytestmark = pytest.mark.timeout(120)

CASES = json.loads((Path(__file__).parent / "data" / "provider_replay.json").read_text())
KEY_ENV = "CLAWSWE_TEST_REPLAY_KEY"
TEST_PRICE = Price(input=1.0, output=2.0, cache_read=0.1, cache_write=1.25)  # USD per million tokens
PATHS = {"chat": "/v1/chat/completions", "responses": "/v1/responses", "messages": "/v1/messages"}
TOKENS = ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens")


def _sse(event: dict) -> bytes:
    data = event["data"] if isinstance(event["data"], str) else json.dumps(event["data"])
    return (f"event: {event['event']}\n" if event.get("event") else "").encode() + f"data: {data}\n\n".encode()


def _answer(path, body, headers):
    case = next(c for c in CASES if c["name"] == body.get("model"))
    if "events" in case:
        return [_sse(e) for e in case["events"]]
    return case["status"], "application/json", json.dumps(case["body"]).encode(), case.get("headers") or {}


@pytest.fixture(scope="module")
def gateway(tmp_path_factory):
    with Stub(_answer) as stub:
        upstreams = [Upstream("replay", stub.url + "/v1", KEY_ENV),
                     Upstream("replayant", stub.url + "/v1", KEY_ENV, "x-api-key")]
        with gateway_with_env(tmp_path_factory.mktemp("gateway"), upstreams, {KEY_ENV: "sk-replay-key"},
                              workers=1) as gw:
            yield gw


def _call(gw, case) -> tuple[int, dict, bytes, dict]:
    prefix = "replayant" if case["protocol"] == "messages" else "replay"
    token = gw.client().register(f"replay-{case['name']}", f"{prefix}/{case['name']}")
    host, port = gw.url.split("//")[1].rsplit(":", 1)
    conn = http.client.HTTPConnection(host, int(port), timeout=60)
    body = {"model": "whatever", "stream": case["stream"], "max_tokens": 100}
    body.update({"input": "hi"} if case["protocol"] == "responses" else {"messages": [{"role": "user",
                                                                                     "content": "hi"}]})
    conn.request("POST", PATHS[case["protocol"]], json.dumps(body),
                 {"Authorization": f"Bearer {token}", "x-api-key": token, "Content-Type": "application/json"})
    resp = conn.getresponse()
    data = resp.read()
    headers = {k.lower(): v for k, v in resp.getheaders()}
    conn.close()
    records = gw.client().requests(token)
    gw.client().unregister(token)
    assert len(records) == 1, records
    return resp.status, headers, data, records[0]


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_replayed_answer_is_counted_exactly(gateway, case):
    status, headers, data, record = _call(gateway, case)
    expect = case["expect"]
    assert status == case["status"]
    assert {k: record[k] for k in TOKENS} == {k: expect[k] for k in TOKENS}, record
    assert record.get("failure") == expect["failure"], record
    assert record.get("provider_cost_usd") == expect["provider_cost_usd"], record
    usage = Usage(1, *(record[k] for k in TOKENS))
    assert TEST_PRICE.cost(usage) == pytest.approx(expect["cost_usd"], abs=1e-12)
    if case.get("headers", {}).get("Retry-After"):  # the harness's own retry logic needs it
        assert headers.get("retry-after") == case["headers"]["Retry-After"]
    if expect["failure"]:  # the reason is one line, with the provider's words
        assert record["reason"] and "\n" not in record["reason"] and len(record["reason"]) <= 160
