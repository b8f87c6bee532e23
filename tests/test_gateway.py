"""The model gateway, as the run uses it: a real gateway process on 127.0.0.1, the official
OpenAI and Anthropic SDKs as clients (streaming and not, tool calls parsed by the SDK), and a
small stub server standing in for the real provider when forwarding."""
from __future__ import annotations

import base64
import http.client
import json
import re
import socket
import stat
import struct
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import anthropic  # noqa: E402  (the test extra: a missing SDK must fail, not skip every test)
import openai  # noqa: E402
import pytest

from pytest_clawswe.gateway import GatewayClient, GatewayError, GatewayProcess, Upstream, check_upstream, read_usage
from pytest_clawswe.gateway.upstream.providers import resolve  # noqa: E402
from pytest_clawswe.harness.gateway_urls import anthropic_base_url, openai_base_url
from pytest_clawswe.model import Model  # noqa: E402
from pytest_clawswe.usage import Usage  # noqa: E402
from gateway_stub import gateway_with_env  # noqa: E402
from polling import alive, wait_until  # noqa: E402

pytestmark = pytest.mark.timeout(120)

DUMMY_KEY = "sk-clawswe-DUMMY-upstream-key-7f3a9c"  # recognisable, so a leak is easy to find
KEY_ENV = "CLAWSWE_TEST_UPSTREAM_KEY"
MISSING_KEY_ENV = "CLAWSWE_TEST_MISSING_KEY"
TOKENS: list[str] = []  # every instance token handed out here: none may land in a file either

PATCH = """\
diff --git a/app.txt b/app.txt
--- a/app.txt
+++ b/app.txt
@@ -1 +1 @@
-broken
+fixed
"""
GOLD = {"mode": "gold", "gold_patch": PATCH, "workdir": "/testbed"}


def _schema(arg: str) -> dict:
    return {"type": "object", "properties": {arg: {"type": "string"}}, "required": [arg]}


# one harness's shell tool per protocol: openclaw (chat), codex (responses), claude code (messages)
CHAT_TOOLS = [{"type": "function", "function": {"name": "read", "parameters": _schema("path")}},
              {"type": "function", "function": {"name": "exec", "parameters": _schema("command")}}]
RESPONSES_TOOLS = [{"type": "function", "name": "exec_command", "parameters": _schema("cmd"), "strict": False},
                   {"type": "function", "name": "view_image", "parameters": _schema("path"), "strict": False}]
MESSAGES_TOOLS = [{"name": "Read", "input_schema": _schema("file_path")},
                  {"name": "Bash", "input_schema": _schema("command")}]
SHELL = {"chat": ("exec", "command"), "responses": ("exec_command", "cmd"), "messages": ("Bash", "command")}


# ---------------------------------------------------------------------------------- stub upstream
CHAT_USAGE = {"prompt_tokens": 1000, "completion_tokens": 20, "total_tokens": 1020,
              "prompt_tokens_details": {"cached_tokens": 600, "cache_write_tokens": 100}}
CHAT_EXPECTED = Usage(1, 300, 20, 600, 100)
RESPONSES_USAGE = {"input_tokens": 500, "input_tokens_details": {"cached_tokens": 400}, "output_tokens": 30,
                   "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": 530}
RESPONSES_EXPECTED = Usage(1, 100, 30, 400, 0)
MESSAGES_USAGE = {"input_tokens": 7, "cache_read_input_tokens": 900, "cache_creation_input_tokens": 50,
                  "output_tokens": 42}
MESSAGES_EXPECTED = Usage(1, 7, 42, 900, 50)


def _sse(data, event=None) -> bytes:
    text = data if isinstance(data, str) else json.dumps(data)
    return (f"event: {event}\n" if event else "").encode() + f"data: {text}\n\n".encode()


