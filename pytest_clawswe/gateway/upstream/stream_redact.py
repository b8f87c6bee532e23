"""The key redacted from a streamed answer across its events, as the harness puts the answer back together.

A provider may send the key in pieces: "sk-or-v1-ab" in one delta, "cd..." in the next (or one character per
event). Each event is whole when it gets here (sse.Splitter joins the TCP chunks), but scrubbing each event alone
(redact.Redactor.scrub) misses a key split across two: the harness joins the deltas. So the text is followed the
way the SDKs join it, per channel: a choice's content, reasoning and refusal, a tool call's arguments (Chat
Completions), a content block (Messages), an output item's content part or arguments (Responses). In each channel
the end of what arrived that could be the beginning of a form of the key (Redactor.hold) is kept back, and the event
is rewritten to carry only the rest; the next piece is scrubbed together with what was kept. When the channel ends
(its finish, its block's stop, its `.done` event, or the stream's end), what is still kept goes out: in the event
that ends it (Chat), or in one more delta event just before it (Messages, Responses; later Responses sequence
numbers are moved on by one). What is kept is only as long as a form's beginning: usually nothing, a few bytes
when the text ends like the key begins. An event nothing is kept from passes as it came, byte for byte.

Not followed: a key split across two content blocks or two tool calls (the SDKs keep them apart; the recorder's
line, which joins a turn's text, is scrubbed whole).
"""
from __future__ import annotations

import re

from pytest_clawswe.gateway import fastjson
from pytest_clawswe.gateway.protocols import sse
from pytest_clawswe.gateway.upstream.redact import Redactor

_LINES = re.compile(rb"\r\n|\n|\r")


class _Channel:
    """One text the harness joins from deltas: what is kept back of it."""

    __slots__ = ("held",)

    def __init__(self) -> None:
        self.held = b""

    def feed(self, redactor: Redactor, piece: str) -> str:
        data = self.held + piece.encode("utf-8", "surrogatepass")
        cut = redactor.split(data)
        self.held = data[cut:]  # unscrubbed: a whole form in it may yet turn out to begin a longer one
        out = data[:cut] if cut < redactor.shortest else redactor.scrub(data[:cut])  # a delta is mostly shorter
        return out.decode("utf-8", "surrogatepass")

    def flush(self, redactor: Redactor) -> str:
        out, self.held = redactor.scrub(self.held), b""
        return out.decode("utf-8", "surrogatepass")


def _data(raw: bytes) -> dict | None:
    """The event's data as a JSON object (None: not one); one data line, the usual case, read without splitting."""
    at = raw.find(b"data:")
    if at < 0:
        return None
    if raw.find(b"data:", at + 5) < 0:
        try:
            value = fastjson.loads(raw[at + 5:])
        except ValueError:
            return None
        return value if isinstance(value, dict) else None
    return sse.Event(raw).json()


def _with_data(raw: bytes, data: dict) -> bytes:
    """The event with its data replaced, its other lines (event:, id:) kept."""
    lines, placed = [], False
    for line in _LINES.split(raw):
        if line.startswith(b"data:"):
            if not placed:
                lines.append(b"data: " + fastjson.dumps(data))
                placed = True
        elif line:
            lines.append(line)
    return b"\n".join(lines) + b"\n\n"


class StreamGuard:
    """One streamed answer's events in, the events to pass on out (`events`, then `finish` at its end)."""

    def __init__(self, redactor: Redactor) -> None:
        self.redactor = redactor
        self.channels: dict[tuple, _Channel] = {}

    def events(self, raws: list[bytes]) -> list[bytes]:
        out: list[bytes] = []
        for raw in raws:
            data = _data(raw)
            out += self.event(raw, data) if data is not None else self.other(raw)
        return out

    def piece(self, key: tuple, text: str) -> str:
        channel = self.channels.get(key)
        if channel is None:
            channel = self.channels[key] = _Channel()
        return channel.feed(self.redactor, text)

    def flush(self, key: tuple) -> str:
        channel = self.channels.pop(key, None)
        return channel.flush(self.redactor) if channel is not None else ""

    def held(self) -> list[tuple]:
        return [key for key, channel in self.channels.items() if channel.held]

    # a protocol's own
    def event(self, raw: bytes, data: dict) -> list[bytes]:
        raise NotImplementedError

    def other(self, raw: bytes) -> list[bytes]:
        """An event that is not a JSON object ([DONE], a comment)."""
        return [raw]

    def finish(self) -> list[bytes]:
        """The stream ended: what is still kept, in events of its own."""
        return []


