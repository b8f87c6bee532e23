"""Issue 32 §3: a provider that echoes the real key in a stream, split over two events or one character per event,
plain, upper-cased, base64 or \\u-escaped, over each protocol, and across TCP chunks. Against a real gateway
process, with the provider stand-in of tests/provider_stub.py and the official SDKs as the harness's side: the key
is in neither the bytes the client gets, nor the text, reasoning and tool arguments the SDK puts back together,
nor the gateway's record of the call and the trajectory built from it. The text around the key arrives intact."""
from __future__ import annotations

import base64
import http.client
import json
import re
import sys
from pathlib import Path

import anthropic
import openai
import pytest

from pytest_clawswe.gateway import Upstream
from pytest_clawswe.gateway.record.calls import read_calls
from pytest_clawswe.harness.gateway_urls import anthropic_base_url, openai_base_url
from pytest_clawswe.trajectory import atif

sys.path.insert(0, str(Path(__file__).parent))
from gateway_stub import Stub, gateway_with_env  # noqa: E402
from polling import wait_until  # noqa: E402
from provider_stub import KEY_FORMS, SPLITS, leak_events  # noqa: E402

pytestmark = pytest.mark.timeout(180)

KEY_ENV = "CLAWSWE_TEST_SPLIT_KEY"
KEY = "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"
PROTOCOLS = ("chat", "responses", "messages")
CASES = [(p, f, s, 0) for p in PROTOCOLS for f in KEY_FORMS for s in SPLITS] + \
        [(p, f, "two", 3) for p in PROTOCOLS for f in KEY_FORMS]  # and every event in 3-byte TCP writes
TEXT = "Here it is: [redacted] - done."
ARGS = {"command": "echo [redacted] > /testbed/leak.txt"}


def _answer(path, body, headers):
    protocol, form, how, tcp = body["model"].split(":")
    if form == "echo":  # the secret the harness sent (its own token, in its message), split over two events
        secret = body["input"] if protocol == "responses" else body["messages"][0]["content"]
        return leak_events(protocol, secret, "plain", how, int(tcp))
    return leak_events(protocol, KEY, form, how, int(tcp))


@pytest.fixture(scope="module")
def gateway(tmp_path_factory):
    with Stub(_answer) as stub, gateway_with_env(tmp_path_factory.mktemp("gateway"),
                                                 [Upstream("stub", stub.url + "/v1", KEY_ENV)], {KEY_ENV: KEY},
                                                 workers=1) as gw:
        yield gw


def leaks(text: str) -> list[str]:
    """Where the key is in `text`: as it is, in any letter case, after JSON \\u escapes are decoded, or in base64
    (alone or inside a longer base64 word)."""
    found = []
    decoded = re.sub(r"\\u([0-9a-fA-F]{4})", lambda m: chr(int(m.group(1), 16)), text)
    if KEY.lower() in decoded.lower():
        found.append("plain, upper-cased or escaped")
    for word in re.findall(r"[A-Za-z0-9+/=_-]{20,}", text):
        for shift in range(4):
            try:
                if KEY.encode() in base64.b64decode(word[shift:] + "===", altchars=b"-_" if "-" in word else None):
                    found.append("base64")
            except ValueError:
                pass
    return found


def raw_stream(gw, path: str, body: dict, token: str) -> str:
    host, port = gw.url.split("//")[1].rsplit(":", 1)
    conn = http.client.HTTPConnection(host, int(port), timeout=60)
    conn.request("POST", path, json.dumps(body).encode(), {"Authorization": f"Bearer {token}",
                                                            "Content-Type": "application/json"})
    response = conn.getresponse()
    data = response.read()
    conn.close()
    assert response.status == 200, data[:500]
    return data.decode()