def stub_stream(path: str, body: dict) -> list[bytes]:
    """What a provider streams back, written by hand (not with the gateway's own code)."""
    model = body["model"]
    if path.endswith("/chat/completions"):
        base = {"id": "up-1", "object": "chat.completion.chunk", "created": 1, "model": model}
        events = [_sse({**base, "choices": [{"index": 0, "delta": {"role": "assistant", "content": "hi"},
                                             "finish_reason": None}]}),
                  _sse({**base, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})]
        if (body.get("stream_options") or {}).get("include_usage"):
            events.append(_sse({**base, "choices": [], "usage": CHAT_USAGE}))
        return events + [_sse("[DONE]")]
    if path.endswith("/responses"):
        msg = {"type": "message", "id": "msg_up", "status": "completed", "role": "assistant",
               "content": [{"type": "output_text", "text": "hi", "annotations": []}]}
        resp = {"id": "resp_up", "object": "response", "created_at": 1, "model": model, "status": "in_progress",
                "output": [], "tools": [], "tool_choice": "auto", "parallel_tool_calls": True}
        done = {**resp, "status": "completed", "output": [msg], "usage": RESPONSES_USAGE}
        seq = [("response.created", {"response": resp}),
               ("response.output_item.added", {"output_index": 0, "item": {**msg, "content": []}}),
               ("response.content_part.added", {"item_id": "msg_up", "output_index": 0, "content_index": 0,
                                                "part": {"type": "output_text", "text": "", "annotations": []}}),
               ("response.output_text.delta", {"item_id": "msg_up", "output_index": 0, "content_index": 0,
                                               "delta": "hi", "logprobs": []}),
               ("response.output_item.done", {"output_index": 0, "item": msg}),
               ("response.completed", {"response": done})]
        return [_sse({"type": t, "sequence_number": i, **d}, t) for i, (t, d) in enumerate(seq)]
    start = {"id": "msg_up", "type": "message", "role": "assistant", "model": model, "content": [],
             "stop_reason": None, "stop_sequence": None, "usage": {**MESSAGES_USAGE, "output_tokens": 1}}
    seq = [("message_start", {"message": start}), ("ping", {}),
           ("content_block_start", {"index": 0, "content_block": {"type": "text", "text": ""}}),
           ("content_block_delta", {"index": 0, "delta": {"type": "text_delta", "text": "hi"}}),
           ("content_block_stop", {"index": 0}),
           ("message_delta", {"delta": {"stop_reason": "end_turn", "stop_sequence": None},
                              "usage": {"output_tokens": MESSAGES_USAGE["output_tokens"]}}),
           ("message_stop", {})]
    return [_sse({"type": t, **d}, t) for t, d in seq]


def stub_json(path: str, body: dict) -> dict:
    model = body["model"]
    if path.endswith("/chat/completions"):
        return {"id": "up-1", "object": "chat.completion", "created": 1, "model": model, "usage": CHAT_USAGE,
                "choices": [{"index": 0, "message": {"role": "assistant", "content": "hi"}, "finish_reason": "stop"}]}
    if path.endswith("/responses"):
        return {"id": "resp_up", "object": "response", "created_at": 1, "model": model, "status": "completed",
                "output": [{"type": "message", "id": "msg_up", "status": "completed", "role": "assistant",
                            "content": [{"type": "output_text", "text": "hi", "annotations": []}]}],
                "tools": [], "tool_choice": "auto", "parallel_tool_calls": True, "usage": RESPONSES_USAGE}
    return {"id": "msg_up", "type": "message", "role": "assistant", "model": model, "stop_reason": "end_turn",
            "stop_sequence": None, "content": [{"type": "text", "text": "hi"}], "usage": MESSAGES_USAGE}


class StubHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.0"  # the body ends when the connection closes: simplest for streams

    def log_message(self, *args):
        pass

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        seen = {"path": self.path, "headers": {k.lower(): v for k, v in self.headers.items()}, "body": body}
        self.server.seen.append(seen)
        if body["model"] == "echo-key":  # a provider error that repeats the credential it got
            credential = self.headers.get("Authorization") or self.headers.get("x-api-key")
            return self._send(401, "application/json", json.dumps({"error": {"message": f"bad key {credential}"}}))
        if body["model"] == "held":  # a provider slow to answer: held until the test lets it go
            self.server.release.wait(60)
        if not body.get("stream"):
            return self._send(200, "application/json", json.dumps(stub_json(self.path, body)))
        events = stub_stream(self.path, body)
        if body["model"] == "late":  # answers once its client has hung up
            time.sleep(1.0)
        if body["model"] == "slow":
            events = events[:1] * 100 + events
        self.server.sent.append(b"".join(events))
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.end_headers()
        try:
            for event in events:
                self.wfile.write(event)
                self.wfile.flush()
                if body["model"] == "slow":
                    time.sleep(0.05)
        except (BrokenPipeError, ConnectionResetError):
            self.server.broken.append(self.path)

    def _send(self, status, ctype, text):
        data = text.encode()
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


@pytest.fixture(scope="module")
def stub():
    server = ThreadingHTTPServer(("127.0.0.1", 0), StubHandler)
    server.daemon_threads = True
    server.seen, server.sent, server.broken = [], [], []
    server.release = threading.Event()
    server.url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.1}, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def gateway(tmp_path_factory, stub):
    upstreams = [Upstream("stub", stub.url + "/v1", KEY_ENV),
                 Upstream("stubant", stub.url + "/v1", KEY_ENV, "x-api-key"),
                 Upstream("down", f"http://127.0.0.1:{_closed_port()}/v1", KEY_ENV),
                 Upstream("nokey", stub.url + "/v1", MISSING_KEY_ENV)]
    # the gateway process inherits the key, like a user's exported key
    with gateway_with_env(tmp_path_factory.mktemp("gateway"), upstreams,
                          {KEY_ENV: DUMMY_KEY, MISSING_KEY_ENV: None}) as gw:
        yield gw


def register(gw, instance_id, model, scripted=None) -> str:
    token = gw.client().register(instance_id, model, scripted)
    TOKENS.append(token)
    return token