class ChatGuard(StreamGuard):
    """Chat Completions: per choice its content, reasoning and refusal, and each tool call's arguments."""

    TEXT = ("content", "reasoning_content", "reasoning", "refusal")

    def __init__(self, redactor: Redactor) -> None:
        super().__init__(redactor)
        self.base: dict = {}

    def event(self, raw, data):
        self.base = {k: data[k] for k in ("id", "object", "created", "model") if k in data}
        changed = False
        for choice in data.get("choices") or []:
            if not isinstance(choice, dict):
                continue
            index, delta = choice.get("index", 0), choice.get("delta")
            if isinstance(delta, dict):
                changed |= self._delta(index, delta)
            if choice.get("finish_reason"):  # the choice's texts end here: what is kept goes in this delta
                changed |= self._flush_into(index, choice)
        return [_with_data(raw, data)] if changed else [raw]

    def _delta(self, index, delta: dict) -> bool:
        changed = False
        for field in self.TEXT:
            value = delta.get(field)
            if isinstance(value, str):
                new = self.piece((index, field), value)
                if new != value:
                    delta[field], changed = new, True
        for call in delta.get("tool_calls") or []:
            fn = call.get("function") if isinstance(call, dict) else None
            if isinstance(fn, dict) and isinstance(fn.get("arguments"), str):
                new = self.piece((index, "tool", call.get("index", 0)), fn["arguments"])
                if new != fn["arguments"]:
                    fn["arguments"], changed = new, True
        return changed

    def _flush_into(self, index, choice: dict) -> bool:
        keys = [k for k in self.channels if k[0] == index]
        rest = {k: self.flush(k) for k in keys}
        rest = {k: v for k, v in rest.items() if v}
        if not rest:
            return False
        delta = choice.get("delta") if isinstance(choice.get("delta"), dict) else {}
        choice["delta"] = delta
        for key, text in rest.items():
            if key[1] == "tool":
                calls = delta.setdefault("tool_calls", [])
                call = next((c for c in calls if isinstance(c, dict) and c.get("index", 0) == key[2]), None)
                if call is None:
                    calls.append({"index": key[2], "function": {"arguments": text}})
                else:
                    fn = call.setdefault("function", {})
                    fn["arguments"] = (fn.get("arguments") or "") + text
            else:
                delta[key[1]] = (delta.get(key[1]) or "") + text
        return True

    def other(self, raw):
        return self.finish() + [raw] if raw.strip().endswith(b"[DONE]") else [raw]

    def finish(self):
        out = []
        for index in sorted({k[0] for k in self.held()}, key=str):
            choice: dict = {"index": index, "delta": {}, "finish_reason": None}
            self._flush_into(index, choice)
            out.append(sse.encode({**self.base, "choices": [choice]}))
        self.channels.clear()
        return out


