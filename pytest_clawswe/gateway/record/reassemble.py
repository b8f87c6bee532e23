"""One model answer, as the harness received it, read back into one protocol-free turn: text, reasoning, tool
calls (id, name, arguments as JSON text), the provider's usage object and stop reason.

Works on the bytes the gateway sent (a plain JSON body, or the SSE events of a stream, which are put back
together the way each SDK does). Runs in the recorder's writer process, never on the request's path.
"""
from __future__ import annotations

import json
import re
from typing import Any

from pytest_clawswe.gateway import fastjson

try:
    import msgspec
except ImportError:  # pragma: no cover - a dependency; every stream is still read the general way
    msgspec = None  # type: ignore[assignment]


def empty() -> dict:
    return {"text": "", "reasoning": "", "tool_calls": [], "usage": None, "model": "", "stop": None}


def reassemble(protocol: str, data: bytes, stream: bool) -> dict:
    """The turn in `data` (what was sent to the harness); fields stay empty where the answer had none."""
    if not data:
        return empty()
    if not stream:
        try:
            obj = fastjson.loads(data)
        except (ValueError, UnicodeDecodeError):
            return {**empty(), "error": "answer is not JSON"}
        if not isinstance(obj, dict):
            return {**empty(), "error": "answer is not a JSON object"}
        return _BODY[protocol](obj)
    if protocol == "chat":
        quick = _chat_stream_quick(data)
        if quick is not None:
            return quick
    return _STREAM[protocol](_events(data))


def _events(data: bytes) -> list[dict]:
    """The JSON objects of an SSE stream's data fields (multi-line data joined, as the spec says)."""
    data = _newlines(data)
    values = _as_one_array(data)
    if values is None and not _TWO_DATA_LINES.search(b"\n" + data):
        try:  # one data line per event, around other fields and comments: the object lines read by one parse
            values = fastjson.loads(b"[" + b",".join(_OBJECT_LINE.findall(data)) + b"]")
        except (ValueError, UnicodeDecodeError):
            pass  # an event that is not JSON after all: each read alone below
    if values is None:
        return _events_one_by_one(data)
    return [v for v in values if isinstance(v, dict)]


def _newlines(data: bytes) -> bytes:
    """The stream with every line ending as \\n (the spec allows \\r\\n and \\r as well)."""
    return data.replace(b"\r\n", b"\n").replace(b"\r", b"\n") if b"\r" in data else data


def _as_one_array(data: bytes) -> list | None:
    """A stream of `data: VALUE` events and nothing else (what providers send; its closing [DONE] dropped) read by one
    parse: the events' data joined into one JSON array by a byte replacement, taken when it parses into as many values
    as there are events. None for any other layout."""
    joined = _one_array(data)
    if joined is None:
        return None
    try:
        values = fastjson.loads(joined[0])
    except (ValueError, UnicodeDecodeError):
        return None
    return values if len(values) == joined[1] else None


def _one_array(data: bytes) -> tuple[bytes, int] | None:
    """The data of a stream of `data: VALUE` events and nothing else as one JSON array's text, and how many events
    there are (a parse into another number of values joined what was not one value each)."""
    body = data.rstrip(b"\n")
    if body.endswith(b"data: [DONE]"):
        body = body[:-12].rstrip(b"\n")
    if not body.startswith(b"data: "):
        return None
    joined = body[6:].replace(b"\n\ndata: ", b",")
    if b"\n" in joined:
        return None  # another field, a comment, a data line of two, or a blank line more
    # each event after the first took 7 bytes out (its 8-byte start made a comma): counted without another pass
    return b"[" + joined + b"]", (len(body) - 6 - len(joined)) // 7 + 1


_TWO_DATA_LINES = re.compile(rb"\ndata:[^\n]*\n(?:[^\n]+\n)*?data:")  # in one event: no blank line between
_OBJECT_LINE = re.compile(rb"^data: ?[ \t]*(\{.*)$", re.MULTILINE)


def _events_one_by_one(data: bytes) -> list[dict]:
    out, pending = [], []
    for line in data.split(b"\n"):
        if line.startswith(b"data:"):
            pending.append(line[6:] if line.startswith(b"data: ") else line[5:])
        elif not line and pending:
            out.append(b"\n".join(pending))
            pending = []
    if pending:
        out.append(b"\n".join(pending))
    events = []
    for raw in out:
        try:
            value = fastjson.loads(raw)
        except (ValueError, UnicodeDecodeError):
            continue  # [DONE], comments
        if isinstance(value, dict):
            events.append(value)
    return events


def _text(value) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        return "".join(_text(v.get("text") if isinstance(v, dict) else v) for v in value)
    return ""


def _args_text(value) -> str:
    return value if isinstance(value, str) else json.dumps(value if value is not None else {}, ensure_ascii=False)