# ---------------------------------------------------------------------------------- SDK conversations
def chat_conversation(url, token, stream):
    client = openai.OpenAI(base_url=openai_base_url(url), api_key=token, max_retries=0, timeout=30)
    messages = [{"role": "system", "content": "You are a coding agent."}, {"role": "user", "content": "Fix app.txt"}]
    seen = []

    def ask():
        kwargs = dict(model="fake-model", messages=messages, tools=CHAT_TOOLS)
        if stream:
            with client.chat.completions.stream(**kwargs, stream_options={"include_usage": True}) as s:
                r = s.get_final_completion()
        else:
            r = client.chat.completions.create(**kwargs)
        u, d = r.usage, r.usage.prompt_tokens_details
        written = getattr(d, "cache_write_tokens", 0) or 0  # OpenRouter's field; older SDKs lack it
        seen.append(Usage(1, u.prompt_tokens - d.cached_tokens - written, u.completion_tokens, d.cached_tokens,
                          written))
        return r.choices[0].message

    call = ask().tool_calls[0]
    messages += [{"role": "assistant", "content": None, "tool_calls": [
                     {"id": call.id, "type": "function",
                      "function": {"name": call.function.name, "arguments": call.function.arguments}}]},
                 {"role": "tool", "tool_call_id": call.id, "content": "ok"}]
    final = ask()
    return call.function.name, json.loads(call.function.arguments), final.content, final.tool_calls, seen


def responses_conversation(url, token, stream):
    client = openai.OpenAI(base_url=openai_base_url(url), api_key=token, max_retries=0, timeout=30)
    items = [{"role": "developer", "content": "You are a coding agent."}, {"role": "user", "content": "Fix app.txt"}]
    seen = []

    def ask():
        kwargs = dict(model="fake-model", input=items, tools=RESPONSES_TOOLS)
        if stream:
            with client.responses.stream(**kwargs) as s:
                r = s.get_final_response()
        else:
            r = client.responses.create(**kwargs)
        u, d = r.usage, r.usage.input_tokens_details
        written = getattr(d, "cache_write_tokens", 0) or 0
        seen.append(Usage(1, u.input_tokens - d.cached_tokens - written, u.output_tokens, d.cached_tokens, written))
        return r

    call = ask().output[0]
    assert call.type == "function_call"
    items += [{"type": "function_call", "call_id": call.call_id, "name": call.name, "arguments": call.arguments},
              {"type": "function_call_output", "call_id": call.call_id, "output": "ok"}]
    final = ask()
    calls = [o for o in final.output if o.type == "function_call"]
    return call.name, json.loads(call.arguments), final.output_text, calls, seen


def messages_conversation(url, token, stream):
    client = anthropic.Anthropic(base_url=anthropic_base_url(url), api_key=token, max_retries=0, timeout=30)
    messages = [{"role": "user", "content": "Fix app.txt"}]
    seen = []

    def ask():
        kwargs = dict(model="fake-model", max_tokens=4096, system="You are a coding agent.", messages=messages,
                      tools=MESSAGES_TOOLS)
        if stream:
            with client.messages.stream(**kwargs) as s:
                m = s.get_final_message()
        else:
            m = client.messages.create(**kwargs)
        u = m.usage
        seen.append(Usage(1, u.input_tokens, u.output_tokens, u.cache_read_input_tokens,
                          u.cache_creation_input_tokens))
        return m

    first = ask()
    assert first.stop_reason == "tool_use"
    block = first.content[-1]
    messages += [{"role": "assistant", "content": [{"type": "tool_use", "id": block.id, "name": block.name,
                                                    "input": block.input}]},
                 {"role": "user", "content": [{"type": "tool_result", "tool_use_id": block.id, "content": "ok"}]}]
    final = ask()
    text = "".join(b.text for b in final.content if b.type == "text")
    calls = [b for b in final.content if b.type == "tool_use"]
    return block.name, block.input, text, calls, seen


CONVERSATIONS = {"chat": chat_conversation, "responses": responses_conversation, "messages": messages_conversation}


def patch_in(command: str) -> str:
    """The gold patch as carried by the scripted apply command."""
    return base64.b64decode(re.search(r"printf '%s' '([A-Za-z0-9+/=]+)'", command).group(1)).decode()


# ---------------------------------------------------------------------------------- scripted model
@pytest.mark.parametrize("stream", [False, True], ids=["plain", "stream"])
@pytest.mark.parametrize("protocol", ["chat", "responses", "messages"])
def test_scripted_gold_drives_the_shell_tool_and_usage_adds_up(gateway, protocol, stream):
    client = gateway.client()
    instance = f"demo__{protocol}-{'stream' if stream else 'plain'}"
    token = register(gateway, instance, "scripted/gold", GOLD)
    name, args, final_text, final_calls, seen = CONVERSATIONS[protocol](gateway.url, token, stream)

    tool, arg = SHELL[protocol]
    assert name == tool and set(args) == {arg}
    assert args[arg].startswith("cd /testbed && ") and patch_in(args[arg]) == PATCH
    assert final_text and not final_calls  # after the tool result: a final answer, no more calls

    assert seen[0].cache_read_tokens == 0 and seen[0].cache_write_tokens > 0
    assert seen[1].cache_read_tokens > 0  # every later turn reads from the cache
    total = sum(seen, Usage())
    assert client.usage(token) == total  # exactly what the model reported to the SDK
    assert read_usage(Path(gateway.state_dir), instance) == total  # and the same on disk
    records = client.requests(token)
    assert [(r["protocol"], r["stream"], r["status"]) for r in records] == [(protocol, stream, 200)] * 2
    assert all(r["latency_s"] >= 0 and r["requested_model"] == "fake-model" for r in records)