class MessagesGuard(StreamGuard):
    """Anthropic Messages: each content block's text, thinking or tool input."""

    FIELDS = {"text_delta": "text", "thinking_delta": "thinking", "input_json_delta": "partial_json"}
    BLOCKS = {"text": ("text_delta", "text"), "thinking": ("thinking_delta", "thinking")}

    def __init__(self, redactor: Redactor) -> None:
        super().__init__(redactor)
        self.kinds: dict = {}  # block index -> its delta type

    def event(self, raw, data):
        kind, index = data.get("type"), data.get("index", 0)
        if kind == "content_block_start" and isinstance(data.get("content_block"), dict):
            block = data["content_block"]
            delta_type, field = self.BLOCKS.get(block.get("type"), ("input_json_delta", None))
            self.kinds[index] = delta_type
            if field and isinstance(block.get(field), str) and block[field]:  # a block may start with text
                new = self.piece((index,), block[field])
                if new != block[field]:
                    block[field] = new
                    return [_with_data(raw, data)]
        elif kind == "content_block_delta" and isinstance(data.get("delta"), dict):
            delta = data["delta"]
            field = self.FIELDS.get(delta.get("type"))
            if field and isinstance(delta.get(field), str):
                self.kinds.setdefault(index, delta["type"])
                new = self.piece((index,), delta[field])
                if new != delta[field]:
                    delta[field] = new
                    return [_with_data(raw, data)]
        elif kind == "content_block_stop":
            return self._rest(index) + [raw]
        elif kind in ("message_delta", "message_stop", "error"):
            return self.finish() + [raw]
        return [raw]

    def _rest(self, index) -> list[bytes]:
        text = self.flush((index,))
        if not text:
            return []
        delta_type = self.kinds.get(index, "text_delta")
        delta = {"type": delta_type, self.FIELDS[delta_type]: text}
        return [sse.encode({"type": "content_block_delta", "index": index, "delta": delta}, event="content_block_delta")]

    def finish(self):
        return [e for key in self.held() for e in self._rest(key[0])]


class ResponsesGuard(StreamGuard):
    """OpenAI Responses: every `*.delta` event's text (output text, refusal, reasoning, tool arguments), per output
    item and content part; what is kept goes out in one more delta just before the part's `.done`."""

    def __init__(self, redactor: Redactor) -> None:
        super().__init__(redactor)
        self.shift = 0  # delta events added so far: later sequence numbers move on by as many
        self.templates: dict = {}  # channel -> the fields of its delta events (type, item_id, indexes)

    @staticmethod
    def _key(base: str, data: dict) -> tuple:
        return base, data.get("output_index"), data.get("content_index", data.get("summary_index"))

    def event(self, raw, data):
        kind = str(data.get("type") or "")
        out: list[bytes] = []
        changed = False
        if kind.endswith(".delta") and kind != "response.audio.delta" and isinstance(data.get("delta"), str):
            key = self._key(kind[:-6], data)
            self.templates[key] = {k: v for k, v in data.items() if k not in ("delta", "sequence_number", "obfuscation",
                                                                            "logprobs")}
            new = self.piece(key, data["delta"])
            if new != data["delta"]:
                data["delta"], changed = new, True
        elif kind == "response.output_item.done":  # the item's parts and arguments end with it at the latest
            out = self._rest([k for k in self.held() if k[1] == data.get("output_index")], data)
        elif kind.endswith(".done"):
            out = self._rest([self._key(kind[:-5], data)], data)
        elif kind in ("response.completed", "response.incomplete", "response.failed", "error"):
            out = self._rest(self.held(), data)
        if self.shift and isinstance(data.get("sequence_number"), int):
            data["sequence_number"] += self.shift
            changed = True
        return out + [_with_data(raw, data) if changed else raw]

    def _rest(self, keys: list[tuple], before: dict) -> list[bytes]:
        out = []
        for key in keys:
            text = self.flush(key)
            if not text:
                continue
            event = {**self.templates.get(key, {"type": key[0] + ".delta"}), "delta": text}
            if isinstance(before.get("sequence_number"), int):  # it takes the place of the event it precedes
                event["sequence_number"] = before["sequence_number"] + self.shift
            self.shift += 1
            out.append(sse.encode(event, event=event["type"]))
        return out

    def finish(self):
        return self._rest(self.held(), {})


GUARDS = {"chat": ChatGuard, "messages": MessagesGuard, "responses": ResponsesGuard}


def guard_for(protocol: str, redactor: Redactor | None) -> StreamGuard | None:
    """The guard of one streamed answer in `protocol`, or None when there is no key to keep out."""
    if not redactor:
        return None
    return GUARDS[protocol](redactor)
