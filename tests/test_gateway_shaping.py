"""Issue 13 §4: model-side shaping as the released proxies did it, seen by a provider stub that
records the request it receives (a real gateway process, the official OpenAI SDK as the harness)."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import openai
import pytest

from pytest_clawswe.gateway import Upstream
from pytest_clawswe.gateway.upstream.shaping import NAMES, ZEROCLAW_TOOLS, describe
from pytest_clawswe.harness.gateway_urls import openai_base_url

sys.path.insert(0, str(Path(__file__).parent))
from gateway_stub import Stub, chat_answer, gateway_with_env, sse  # noqa: E402

pytestmark = pytest.mark.timeout(120)

KEY_ENV = "CLAWSWE_TEST_SHAPING_KEY"
CALL = {"id": "call_up1", "type": "function", "function": {"name": "shell", "arguments": '{"command": "ls"}'}}
USAGE = {"prompt_tokens": 100, "completion_tokens": 10, "total_tokens": 110,
         "prompt_tokens_details": {"cached_tokens": 40}}


def _answer(path, body, headers):
    if path.endswith("/chat/completions"):
        if not body.get("stream"):
            answer = chat_answer(body["model"], content=None, tool_calls=[CALL], reasoning="R-plain", usage=USAGE)
            return 200, "application/json", json.dumps(answer).encode()
        base = {"id": "up-s", "object": "chat.completion.chunk", "created": 1, "model": body["model"]}
        deltas = [{"role": "assistant", "reasoning_content": "R-"}, {"reasoning_content": "streamed"},
                  {"tool_calls": [{"index": 0, "id": "call_s1", "type": "function",
                                   "function": {"name": "shell", "arguments": ""}}]},
                  {"tool_calls": [{"index": 0, "function": {"arguments": '{"command": "ls"}'}}]}]
        events = [sse({**base, "choices": [{"index": 0, "delta": d, "finish_reason": None}]}) for d in deltas]
        events.append(sse({**base, "choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]}))
        events.append(sse({**base, "choices": [], "usage": USAGE}))
        return events + [sse("[DONE]")]
    done = {"id": "resp_up", "object": "response", "created_at": 1, "model": body["model"], "status": "completed",
            "output": [], "usage": {"input_tokens": 5, "output_tokens": 1, "total_tokens": 6}}
    if body.get("stream"):
        return [sse({"type": "response.completed", "sequence_number": 0, "response": done}, "response.completed")]
    return 200, "application/json", json.dumps(done).encode()


@pytest.fixture(scope="module")
def stub():
    with Stub(_answer) as server:
        yield server


@pytest.fixture(scope="module")
def gateway(tmp_path_factory, stub):
    upstreams = [Upstream(name, stub.url + "/v1", KEY_ENV) for name in ("dashscope", "deepseek", "plain")]
    with gateway_with_env(tmp_path_factory.mktemp("gateway"), upstreams,
                          {KEY_ENV: "sk-shaping-test-key-0123456789"}) as gw:
        yield gw


def client_for(gw, instance, model, harness="", shaping=None):
    token = gw.client().register(instance, model, address="", harness=harness, shaping=shaping)
    return openai.OpenAI(base_url=openai_base_url(gw.url), api_key=token, max_retries=0, timeout=30), token


CONVERSATION = [
    {"role": "system", "content": "You are a coding agent."},
    {"role": "user", "content": "Fix app.txt"},
    {"role": "assistant", "content": "", "tool_calls": [CALL]},  # a tool-call-only turn: empty content
    {"role": "tool", "tool_call_id": "call_up1", "content": "app.txt"},
    {"role": "assistant", "content": None, "tool_calls": [{**CALL, "id": "call_up2"}]},
    {"role": "tool", "tool_call_id": "call_up2", "content": "broken"},
    {"role": "user", "content": "Go on."},
]


# ---------------------------------------------------------------------------------- DashScope
def test_dashscope_marks_the_last_text_block_and_fills_empty_assistant_content(gateway, stub):
    client, _ = client_for(gateway, "shape__qwen", "dashscope/qwen3-coder-plus", harness="openclaw")
    client.chat.completions.create(model="qwen", messages=CONVERSATION)
    sent = stub.seen[-1]["body"]["messages"]
    assert sent[6]["content"] == [{"type": "text", "text": "Go on.", "cache_control": {"type": "ephemeral"}}]
    assert sent[1]["content"] == "Fix app.txt"  # only the last one is marked
    assert sent[2]["content"] == " " and sent[4]["content"] == " "
    assert [m["role"] for m in sent] == [m["role"] for m in CONVERSATION]
    # a block list: its last text block carries the marker
    blocks = [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]
    client.chat.completions.create(model="qwen", messages=[{"role": "user", "content": blocks}])
    assert stub.seen[-1]["body"]["messages"][0]["content"] == [
        {"type": "text", "text": "a"}, {"type": "text", "text": "b", "cache_control": {"type": "ephemeral"}}]


def test_dashscope_shaping_can_be_switched_off(gateway, stub):
    client, _ = client_for(gateway, "shape__qwen-off", "dashscope/qwen3-coder-plus", shaping="off")
    client.chat.completions.create(model="qwen", messages=CONVERSATION)
    assert stub.seen[-1]["body"]["messages"] == CONVERSATION


def test_other_providers_are_not_shaped(gateway, stub):
    client, _ = client_for(gateway, "shape__plain", "plain/some-model", harness="openclaw")
    client.chat.completions.create(model="m", messages=CONVERSATION)
    assert stub.seen[-1]["body"]["messages"] == CONVERSATION


# ---------------------------------------------------------------------------------- zeroclaw
def _tools(names):
    return [{"type": "function", "name": n, "parameters": {"type": "object", "properties": {}}, "strict": False}
            for n in names]


ZEROCLAW_ALL = sorted(ZEROCLAW_TOOLS) + ["web_fetch", "cron", "memory_get", "browser", "delegate"]


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "stream"])
def test_zeroclaw_responses_become_non_streamed_chat_with_seven_tools(gateway, stub, stream):
    client, token = client_for(gateway, f"shape__zc-{stream}", "plain/glm-5", harness="zeroclaw")
    items = [{"role": "developer", "content": "Be brief."}, {"role": "user", "content": "Fix app.txt"},
             {"type": "function_call", "call_id": "c0", "name": "shell", "arguments": '{"command": "pwd"}'},
             {"type": "function_call_output", "call_id": "c0", "output": "/testbed"}]
    kwargs = dict(model="glm", input=items, tools=_tools(ZEROCLAW_ALL), max_output_tokens=500)
    if stream:
        with client.responses.stream(**kwargs) as s:
            response = s.get_final_response()
    else:
        response = client.responses.create(**kwargs)
    seen = stub.seen[-1]
    assert seen["path"] == "/v1/chat/completions" and seen["body"]["stream"] is False
    assert sorted(t["function"]["name"] for t in seen["body"]["tools"]) == sorted(ZEROCLAW_TOOLS)
    assert seen["body"]["max_tokens"] == 500
    assert seen["body"]["messages"] == [
        {"role": "system", "content": "Be brief."}, {"role": "user", "content": "Fix app.txt"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "c0", "type": "function", "function": {"name": "shell", "arguments": '{"command": "pwd"}'}}]},
        {"role": "tool", "tool_call_id": "c0", "content": "/testbed"}]
    # the harness gets a Responses answer, parsed by the SDK, with the provider's call as it came
    [call] = [o for o in response.output if o.type == "function_call"]
    assert call.name == "shell" and call.arguments == '{"command": "ls"}' and call.call_id == "call_up1"
    usage = gateway.client().usage(token)
    assert (usage.requests, usage.input_tokens, usage.cache_read_tokens, usage.output_tokens) == (1, 60, 40, 10)


def test_zeroclaw_chat_requests_are_forced_non_streaming(gateway, stub):
    client, token = client_for(gateway, "shape__zc-chat", "plain/glm-5", harness="zeroclaw")
    chunks = list(client.chat.completions.create(model="glm", messages=CONVERSATION[:2], stream=True,
                                                 stream_options={"include_usage": True}))
    assert stub.seen[-1]["body"]["stream"] is False and "stream_options" not in stub.seen[-1]["body"]
    calls = [tc for c in chunks if c.choices for tc in c.choices[0].delta.tool_calls or []]
    assert calls[0].function.name == "shell" and "".join(c.function.arguments for c in calls) == '{"command": "ls"}'
    assert chunks[-1].usage.prompt_tokens == 100 and gateway.client().usage(token).output_tokens == 10


def test_zeroclaw_shaping_can_be_switched_off(gateway, stub):
    client, _ = client_for(gateway, "shape__zc-off", "plain/glm-5", harness="zeroclaw", shaping="off")
    events = list(client.responses.create(model="glm", input="hi", tools=_tools(ZEROCLAW_ALL), stream=True))
    assert events[-1].type == "response.completed"
    seen = stub.seen[-1]
    assert seen["path"] == "/v1/responses" and seen["body"]["stream"] is True
    assert len(seen["body"]["tools"]) == len(ZEROCLAW_ALL)


# ---------------------------------------------------------------------------------- DeepSeek
def test_deepseek_reasoning_is_carried_across_turns(gateway, stub):
    client, _ = client_for(gateway, "shape__ds", "deepseek/deepseek-chat", harness="zeroclaw")
    first = client.chat.completions.create(model="ds", messages=CONVERSATION[:2])
    call = first.choices[0].message.tool_calls[0]
    history = CONVERSATION[:2] + [
        {"role": "assistant", "content": None, "tool_calls": [  # the harness dropped reasoning_content
            {"id": call.id, "type": "function", "function": {"name": "shell", "arguments": call.function.arguments}}]},
        {"role": "tool", "tool_call_id": call.id, "content": "ok"}]
    client.chat.completions.create(model="ds", messages=history)
    assert stub.seen[-1]["body"]["messages"][2]["reasoning_content"] == "R-plain"
    assert "reasoning_content" not in stub.seen[-1]["body"]["messages"][1]


def test_deepseek_reasoning_from_a_streamed_answer(gateway, stub):
    client, _ = client_for(gateway, "shape__ds-stream", "deepseek/deepseek-chat", shaping="deepseek_reasoning")
    list(client.chat.completions.create(model="ds", messages=CONVERSATION[:2], stream=True))
    assert stub.seen[-1]["body"]["stream"] is True  # not forced: only zeroclaw is
    history = CONVERSATION[:2] + [{"role": "assistant", "content": None, "tool_calls": [{**CALL, "id": "call_s1"}]},
                                  {"role": "tool", "tool_call_id": "call_s1", "content": "ok"}]
    client.chat.completions.create(model="ds", messages=history)
    assert stub.seen[-1]["body"]["messages"][2]["reasoning_content"] == "R-streamed"


def test_deepseek_without_zeroclaw_is_not_shaped_by_default(gateway, stub):
    client, _ = client_for(gateway, "shape__ds-hermes", "deepseek/deepseek-chat", harness="hermes")
    client.chat.completions.create(model="ds", messages=CONVERSATION[:2])
    history = CONVERSATION[:2] + [{"role": "assistant", "content": None, "tool_calls": [CALL]},
                                  {"role": "tool", "tool_call_id": CALL["id"], "content": "ok"}]
    client.chat.completions.create(model="ds", messages=history)
    assert "reasoning_content" not in stub.seen[-1]["body"]["messages"][2]


# ---------------------------------------------------------------------------------- visible, checked
def test_describe_says_what_a_run_will_do():
    ups = [Upstream("dashscope", "https://dashscope-intl.aliyuncs.com/compatible-mode/v1", "DASHSCOPE_API_KEY")]
    assert describe("dashscope/qwen3", "openclaw", upstreams=ups)["active"] == ["dashscope_cache"]
    assert describe("dashscope/qwen3", "hermes")["active"] == ["dashscope_cache"]  # the built-in route
    zc = describe("deepseek/deepseek-chat", "zeroclaw")
    assert zc["active"] == ["zeroclaw_tools", "zeroclaw_responses_chat", "zeroclaw_no_stream", "deepseek_reasoning"]
    assert zc["setting"] == "auto" and zc["defaults"] == zc["active"]
    off = describe("deepseek/deepseek-chat", "zeroclaw", "off")
    assert off["active"] == [] and off["setting"] == "off" and off["defaults"] == zc["active"]
    scripted = describe("scripted/gold", "zeroclaw")
    # the scripted model answers inside the gateway: only the tool filter acts; the rest is listed as not applied
    assert scripted["active"] == ["zeroclaw_tools"]
    assert scripted["not_applied"] == ["zeroclaw_responses_chat", "zeroclaw_no_stream"]
    assert scripted["defaults"] == ["zeroclaw_tools", "zeroclaw_responses_chat", "zeroclaw_no_stream"]
    assert describe("openrouter/qwen/qwen3", "hermes")["active"] == []
    assert set(zc["active"]) <= set(NAMES)
    with pytest.raises(ValueError, match="unknown gateway shaping 'cache'"):
        describe("x/y", "", "cache")


def test_register_refuses_an_unknown_shaping(gateway):
    with pytest.raises(ValueError, match="unknown gateway shaping"):
        gateway.client().register("shape__bad", "plain/m", shaping="dashscope_cache,nope")