def test_anthropic_beta_path_and_raw_stream_events(gateway):
    token = register(gateway, "demo__beta", "scripted/gold", GOLD)
    client = anthropic.Anthropic(base_url=anthropic_base_url(gateway.url), api_key=token, max_retries=0)
    kwargs = dict(model="m", max_tokens=100, messages=[{"role": "user", "content": "fix"}], tools=MESSAGES_TOOLS)
    message = client.messages.create(**kwargs, extra_query={"beta": "true"})  # as claude code sends it
    assert message.content[0].name == "Bash"
    with client.messages.create(**kwargs, stream=True) as stream:
        events = list(stream)
    kinds = [e.type for e in events]
    assert kinds[0] == "message_start" and kinds[-2:] == ["message_delta", "message_stop"]
    deltas = [e.delta for e in events if e.type == "content_block_delta"]
    assert len(deltas) >= 2 and all(d.type == "input_json_delta" for d in deltas)  # the Bash call, in pieces
    assert json.loads("".join(d.partial_json for d in deltas))["command"].startswith("cd /testbed && ")
    assert gateway.client().usage(token).requests == 2


def test_chat_stream_without_usage_request_hides_usage_but_counts_it(gateway):
    token = register(gateway, "demo__no-include-usage", "scripted/noop", {"mode": "noop"})
    client = openai.OpenAI(base_url=openai_base_url(gateway.url), api_key=token, max_retries=0)
    chunks = list(client.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}],
                                                 stream=True))
    assert all(c.choices for c in chunks) and all(c.usage is None for c in chunks)  # as the harness asked
    assert "".join(c.choices[0].delta.content or "" for c in chunks)  # noop: text, no tool calls
    usage = gateway.client().usage(token)
    assert usage.requests == 1 and usage.input_tokens > 0 and usage.output_tokens > 0


def test_responses_raw_events_are_typed_and_ordered(gateway):
    token = register(gateway, "demo__responses-raw", "scripted/gold", GOLD)
    client = openai.OpenAI(base_url=openai_base_url(gateway.url), api_key=token, max_retries=0)
    events = list(client.responses.create(model="m", input="fix", tools=RESPONSES_TOOLS, stream=True))
    kinds = [e.type for e in events]
    assert kinds[:2] == ["response.created", "response.in_progress"] and kinds[-1] == "response.completed"
    for kind in ("response.output_item.added", "response.function_call_arguments.delta",
                 "response.function_call_arguments.done", "response.output_item.done"):
        assert kind in kinds
    assert [e.sequence_number for e in events] == list(range(len(events)))
    done = events[-1].response
    assert done.usage.input_tokens > 0 and done.output[0].name == "exec_command"


def test_bare_request_without_tools_gets_the_diff(gateway):
    token = register(gateway, "demo__bare", "scripted/gold", GOLD)
    client = openai.OpenAI(base_url=openai_base_url(gateway.url), api_key=token, max_retries=0)
    reply = client.chat.completions.create(model="m", messages=[{"role": "user", "content": "give a diff"}])
    assert f"```diff\n{PATCH}```" in reply.choices[0].message.content


