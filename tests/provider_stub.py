"""A provider stand-in for whole runs (issue 22): an Anthropic Messages endpoint on 127.0.0.1 that the run's
gateway forwards to, as it would to a paid provider. What it answers is its `mode`, changed between runs:

    "ok"           a working model: the project's scripted model (gold) for the instance whose issue text is in
                   the request, rendered on the real wire (plain JSON or SSE), with a fixed usage per call
                   (FIXED_USAGE: known cost per call) and OpenRouter's `usage.cost` beside it
    "402" / "401"  every call refused, with OpenRouter's error body for that status
    "429x3"        the first three model calls answer 429 with Retry-After, then as "ok"
"""
from __future__ import annotations

import base64
import json
import sys
import threading
from pathlib import Path

from pytest_clawswe.gateway.protocols import CHAT, MESSAGES
from pytest_clawswe.gateway.scripted.responder import ScriptedModel
from pytest_clawswe.usage import Usage

sys.path.insert(0, str(Path(__file__).parent))
from gateway_stub import ProviderStandIn  # noqa: E402

FIXED_USAGE = Usage(1, input_tokens=1000, output_tokens=0)  # $0.01 per call at 10 USD per million input tokens
PROVIDER_COST = 0.0123  # what the stub says each call cost, as OpenRouter does (deliberately not ours)
ERRORS = {
    "402": (402, "Insufficient credits. Add more using https://openrouter.ai/settings/credits"),
    "401": (401, "No auth credentials found"),
}


class ProviderStub(ProviderStandIn):
    def __init__(self, rows: list[dict]) -> None:
        super().__init__()
        self.rows = rows  # dataset rows: problem_statement and gold patch of each instance
        self.mode = "ok"
        self.leak: tuple[str, str] | None = None  # (key, split): "ok" answers then echo the key (leak_reply_events)
        self.calls = 0  # model calls answered (count_tokens excluded)
        self._lock = threading.Lock()

    def _answer_call(self, path, body, headers):
        with self._lock:
            self.calls += 1
            number = self.calls
        if self.mode in ERRORS:
            status, message = ERRORS[self.mode]
            return status, "application/json", json.dumps({"error": {"code": status, "message": message}}).encode()
        if self.mode == "429x3" and number <= 3:
            data = {"type": "error", "error": {"type": "rate_limit_error", "message": "Rate limited; retry shortly"}}
            return 429, "application/json", json.dumps(data).encode(), {"Retry-After": "1"}
        text = json.dumps(body)
        row = next((r for r in self.rows if _marker(r) in text), None)
        model = ScriptedModel("gold" if row else "noop", row["patch"] if row else "", "/testbed")
        wire = CHAT if path.endswith("/chat/completions") else MESSAGES  # the model check speaks chat
        view = wire.view(body)
        reply = model.reply(view)
        name = str(body.get("model") or "test/model")
        if body.get("stream") is True:
            if self.leak and wire is MESSAGES and reply.tool_calls:
                return leak_reply_events(reply, *self.leak)
            events = wire.render_stream(reply, FIXED_USAGE, name, body)
            # OpenRouter's own cost rides in the final usage
            return [e.replace(b'"usage":{', b'"usage":{"cost":%s,' % str(PROVIDER_COST).encode())
                    if b"message_delta" in e else e for e in events]
        rendered = wire.render(reply, FIXED_USAGE, name, body)
        rendered["usage"]["cost"] = PROVIDER_COST
        return 200, "application/json", json.dumps(rendered).encode()


def _marker(row: dict) -> str:
    """The issue's first line as it appears inside a JSON request body."""
    first = row["problem_statement"].strip().splitlines()[0][:100]
    return json.dumps(first)[1:-1]


# -- a provider that echoes the key back, split over stream events (issue 32 §3) ---------------------------------
# The forms the gateway's redactor knows (gateway/upstream/redact.py), each as the text of the answer, and the ways to split
# it: over two events (cut in the middle of the key), one character per event; `tcp` > 0 cuts every event into
# writes of that many bytes, so events and the key also straddle TCP chunks.
KEY_FORMS = ("plain", "upper", "base64", "escaped")
SPLITS = ("two", "chars")


