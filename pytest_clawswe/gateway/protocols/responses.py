"""OpenAI Responses: reading a request, the usage of an answer (plain or streamed), scripted replies."""
from __future__ import annotations

import time

from pytest_clawswe.gateway.protocols import sse
from pytest_clawswe.gateway.protocols.base import (
    Protocol,
    Reply,
    RequestView,
    StreamUsage,
    ToolSpec,
    _args,
    _dumps,
    _openai_style_usage,
    new_id,
    pieces,
)
from pytest_clawswe.usage import Usage


class Responses(Protocol):
    name = "responses"

    def view(self, body: dict) -> RequestView:
        tools = [
            ToolSpec(t["name"], t.get("parameters") or {})
            for t in body.get("tools") or []
            if isinstance(t, dict) and t.get("type") == "function" and t.get("name")
        ]
        items = body.get("input")
        items = items if isinstance(items, list) else [{"role": "user", "content": items or ""}]
        turns = calls = 0
        for item in items:
            if not isinstance(item, dict):
                continue
            if item.get("type") == "function_call":
                turns, calls = turns + 1, calls + 1
            elif item.get("role") == "assistant":
                turns += 1
        history = _dumps(items)
        prompt = _dumps([body.get("instructions") or "", items])
        return RequestView(tools, history, prompt, turns, calls)

    @staticmethod
    def _usage(usage: Usage) -> dict:
        prompt = usage.input_tokens + usage.cache_read_tokens + usage.cache_write_tokens
        return {
            "input_tokens": prompt,
            "input_tokens_details": {
                "cached_tokens": usage.cache_read_tokens,
                "cache_write_tokens": usage.cache_write_tokens,
            },
            "output_tokens": usage.output_tokens,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": prompt + usage.output_tokens,
        }

    @staticmethod
    def _items(reply: Reply) -> list[dict]:
        items = []
        if reply.text:
            items.append({
                "type": "message", "id": new_id("msg_"), "status": "completed", "role": "assistant",
                "content": [{"type": "output_text", "text": reply.text, "annotations": [], "logprobs": []}],
            })
        for call in reply.tool_calls:
            items.append({
                "type": "function_call", "id": new_id("fc_"), "call_id": call.id or new_id("call_"), "name": call.name,
                "arguments": _args(call), "status": "completed",
            })
        return items

    @staticmethod
    def _response(body: dict, model: str, rid: str, status: str, output: list, usage: dict | None) -> dict:
        return {
            "id": rid, "object": "response", "created_at": time.time(), "status": status, "model": model,
            "output": output, "usage": usage, "error": None, "incomplete_details": None,
            "instructions": body.get("instructions"), "metadata": {}, "parallel_tool_calls": True,
            "tool_choice": body.get("tool_choice", "auto"), "tools": body.get("tools") or [],
            "temperature": None, "top_p": None, "text": {"format": {"type": "text"}},
        }

    def render(self, reply, usage, model, body):
        return self._response(body, model, new_id("resp_"), "completed", self._items(reply), self._usage(usage))

    def render_stream(self, reply, usage, model, body):
        rid, seq, out = new_id("resp_"), 0, []

        def emit(kind: str, **fields) -> None:
            nonlocal seq
            out.append(sse.encode({"type": kind, "sequence_number": seq, **fields}, event=kind))
            seq += 1

        emit("response.created", response=self._response(body, model, rid, "in_progress", [], None))
        emit("response.in_progress", response=self._response(body, model, rid, "in_progress", [], None))
        items = self._items(reply)
        for index, item in enumerate(items):
            where = {"item_id": item["id"], "output_index": index}
            if item["type"] == "message":
                text = item["content"][0]["text"]
                emit("response.output_item.added", output_index=index,
                     item={**item, "status": "in_progress", "content": []})
                part = {"type": "output_text", "text": "", "annotations": [], "logprobs": []}
                emit("response.content_part.added", **where, content_index=0, part=part)
                for p in pieces(text):
                    emit("response.output_text.delta", **where, content_index=0, delta=p, logprobs=[])
                emit("response.output_text.done", **where, content_index=0, text=text, logprobs=[])
                emit("response.content_part.done", **where, content_index=0, part=item["content"][0])
            else:
                emit("response.output_item.added", output_index=index,
                     item={**item, "arguments": "", "status": "in_progress"})
                for p in pieces(item["arguments"]):
                    emit("response.function_call_arguments.delta", **where, delta=p)
                emit("response.function_call_arguments.done", **where, name=item["name"],
                     arguments=item["arguments"])
            emit("response.output_item.done", output_index=index, item=item)
        emit("response.completed", response=self._response(body, model, rid, "completed", items, self._usage(usage)))
        return out

    def usage_from_body(self, obj):
        usage = obj.get("usage")
        if not isinstance(usage, dict):
            return None
        details = usage.get("input_tokens_details") or {}
        return _openai_style_usage(
            usage.get("input_tokens"), details.get("cached_tokens"), details.get("cache_write_tokens"),
            usage.get("output_tokens"),
        )

    def usage_from_event(self, data):
        # the final response (completed, incomplete or failed) carries the usage of the whole turn
        response = data.get("response")
        return self.usage_from_body(response) if isinstance(response, dict) else None

    def stream_reader(self):
        return StreamUsage(self)