# ---------------------------------------------------------------------------------- auth and probes
def _post(url, headers, body=None):
    data = json.dumps(body or {"model": "m", "messages": [{"role": "user", "content": "hi"}]}).encode()
    request = urllib.request.Request(url, data=data, headers={"Content-Type": "application/json", **headers})
    try:
        with urllib.request.urlopen(request, timeout=30) as resp:
            return resp.status, json.loads(resp.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def test_token_is_accepted_in_every_header_harnesses_use(gateway):
    token = register(gateway, "demo__headers", "scripted/noop", {"mode": "noop"})
    url = gateway.url + "/v1/chat/completions"
    for header in ({"Authorization": f"Bearer {token}"}, {"x-api-key": token}, {"api-key": token},
                   {"Authorization": "Bearer something-else", "x-api-key": token}):
        status, body = _post(url, header)
        assert status == 200, body
    assert gateway.client().usage(token).requests == 4


def test_unknown_or_revoked_token_is_a_clear_401(gateway):
    status, body = _post(gateway.url + "/v1/chat/completions", {"Authorization": "Bearer nope"})
    assert status == 401 and "token" in body["error"]["message"]
    status, body = _post(gateway.url + "/v1/messages", {"x-api-key": "nope"})
    assert status == 401 and body["type"] == "error" and body["error"]["type"] == "authentication_error"
    with pytest.raises(openai.AuthenticationError):
        openai.OpenAI(base_url=openai_base_url(gateway.url), api_key="nope", max_retries=0).responses.create(
            model="m", input="hi")
    client = gateway.client()
    token = register(gateway, "demo__revoked", "scripted/noop", {"mode": "noop"})
    assert _post(gateway.url + "/v1/chat/completions", {"Authorization": f"Bearer {token}"})[0] == 200
    client.unregister(token)
    assert _post(gateway.url + "/v1/chat/completions", {"Authorization": f"Bearer {token}"})[0] == 401
    assert client.usage(token).requests == 1  # still readable after revocation
    with pytest.raises(GatewayError):
        GatewayClient(gateway.url, "wrong-admin").usage(token)


def test_harness_probes_are_answered(gateway):
    token = register(gateway, "demo__probes", "scripted/noop", {"mode": "noop"})
    for path in ("/api/v1/models", "/v1/models", "/v1/models/fake-model"):
        request = urllib.request.Request(gateway.url + path, headers={"Authorization": f"Bearer {token}"})
        with urllib.request.urlopen(request, timeout=10) as resp:
            data = json.loads(resp.read())
        assert resp.status == 200 and (data.get("id") == "fake-model" or data["data"][0]["id"] == "scripted/noop")
    assert _post(gateway.url + "/api/show", {})[0] == 404
    client = openai.OpenAI(base_url=openai_base_url(gateway.url), api_key=token, max_retries=0)
    assert [m.id for m in client.models.list()] == ["scripted/noop"]
    assert gateway.client().usage(token).requests == 0  # probes are not model requests


# ---------------------------------------------------------------------------------- forwarding
@pytest.mark.parametrize("stream", [False, True], ids=["plain", "stream"])
def test_forward_chat_with_the_real_key_and_usage(gateway, stub, stream):
    token = register(gateway, f"fwd__chat-{stream}", "stub/vendor/model-x")
    client = openai.OpenAI(base_url=openai_base_url(gateway.url), api_key=token, max_retries=0)
    kwargs = dict(model="whatever-the-harness-says", messages=[{"role": "user", "content": "hi"}])
    if stream:
        chunks = list(client.chat.completions.create(**kwargs, stream=True, stream_options={"include_usage": True}))
        assert chunks[-1].usage.prompt_tokens == 1000 and chunks[0].choices[0].delta.content == "hi"
    else:
        assert client.chat.completions.create(**kwargs).usage.prompt_tokens_details.cached_tokens == 600
    seen = stub.seen[-1]
    assert seen["path"] == "/v1/chat/completions"
    assert seen["headers"]["authorization"] == f"Bearer {DUMMY_KEY}"
    assert token not in json.dumps(seen)  # the container's token stays at the gateway
    assert seen["body"]["model"] == "vendor/model-x"  # the provider's name for the model
    assert gateway.client().usage(token) == CHAT_EXPECTED


def test_forwarded_stream_reaches_the_harness_byte_for_byte(gateway, stub):
    token = register(gateway, "fwd__bytes", "stub/vendor/model-x")
    for path, body in (("/v1/chat/completions", {"messages": [], "stream_options": {"include_usage": True}}),
                       ("/v1/responses", {"input": "hi"}), ("/v1/messages", {"messages": [], "max_tokens": 5})):
        conn = http.client.HTTPConnection(gateway.url.split("//")[1], timeout=30)
        conn.request("POST", path, json.dumps({"model": "m", "stream": True, **body}),
                     {"Authorization": f"Bearer {token}", "Content-Type": "application/json"})
        received = conn.getresponse().read()
        conn.close()
        assert received == stub.sent[-1]
    assert gateway.client().usage(token) == CHAT_EXPECTED + RESPONSES_EXPECTED + MESSAGES_EXPECTED


def test_forwarded_chat_stream_gets_usage_the_harness_did_not_ask_for(gateway, stub):
    token = register(gateway, "fwd__chat-hidden-usage", "stub/vendor/model-x")
    client = openai.OpenAI(base_url=openai_base_url(gateway.url), api_key=token, max_retries=0)
    chunks = list(client.chat.completions.create(model="m", messages=[], stream=True))
    assert stub.seen[-1]["body"]["stream_options"] == {"include_usage": True}
    assert all(c.choices for c in chunks)  # the usage-only chunk was not passed on
    assert gateway.client().usage(token) == CHAT_EXPECTED


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "stream"])
def test_forward_responses(gateway, stub, stream):
    token = register(gateway, f"fwd__responses-{stream}", "stub/vendor/model-x")
    client = openai.OpenAI(base_url=openai_base_url(gateway.url), api_key=token, max_retries=0)
    if stream:
        with client.responses.stream(model="m", input="hi") as s:
            response = s.get_final_response()
    else:
        response = client.responses.create(model="m", input="hi")
    assert response.output_text == "hi" and response.usage.input_tokens_details.cached_tokens == 400
    assert stub.seen[-1]["path"] == "/v1/responses" and stub.seen[-1]["body"]["model"] == "vendor/model-x"
    assert gateway.client().usage(token) == RESPONSES_EXPECTED


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "stream"])
def test_forward_anthropic_messages_with_x_api_key(gateway, stub, stream):
    token = register(gateway, f"fwd__messages-{stream}", "stubant/claude-x")
    client = anthropic.Anthropic(base_url=anthropic_base_url(gateway.url), api_key=token, max_retries=0)
    kwargs = dict(model="m", max_tokens=50, messages=[{"role": "user", "content": "hi"}])
    if stream:
        with client.messages.stream(**kwargs, extra_query={"beta": "true"}) as s:  # claude code's query
            message = s.get_final_message()
    else:
        message = client.messages.create(**kwargs)
    assert message.content[0].text == "hi" and message.usage.output_tokens == 42
    seen = stub.seen[-1]
    assert seen["path"] == ("/v1/messages?beta=true" if stream else "/v1/messages")
    assert seen["headers"]["x-api-key"] == DUMMY_KEY and "authorization" not in seen["headers"]
    assert seen["headers"]["anthropic-version"] and seen["body"]["model"] == "claude-x"
    assert gateway.client().usage(token) == MESSAGES_EXPECTED