class Escaped(str):
    """A string the stub writes with every character as a JSON \\uXXXX escape (a JSON encoder may)."""


def form_of(key: str, form: str) -> str:
    if form == "base64":
        return base64.b64encode(key.encode()).decode()
    return Escaped(key) if form == "escaped" else key.upper() if form == "upper" else key


def split(text: str, secret: str, how: str) -> list[str]:
    """`text` in pieces: cut once in the middle of `secret`, or one character per piece."""
    if how == "chars":
        return list(text)
    cut = text.index(secret) + len(secret) // 2
    return [text[:cut], text[cut:]]


def leak_text(key: str, form: str) -> tuple[str, str, str]:
    """(assistant text, tool-call arguments, the form) of an answer that echoes the key."""
    secret = form_of(key, form)
    return f"Here it is: {secret} - done.", json.dumps({"command": f"echo {secret} > /testbed/leak.txt"}), secret


def _json(value) -> str:
    if isinstance(value, Escaped):
        return '"' + "".join(f"\\u{ord(c):04x}" for c in value) + '"'
    if isinstance(value, dict):
        return "{" + ",".join(f"{json.dumps(k)}:{_json(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ",".join(_json(v) for v in value) + "]"
    return json.dumps(value)


def _event(data, event: str | None = None) -> bytes:
    return (f"event: {event}\n" if event else "").encode() + f"data: {_json(data)}\n\n".encode()


def leak_events(protocol: str, key: str, form: str, how: str, tcp: int = 0, tool: str = "Bash") -> list[bytes]:
    """A streamed answer, on `protocol`'s wire, whose text and whose tool call's arguments carry the key in `form`,
    each split `how` over its events; with `tcp`, written in pieces of that many bytes."""
    text, args, secret = leak_text(key, form)
    wrap = Escaped if isinstance(secret, Escaped) else str
    texts = [wrap(p) for p in split(text, secret, how)]
    arg_pieces = [wrap(p) for p in split(args, secret, how)]
    usage = {"prompt_tokens": 5, "completion_tokens": 1}
    events = {"chat": _chat, "responses": _responses, "messages": _messages}[protocol](
        wrap(text), texts, wrap(args), arg_pieces, usage, tool)
    if not tcp:
        return events
    return [e[i:i + tcp] for e in events for i in range(0, len(e), tcp)]


def _chat(text, texts, args, arg_pieces, usage, tool):
    base = {"id": "chatcmpl-leak", "object": "chat.completion.chunk", "created": 1, "model": "m"}

    def chunk(delta, finish=None):
        return _event({**base, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})

    head = {"index": 0, "id": "call_leak", "type": "function", "function": {"name": tool, "arguments": ""}}
    return [chunk({"role": "assistant", "content": ""}), *[chunk({"content": p}) for p in texts],
            chunk({"tool_calls": [head]}),
            *[chunk({"tool_calls": [{"index": 0, "function": {"arguments": p}}]}) for p in arg_pieces],
            chunk({}, "tool_calls"), _event({**base, "choices": [], "usage": {**usage, "total_tokens": 6}}),
            b"data: [DONE]\n\n"]