# ------------------------------------------------------------------ chat completions
def _chat_body(obj: dict) -> dict:
    out = {**empty(), "usage": obj.get("usage"), "model": str(obj.get("model") or "")}
    choice = (obj.get("choices") or [{}])[0] or {}
    message = choice.get("message") or {}
    out["text"] = _text(message.get("content"))
    out["reasoning"] = _text(message.get("reasoning_content") or message.get("reasoning"))
    out["stop"] = choice.get("finish_reason")
    for call in message.get("tool_calls") or []:
        fn = (call or {}).get("function") or {}
        out["tool_calls"].append({"id": str(call.get("id") or ""), "name": str(fn.get("name") or ""),
                                  "arguments": _args_text(fn.get("arguments"))})
    if isinstance(obj.get("error"), dict):
        out["error"] = str(obj["error"].get("message") or "error")[:500]
    return out


def _chat_stream(events: list[dict]) -> dict:
    """The turn of a Chat Completions stream: the deltas' text, reasoning and tool-call pieces joined in order, the
    last usage, finish reason and error, the first model. (Comprehensions, one per field: this runs for every
    streamed call, and a long answer is hundreds of events.)"""
    out = empty()
    deltas = [d for event in events for c in (event.get("choices") or ()) if c and (d := c.get("delta"))]
    out["text"] = "".join([t if t.__class__ is str else _text(t) for d in deltas if (t := d.get("content"))])
    out["reasoning"] = "".join([_text(r) for d in deltas if (r := d.get("reasoning_content") or d.get("reasoning"))])
    out["tool_calls"] = _chat_tool_calls([parts for d in deltas if (parts := d.get("tool_calls"))])
    out["stop"] = next((c["finish_reason"] for event in reversed(events) for c in reversed(event.get("choices") or ())
                        if c and c.get("finish_reason")), None)
    out["model"] = next((str(m) for event in events if (m := event.get("model"))), "")
    out["usage"] = next((u for event in reversed(events) if (u := event.get("usage"))), None)
    errors = [e for event in events if isinstance(e := event.get("error"), dict)]
    if errors:
        out["error"] = str(errors[-1].get("message") or "error")[:500]
    return out


if msgspec is not None:
    # A Chat Completions chunk as far as the turn reads it. Decoding into these skips every other field unread and
    # makes no dict per event: a stream is read in about half the time a parse into dicts and a walk over them take
    # (the recorder's writer reads every streamed call). Any value these do not fit (a chunk that is not an object,
    # a delta that is not one, text that is not valid JSON) fails the decoding, and the stream is read the general way.
    # gc=False: a chunk holds no reference to itself, so the collector need not track these (decoding is ~8% quicker).
    class _ChatDelta(msgspec.Struct, gc=False):
        content: Any = None
        reasoning_content: Any = None
        reasoning: Any = None
        tool_calls: Any = None

    class _ChatChoice(msgspec.Struct, gc=False):
        delta: _ChatDelta | None = None
        finish_reason: Any = None

    class _ChatChunk(msgspec.Struct, gc=False):
        choices: list[_ChatChoice | None] | None = None
        model: Any = None
        usage: Any = None
        error: Any = None

    _CHAT_CHUNKS = msgspec.json.Decoder(list[_ChatChunk])


def _chat_stream_quick(data: bytes) -> dict | None:
    """_chat_stream's turn read straight from the stream's bytes into _ChatChunk, for a stream of `data:` events and
    nothing else; None when it is laid out otherwise or a chunk does not fit (then read the general way)."""
    if msgspec is None:
        return None
    joined = _one_array(_newlines(data))
    if joined is None:
        return None
    try:
        chunks = _CHAT_CHUNKS.decode(joined[0])
    except (msgspec.DecodeError, msgspec.ValidationError):
        return None
    if len(chunks) != joined[1]:
        return None
    out = empty()
    text: list[str] = []
    reasoning: list[str] = []
    pieces: list = []
    error = None
    for chunk in chunks:
        for choice in chunk.choices or ():
            if choice is None:
                continue
            delta = choice.delta
            if delta is not None:
                if t := delta.content:
                    text.append(t if t.__class__ is str else _text(t))
                if r := delta.reasoning_content or delta.reasoning:
                    reasoning.append(_text(r))
                if p := delta.tool_calls:
                    pieces.append(p)
            if choice.finish_reason:
                out["stop"] = choice.finish_reason
        if chunk.model and not out["model"]:
            out["model"] = str(chunk.model)
        if chunk.usage:
            out["usage"] = chunk.usage
        if isinstance(chunk.error, dict):
            error = chunk.error
    out["text"], out["reasoning"], out["tool_calls"] = "".join(text), "".join(reasoning), _chat_tool_calls(pieces)
    if error is not None:
        out["error"] = str(error.get("message") or "error")[:500]
    return out