def test_provider_errors_pass_through_without_the_key(gateway, stub):
    token = register(gateway, "fwd__echo-key", "stub/echo-key")
    status, body = _post(gateway.url + "/v1/chat/completions", {"Authorization": f"Bearer {token}"})
    assert status == 401 and "[redacted]" in body["error"]["message"]
    assert DUMMY_KEY not in json.dumps(body)
    [record] = gateway.client().requests(token)
    assert record["status"] == 401 and record["input_tokens"] == 0


def test_unreachable_provider_is_a_502(gateway):
    token = register(gateway, "fwd__down", "down/model")
    client = openai.OpenAI(base_url=openai_base_url(gateway.url), api_key=token, max_retries=0)
    with pytest.raises(openai.APIStatusError) as info:
        client.chat.completions.create(model="m", messages=[])
    assert info.value.status_code == 502 and "could not reach down" in str(info.value)
    assert gateway.client().requests(token)[0]["status"] == 502


def records_once_written(gateway, token, timeout=20.0) -> list[dict]:
    """The token's ledger records, waiting for the first (a hung-up request is recorded once the gateway sees it)."""
    client = gateway.client()
    return wait_until(lambda: client.requests(token), timeout, "the gateway recorded the request", interval=0.1)


def test_client_disconnect_mid_stream_is_recorded_and_harmless(gateway, stub):
    token = register(gateway, "fwd__disconnect", "stub/slow")
    conn = http.client.HTTPConnection(gateway.url.split("//")[1], timeout=30)
    conn.request("POST", "/v1/chat/completions", json.dumps({"model": "m", "messages": [], "stream": True}),
                 {"Authorization": f"Bearer {token}", "Content-Type": "application/json"})
    response = conn.getresponse()
    assert response.status == 200 and response.readline().startswith(b"data: ")
    conn.sock.shutdown(socket.SHUT_RDWR)
    conn.close()
    assert records_once_written(gateway, token)[0]["status"] == 499
    # the gateway carries on
    again = register(gateway, "fwd__after-disconnect", "stub/vendor/model-x")
    assert _post(gateway.url + "/v1/chat/completions", {"Authorization": f"Bearer {again}"})[0] == 200


def test_a_harness_that_hangs_up_at_the_last_event_had_a_whole_turn(gateway, stub):
    """SDKs close the connection once they read a stream's last event; that close could land before the
    gateway's end of the response and was recorded as a broken upstream stream, no turn (seen in CI)."""
    token = register(gateway, "fwd__close-at-done", "stub/vendor/model-x")
    body = json.dumps({"model": "m", "messages": [], "stream": True}).encode()
    for _ in range(20):
        with socket.create_connection(tuple(gateway.url.split("//")[1].split(":")), timeout=10) as sock:
            sock.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + token.encode()
                         + b"\r\nContent-Type: application/json\r\nContent-Length: " + str(len(body)).encode()
                         + b"\r\n\r\n" + body)
            seen = b""
            while b"[DONE]" not in seen:
                chunk = sock.recv(65536)
                assert chunk, seen
                seen += chunk
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))  # a reset, at once
    records = gateway.client().requests(token)
    assert len(records) == 20
    assert [(r["status"], r.get("failure")) for r in records] == [(200, None)] * 20, records
    assert gateway.client().usage(token).requests == 20


def test_scripted_hang_holds_the_request_until_the_client_gives_up(gateway):
    """scripted/hang never answers (a budget cut forced by the model): the request is held, and recorded as
    the client's disconnect once the harness hangs up."""
    token = register(gateway, "hang__one", "scripted/hang", {"workdir": "/testbed"})
    conn = http.client.HTTPConnection(gateway.url.split("//")[1], timeout=1.5)
    conn.request("POST", "/v1/chat/completions", json.dumps({"model": "m", "messages": [], "stream": True}),
                 {"Authorization": f"Bearer {token}", "Content-Type": "application/json"})
    with pytest.raises(TimeoutError):
        conn.getresponse()  # nothing, not even headers, within the client's own time-out
    conn.sock.shutdown(socket.SHUT_RDWR)
    conn.close()
    (record,) = records_once_written(gateway, token)
    assert (record["status"], record["input_tokens"], record["output_tokens"]) == (499, 0, 0)
    assert record["latency_s"] >= 1.5