def _responses(text, texts, args, arg_pieces, usage, tool):
    seq = iter(range(10_000))
    out = []

    def emit(kind, **fields):
        out.append(_event({"type": kind, "sequence_number": next(seq), **fields}, kind))

    message = {"type": "message", "id": "msg_leak", "status": "completed", "role": "assistant",
               "content": [{"type": "output_text", "text": text, "annotations": []}]}
    call = {"type": "function_call", "id": "fc_leak", "call_id": "call_leak", "name": tool, "arguments": args,
            "status": "completed"}
    response = {"id": "resp_leak", "object": "response", "created_at": 1, "status": "in_progress", "model": "m",
                "output": [], "usage": None}
    emit("response.created", response=response)
    emit("response.output_item.added", output_index=0, item={**message, "status": "in_progress", "content": []})
    where = {"item_id": "msg_leak", "output_index": 0, "content_index": 0}
    emit("response.content_part.added", **where, part={"type": "output_text", "text": "", "annotations": []})
    for p in texts:
        emit("response.output_text.delta", **where, delta=p)
    emit("response.output_text.done", **where, text=text)
    emit("response.content_part.done", **where, part=message["content"][0])
    emit("response.output_item.done", output_index=0, item=message)
    emit("response.output_item.added", output_index=1, item={**call, "arguments": "", "status": "in_progress"})
    for p in arg_pieces:
        emit("response.function_call_arguments.delta", item_id="fc_leak", output_index=1, delta=p)
    emit("response.function_call_arguments.done", item_id="fc_leak", output_index=1, arguments=args)
    emit("response.output_item.done", output_index=1, item=call)
    emit("response.completed", response={**response, "status": "completed", "output": [message, call], "usage": {
        "input_tokens": usage["prompt_tokens"], "output_tokens": usage["completion_tokens"], "total_tokens": 6}})
    return out


def _messages(text, texts, args, arg_pieces, usage, tool, tool_id="toolu_leak"):
    def emit(kind, **fields):
        return _event({"type": kind, **fields}, kind)

    message = {"id": "msg_leak", "type": "message", "role": "assistant", "model": "m", "content": [],
               "stop_reason": None, "stop_sequence": None, "usage": {"input_tokens": 5, "output_tokens": 1}}
    return [emit("message_start", message=message),
            emit("content_block_start", index=0, content_block={"type": "text", "text": ""}),
            *[emit("content_block_delta", index=0, delta={"type": "text_delta", "text": p}) for p in texts],
            emit("content_block_stop", index=0),
            emit("content_block_start", index=1, content_block={"type": "tool_use", "id": tool_id, "name": tool,
                                                                "input": {}}),
            *[emit("content_block_delta", index=1, delta={"type": "input_json_delta", "partial_json": p})
              for p in arg_pieces],
            emit("content_block_stop", index=1),
            emit("message_delta", delta={"stop_reason": "tool_use", "stop_sequence": None},
                 usage={"output_tokens": 1}),
            emit("message_stop")]


def _segments(text: str, secrets: list[tuple[str, bool]], how: str) -> list[str]:
    """`text` in pieces: each of `secrets` (in order; True: written \\u-escaped) split `how`, the rest whole."""
    out, at = [], 0
    for secret, escaped in secrets:
        start = text.index(secret, at)
        out.append(text[at:start])
        wrap = Escaped if escaped else str
        out += [wrap(p) for p in split(secret, secret, how)]
        at = start + len(secret)
    return [p for p in [*out, text[at:]] if p]


def leak_reply_events(reply, key: str, how: str) -> list[bytes]:
    """The scripted reply (one shell tool call) on the Messages wire, its command first writing the key in every
    form into /testbed/LEAK.txt and its text quoting them, each form split `how` over the events: what a provider
    that echoes the key would make a harness do."""
    forms = [(form_of(key, f), f == "escaped") for f in KEY_FORMS]
    quoted = " ".join(f"'{secret}'" for secret, _ in forms)
    call = reply.tool_calls[0]
    args = dict(call.arguments) if isinstance(call.arguments, dict) else json.loads(call.arguments)
    args["command"] = f"printf '%s\\n' {quoted} > /testbed/LEAK.txt && {args['command']}"
    text = "I keep these at hand: " + ", ".join(secret for secret, _ in forms) + "."
    texts, arg_text = _segments(text, forms, how), json.dumps(args)
    arg_pieces = _segments(arg_text, forms, how)
    import uuid

    return _messages(text, texts, arg_text, arg_pieces, {}, call.name, f"toolu_{uuid.uuid4().hex[:20]}")