def _chat_tool_calls(pieces: list[list]) -> list[dict]:
    """The tool calls the deltas' `tool_calls` lists carry in pieces (by index: id and name from the first piece with
    one, the arguments' text joined)."""
    calls: dict = {}  # index -> {id, name, arguments pieces}
    for parts in pieces:
        for part in parts:
            slot = calls.setdefault(part.get("index", len(calls)), {"id": "", "name": "", "arguments": []})
            fn = part.get("function") or {}
            slot["id"] = slot["id"] or str(part.get("id") or "")
            slot["name"] = slot["name"] or str(fn.get("name") or "")
            slot["arguments"].append(_args_text(fn.get("arguments") or ""))
    return [{"id": c["id"], "name": c["name"], "arguments": "".join(c["arguments"])} for _, c in sorted(calls.items())]


# ------------------------------------------------------------------ responses
def _responses_body(obj: dict) -> dict:
    out = {**empty(), "usage": obj.get("usage"), "model": str(obj.get("model") or ""), "stop": obj.get("status")}
    _responses_items(out, obj.get("output") or [])
    if isinstance(obj.get("error"), dict):
        out["error"] = str(obj["error"].get("message") or "error")[:500]
    return out


def _responses_items(out: dict, items: list) -> None:
    for item in items:
        if not isinstance(item, dict):
            continue
        kind = item.get("type")
        if kind == "message":
            out["text"] += _text(item.get("content"))
        elif kind == "reasoning":
            out["reasoning"] += _text(item.get("summary")) or _text(item.get("content"))
        elif kind in ("function_call", "custom_tool_call"):
            out["tool_calls"].append({"id": str(item.get("call_id") or item.get("id") or ""),
                                      "name": str(item.get("name") or ""),
                                      "arguments": _args_text(item.get("arguments", item.get("input")))})


def _responses_stream(events: list[dict]) -> dict:
    done_items = []
    for data in events:
        response = data.get("response")
        if data.get("type") in ("response.completed", "response.incomplete", "response.failed") \
                and isinstance(response, dict) and response.get("output"):
            return _responses_body(response)
        if data.get("type") == "response.output_item.done" and isinstance(data.get("item"), dict):
            done_items.append(data["item"])
    out = empty()  # no final response (cut off): the items that were finished
    _responses_items(out, done_items)
    for data in events:
        if isinstance(data.get("response"), dict) and data["response"].get("usage"):
            out["usage"] = data["response"]["usage"]
            out["model"] = str(data["response"].get("model") or "")
    return out


# ------------------------------------------------------------------ anthropic messages
def _messages_body(obj: dict) -> dict:
    out = {**empty(), "usage": obj.get("usage"), "model": str(obj.get("model") or ""), "stop": obj.get("stop_reason")}
    for block in obj.get("content") or []:
        _messages_block(out, block)
    if obj.get("type") == "error" and isinstance(obj.get("error"), dict):
        out["error"] = str(obj["error"].get("message") or "error")[:500]
    return out


def _messages_block(out: dict, block) -> None:
    if not isinstance(block, dict):
        return
    kind = block.get("type")
    if kind == "text":
        out["text"] += _text(block.get("text"))
    elif kind == "thinking":
        out["reasoning"] += _text(block.get("thinking"))
    elif kind in ("tool_use", "server_tool_use"):
        out["tool_calls"].append({"id": str(block.get("id") or ""), "name": str(block.get("name") or ""),
                                  "arguments": _args_text(block.get("input"))})


def _messages_stream(events: list[dict]) -> dict:
    out = empty()
    usage: dict = {}
    blocks: dict = {}  # index -> block being built (partial tool input as text pieces)
    for data in events:
        kind = data.get("type")
        if kind == "message_start":
            message = data.get("message") or {}
            usage.update(message.get("usage") or {})
            out["model"] = str(message.get("model") or "")
        elif kind == "content_block_start":
            block = dict(data.get("content_block") or {})
            block["_json"] = []
            blocks[data.get("index", len(blocks))] = block
        elif kind == "content_block_delta":
            block = blocks.setdefault(data.get("index", 0), {"type": "text", "text": "", "_json": []})
            delta = data.get("delta") or {}
            if delta.get("type") == "text_delta":
                block["text"] = block.get("text", "") + _text(delta.get("text"))
            elif delta.get("type") == "thinking_delta":
                block["thinking"] = block.get("thinking", "") + _text(delta.get("thinking"))
            elif delta.get("type") == "input_json_delta":
                block["_json"].append(str(delta.get("partial_json") or ""))
        elif kind == "message_delta":
            usage.update({k: v for k, v in (data.get("usage") or {}).items() if v is not None})
            out["stop"] = (data.get("delta") or {}).get("stop_reason") or out["stop"]
        elif kind == "error" and isinstance(data.get("error"), dict):
            out["error"] = str(data["error"].get("message") or "error")[:500]
    for _, block in sorted(blocks.items()):
        pieces = block.pop("_json", [])
        if pieces:
            block["input"] = "".join(pieces)
        _messages_block(out, block)
    out["usage"] = usage or None
    return out


_BODY = {"chat": _chat_body, "responses": _responses_body, "messages": _messages_body}
_STREAM = {"chat": _chat_stream, "responses": _responses_stream, "messages": _messages_stream}