def through_sdk(gw, protocol: str, model: str, token: str) -> tuple[str, str]:
    """(text, tool arguments) as the official SDK puts the stream back together."""
    if protocol == "messages":
        client = anthropic.Anthropic(base_url=anthropic_base_url(gw.url), api_key=token, max_retries=0, timeout=60)
        with client.messages.stream(model=model, max_tokens=100, messages=[{"role": "user", "content": "hi"}]) as s:
            message = s.get_final_message()
        text = "".join(b.text for b in message.content if b.type == "text")
        (call,) = [b for b in message.content if b.type == "tool_use"]
        return text, json.dumps(call.input)
    client = openai.OpenAI(base_url=openai_base_url(gw.url), api_key=token, max_retries=0, timeout=60)
    if protocol == "chat":
        with client.chat.completions.stream(model=model, messages=[{"role": "user", "content": "hi"}]) as s:
            message = s.get_final_completion().choices[0].message
        return message.content, message.tool_calls[0].function.arguments
    deltas: dict[str, list[str]] = {"text": [], "args": []}
    with client.responses.stream(model=model, input="hi") as s:
        for event in s:  # the deltas as a client that shows the answer while it streams joins them
            if event.type == "response.output_text.delta":
                deltas["text"].append(event.delta)
            elif event.type == "response.function_call_arguments.delta":
                deltas["args"].append(event.delta)
        final = s.get_final_response()
    joined = "".join(deltas["text"]), "".join(deltas["args"])
    assert joined == (final.output_text, final.output[1].arguments)  # the deltas and the final items agree
    return joined


def recorded(gw, instance: str, n: int) -> str:
    def written() -> list:
        calls = read_calls(gw.state_dir, instance)
        return calls if len(calls) >= n else []

    calls = wait_until(written, 20, f"the gateway wrote {n} calls", interval=0.05)
    assert len(calls) == n
    trajectory = atif.build(calls, {}, harness="test", model="m")
    return json.dumps(calls) + json.dumps(trajectory)


@pytest.mark.parametrize("protocol,form,how,tcp", CASES, ids=[f"{p}-{f}-{s}{'-tcp' if t else ''}" for p, f, s, t in CASES])
def test_a_key_split_across_events_reaches_neither_the_harness_nor_the_record(gateway, protocol, form, how, tcp):
    model = f"{protocol}:{form}:{how}:{tcp}"
    instance = f"split__{protocol}_{form}_{how}_{tcp}"
    token = gateway.client().register(instance, f"stub/{model}")
    path = {"chat": "/v1/chat/completions", "responses": "/v1/responses", "messages": "/v1/messages"}[protocol]
    body = {"model": model, "stream": True, "max_tokens": 100,
            **({"input": "hi"} if protocol == "responses" else {"messages": [{"role": "user", "content": "hi"}]})}
    raw = raw_stream(gateway, path, body, token)
    assert not leaks(raw), (leaks(raw), raw)
    text, args = through_sdk(gateway, protocol, model, token)
    assert not leaks(text + args), (text, args)
    assert (text, json.loads(args)) == (TEXT, ARGS)  # only the key is gone: not a character more
    record = recorded(gateway, instance, 2)
    assert not leaks(record), leaks(record)


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_a_token_split_across_events_is_not_in_the_record(gateway, protocol):
    """The record joins a turn's text before it is scrubbed of every token: the instance's own token, which a
    harness may send and a provider echo in pieces, is in no recorded line or trajectory."""
    instance = f"split__token_{protocol}"
    token = gateway.client().register(instance, f"stub/{protocol}:echo:chars:0")
    path = {"chat": "/v1/chat/completions", "responses": "/v1/responses", "messages": "/v1/messages"}[protocol]
    body = {"model": f"{protocol}:echo:chars:0", "stream": True, "max_tokens": 100,
            **({"input": token} if protocol == "responses" else {"messages": [{"role": "user", "content": token}]})}
    raw_stream(gateway, path, body, token)
    record = recorded(gateway, instance, 1)
    assert token not in record and "[redacted]" in record