def test_a_client_gone_before_the_stream_starts_is_its_own_disconnect_not_an_unreachable_provider(gateway, stub):
    """Today: the answer's headers could not go out, and the request was recorded as the gateway's own 502
    (provider unreachable), not a turn, its tokens lost although the provider answered."""
    token = register(gateway, "fwd__gone-early", "stub/late")
    conn = http.client.HTTPConnection(gateway.url.split("//")[1], timeout=30)
    conn.request("POST", "/v1/chat/completions", json.dumps({"model": "m", "messages": [], "stream": True}),
                 {"Authorization": f"Bearer {token}", "Content-Type": "application/json"})
    conn.sock.shutdown(socket.SHUT_RDWR)  # gone before the provider answers
    conn.close()
    (record,) = records_once_written(gateway, token)
    assert (record["status"], record["error"]) == (499, "client disconnected"), record
    assert gateway.client().usage(token).requests == 1  # the model answered: a turn


def test_a_usage_read_does_not_wait_out_a_call_whose_client_is_gone(gateway, stub):
    """An agent stopped (or a grader killed) while its provider is still answering a plain call: the usage read that
    follows waited SETTLE_S for that call, twice per item (usage, then the records). A call whose client is gone is
    waited for a moment only (a stream to a gone client ends at once; a plain call may take the provider minutes)."""
    from pytest_clawswe.gateway.control.admin_api import GatewayClient
    from pytest_clawswe.gateway.service.tokens import SETTLE_S

    token = register(gateway, "fwd__held", "stub/held")
    stub.release.clear()
    conn = http.client.HTTPConnection(gateway.url.split("//")[1], timeout=30)
    conn.request("POST", "/v1/chat/completions", json.dumps({"model": "m", "messages": []}),
                 {"Authorization": f"Bearer {token}", "Content-Type": "application/json"})
    wait_until(lambda: [s for s in stub.seen if s["body"]["model"] == "held"], 30, "the provider has the held call",
               interval=0.05)
    conn.sock.shutdown(socket.SHUT_RDWR)
    conn.close()
    try:
        admin = gateway.client()
        quick = GatewayClient(admin.url, admin.admin_token, timeout=SETTLE_S / 2)
        assert quick.usage(token).requests == 0 and quick.requests(token) == []  # not answered yet
    finally:
        stub.release.set()
    (record,) = records_once_written(gateway, token)  # the provider's answer still counts, once it came
    assert record["status"] == 200 and record["input_tokens"] > 0 and gateway.client().usage(token).requests == 1, record


def test_concurrent_instances_are_counted_apart(gateway):
    def one(i):
        token = register(gateway, f"conc__{i}", "scripted/gold", GOLD)
        protocol = ["chat", "responses", "messages"][i % 3]
        *_, seen = CONVERSATIONS[protocol](gateway.url, token, stream=i % 2 == 0)
        return token, sum(seen, Usage())

    with ThreadPoolExecutor(8) as pool:
        results = list(pool.map(one, range(12), timeout=90))
    client = gateway.client()
    for token, reported in results:
        assert client.usage(token) == reported


# ---------------------------------------------------------------------------------- run-level checks
def test_check_upstream_names_the_missing_key(monkeypatch):
    monkeypatch.delenv("OPENROUTER_API_KEY", raising=False)
    with pytest.raises(ValueError) as info:
        check_upstream(Model.parse("openrouter/z-ai/glm-5.1"))
    message = str(info.value)
    assert "OPENROUTER_API_KEY" in message and message.endswith(".") and "\n" not in message
    monkeypatch.setenv("OPENROUTER_API_KEY", "sk-or-dummy")
    check_upstream(Model.parse("openrouter/z-ai/glm-5.1"))
    check_upstream(Model.parse("z-ai/glm-5.1"))  # no known prefix: OpenRouter too
    assert resolve(Model.parse("z-ai/glm-5.1")).name == resolve(Model.parse("openrouter/z-ai/glm-5.1")).name
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    with pytest.raises(ValueError, match="ANTHROPIC_API_KEY"):
        check_upstream(Model.parse("anthropic/claude-x"))
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    assert resolve(Model.parse("openai/gpt-x")).base_url == "http://127.0.0.1:9/v1"
    check_upstream(Model.parse("scripted/gold"))
    check_upstream(Model.parse("scripted/noop"))
    with pytest.raises(ValueError, match="scripted/gold"):  # the name is checked where it is parsed
        Model.parse("scripted/perfect")
    up = Upstream.from_spec("local=http://127.0.0.1:8000/v1,LOCAL_KEY,x-api-key")
    assert (up.name, up.base_url, up.key_env, up.auth) == ("local", "http://127.0.0.1:8000/v1", "LOCAL_KEY",
                                                           "x-api-key")
    with pytest.raises(ValueError):
        Upstream.from_spec("local=http://x")


