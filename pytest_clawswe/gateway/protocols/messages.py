"""Anthropic Messages: reading a request, the usage of an answer (plain or streamed), scripted replies."""
from __future__ import annotations

from pytest_clawswe.gateway.protocols import sse
from pytest_clawswe.gateway.protocols.base import (
    Protocol,
    Reply,
    RequestView,
    StreamUsage,
    ToolSpec,
    _args_obj,
    _count_tool_calls,
    _dumps,
    _int,
    new_id,
    pieces,
    provider_cost_of,
)
from pytest_clawswe.usage import Usage


class Messages(Protocol):
    name = "messages"

    def view(self, body: dict) -> RequestView:
        tools = [
            ToolSpec(t["name"], t.get("input_schema") or {})
            for t in body.get("tools") or []
            if isinstance(t, dict) and t.get("name") and ("input_schema" in t or t.get("type") in (None, "custom"))
        ]
        messages = body.get("messages") or []
        turns, calls = _count_tool_calls(messages)
        history = _dumps(messages)
        return RequestView(tools, history, _dumps([body.get("system") or "", messages]), turns, calls)

    @staticmethod
    def _usage(usage: Usage) -> dict:
        return {
            "input_tokens": usage.input_tokens,
            "cache_creation_input_tokens": usage.cache_write_tokens,
            "cache_read_input_tokens": usage.cache_read_tokens,
            "output_tokens": usage.output_tokens,
        }

    @staticmethod
    def _blocks(reply: Reply) -> list[dict]:
        blocks = [{"type": "text", "text": reply.text}] if reply.text else []
        blocks += [{"type": "tool_use", "id": c.id or new_id("toolu_"), "name": c.name, "input": _args_obj(c)}
                   for c in reply.tool_calls]
        return blocks

    @staticmethod
    def _stop(reply: Reply) -> str:
        return "tool_use" if reply.tool_calls else "end_turn"

    def render(self, reply, usage, model, body):
        return {
            "id": new_id("msg_"), "type": "message", "role": "assistant", "model": model,
            "content": self._blocks(reply), "stop_reason": self._stop(reply), "stop_sequence": None,
            "usage": self._usage(usage),
        }

    def render_stream(self, reply, usage, model, body):
        out = []

        def emit(kind: str, **fields) -> None:
            out.append(sse.encode({"type": kind, **fields}, event=kind))

        # like the real API: message_start has the prompt side, message_delta the final totals
        start_usage = {**self._usage(usage), "output_tokens": min(1, usage.output_tokens)}
        emit("message_start", message={
            "id": new_id("msg_"), "type": "message", "role": "assistant", "model": model, "content": [],
            "stop_reason": None, "stop_sequence": None, "usage": start_usage,
        })
        emit("ping")
        for index, block in enumerate(self._blocks(reply)):
            if block["type"] == "text":
                emit("content_block_start", index=index, content_block={"type": "text", "text": ""})
                for p in pieces(block["text"]):
                    emit("content_block_delta", index=index, delta={"type": "text_delta", "text": p})
            else:
                emit("content_block_start", index=index, content_block={**block, "input": {}})
                for p in pieces(_dumps(block["input"])):
                    emit("content_block_delta", index=index, delta={"type": "input_json_delta", "partial_json": p})
            emit("content_block_stop", index=index)
        emit("message_delta", delta={"stop_reason": self._stop(reply), "stop_sequence": None},
             usage=self._usage(usage))
        emit("message_stop")
        return out

    def usage_from_body(self, obj):
        usage = obj.get("usage")
        if not isinstance(usage, dict):
            return None
        return Usage(
            requests=1,
            input_tokens=_int(usage.get("input_tokens")),
            output_tokens=_int(usage.get("output_tokens")),
            cache_read_tokens=_int(usage.get("cache_read_input_tokens")),
            cache_write_tokens=_int(usage.get("cache_creation_input_tokens")),
        )

    def stream_reader(self):
        return AnthropicStreamUsage(self)

    def error_body(self, message, kind="invalid_request_error"):
        return {"type": "error", "error": {"type": kind, "message": message}}


class AnthropicStreamUsage(StreamUsage):
    """message_start holds the prompt side; message_delta holds cumulative totals that replace
    whatever fields it carries (the SDK reads them the same way)."""

    def __init__(self, protocol):
        super().__init__(protocol)
        self._fields: dict = {}

    def feed(self, event):
        if not event.mentions(b'"usage"'):
            return
        data = event.json() or {}
        if data.get("type") == "message_start":
            self._fields.update((data.get("message") or {}).get("usage") or {})
        elif data.get("type") == "message_delta":
            self._fields.update({k: v for k, v in (data.get("usage") or {}).items() if v is not None})
        else:
            return
        self.usage = self.protocol.usage_from_body({"usage": self._fields})
        cost = provider_cost_of(self._fields)
        if cost is not None:
            self.provider_cost = cost