def test_register_refuses_a_model_it_cannot_serve(gateway):
    with pytest.raises(ValueError, match=MISSING_KEY_ENV):
        gateway.client().register("x", "nokey/model")
    with pytest.raises(ValueError, match="gold patch"):
        gateway.client().register("x", "scripted/gold", {"mode": "gold"})


# ---------------------------------------------------------------------------------- the process
def test_state_file_and_sigterm(tmp_path):
    gw = GatewayProcess.start(tmp_path / "gw")
    state = tmp_path / "gw" / "gateway.json"
    info = json.loads(state.read_text())
    assert info["url"] == gw.url and info["url"].startswith("http://127.0.0.1:") and info["pid"] == gw.pid
    assert stat.S_IMODE(state.stat().st_mode) == 0o600  # it holds the admin secret
    assert gw.client().health()
    gw.stop()
    assert gw.process.returncode is not None and not state.exists()


def test_gateway_stops_when_its_parent_dies(tmp_path):
    code = ("import os, sys; from pytest_clawswe.gateway import GatewayProcess; "
            "g = GatewayProcess.start(sys.argv[1]); print(g.pid, flush=True); os._exit(0)")
    out = subprocess.run([sys.executable, "-c", code, str(tmp_path / "gw")], capture_output=True, text=True,
                         timeout=60)
    pid = int(out.stdout.strip())
    wait_until(lambda: not alive(pid), 20, "the gateway stopped", interval=0.1)


def test_an_xdist_worker_finds_the_gateway_through_the_state_dir(gateway):
    code = ("import sys, json, openai; from pytest_clawswe.gateway import GatewayClient; "
            "from pytest_clawswe.harness.gateway_urls import openai_base_url; "
            "c = GatewayClient.from_state_dir(sys.argv[1]); t = c.register('worker__1', 'scripted/noop'); "
            "o = openai.OpenAI(base_url=openai_base_url(c.url), api_key=t, max_retries=0); "
            "r = o.chat.completions.create(model='m', messages=[{'role': 'user', 'content': 'hi'}]); "
            "print(json.dumps([t, r.usage.prompt_tokens]))")
    out = subprocess.run([sys.executable, "-c", code, str(gateway.state_dir)], capture_output=True, text=True,
                         timeout=60)
    assert out.returncode == 0, out.stderr
    token, prompt_tokens = json.loads(out.stdout)
    TOKENS.append(token)
    usage = gateway.client().usage(token)
    assert usage.input_tokens + usage.cache_read_tokens + usage.cache_write_tokens == prompt_tokens


def test_start_failure_is_a_clear_error(tmp_path):
    with pytest.raises(GatewayError, match="did not start"):
        GatewayProcess.start(tmp_path / "gw", host="203.0.113.7", timeout=20)  # not an address of this host


def test_no_key_or_token_in_any_gateway_file(tmp_path, stub, monkeypatch):
    """Its own gateway and its own traffic (so it holds whatever order the tests run in): scripted and
    forwarded, streamed and not, a provider error that echoes the key, a revoked token; then no file of
    the gateway holds the key or a token."""
    monkeypatch.setenv(KEY_ENV, DUMMY_KEY)

    def send(token, body=None):
        data = json.dumps(body or {"model": "m", "messages": []}).encode()
        headers = {"Content-Type": "application/json", "Authorization": f"Bearer {token}"}
        request = urllib.request.Request(gw.url + "/v1/chat/completions", data=data, headers=headers)
        try:
            with urllib.request.urlopen(request, timeout=30) as resp:
                return resp.status, resp.read()
        except urllib.error.HTTPError as exc:
            return exc.code, exc.read()

    with GatewayProcess.start(tmp_path / "gw", [Upstream("stub", stub.url + "/v1", KEY_ENV)]) as gw:
        client, tokens = gw.client(), []
        for instance, model, scripted in (("leak__gold", "scripted/gold", GOLD), ("leak__fwd", "stub/vendor/m", None),
                                          ("leak__echo", "stub/echo-key", None)):
            tokens.append(client.register(instance, model, scripted))
            for stream in (False, True):
                body = {"model": "m", "stream": stream, "messages": [{"role": "user", "content": "hi"}]}
                assert send(tokens[-1], body)[0] == (401 if "echo" in model else 200)
        client.unregister(tokens[0])
        assert send(tokens[0])[0] == 401
        # the provider's two 401s are recorded, but as failed calls, not model turns (issue 22)
        assert sum(client.usage(t).requests for t in tokens) == 4
        assert [r.get("failure") for r in client.requests(tokens[2])] == ["auth", "auth"]
    files = [p for p in (tmp_path / "gw").rglob("*") if p.is_file()]
    names = {re.sub(r"@w\d+(?=\.jsonl$)", "", p.name) for p in files}  # any worker's ledger file
    assert names >= {"gateway.log", "leak__gold.jsonl", "leak__fwd.jsonl", "leak__echo.jsonl"}
    for path in files:
        text = path.read_text(errors="replace")
        assert DUMMY_KEY not in text, path
        assert not any(t in text for t in tokens), path
