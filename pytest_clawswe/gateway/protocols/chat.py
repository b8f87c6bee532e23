"""OpenAI Chat Completions: reading a request, the usage of an answer (plain or streamed), scripted replies."""
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
    _count_tool_calls,
    _dumps,
    _openai_style_usage,
    new_id,
    pieces,
)
from pytest_clawswe.usage import Usage


class ChatCompletions(Protocol):
    name = "chat"

    def view(self, body: dict) -> RequestView:
        tools = []
        for tool in body.get("tools") or []:
            fn = tool.get("function") if isinstance(tool, dict) else None
            if isinstance(fn, dict) and fn.get("name"):
                tools.append(ToolSpec(fn["name"], fn.get("parameters") or {}))
        messages = body.get("messages") or []
        turns, calls = _count_tool_calls(messages)
        history = _dumps(messages)
        return RequestView(tools, history, history, turns, calls)

    @staticmethod
    def _usage(usage: Usage) -> dict:
        prompt = usage.input_tokens + usage.cache_read_tokens + usage.cache_write_tokens
        return {
            "prompt_tokens": prompt,
            "completion_tokens": usage.output_tokens,
            "total_tokens": prompt + usage.output_tokens,
            "prompt_tokens_details": {
                "cached_tokens": usage.cache_read_tokens,
                "cache_write_tokens": usage.cache_write_tokens,
            },
        }

    @staticmethod
    def _finish(reply: Reply) -> str:
        return "tool_calls" if reply.tool_calls else "stop"

    def render(self, reply, usage, model, body):
        message: dict = {"role": "assistant", "content": reply.text or None, "refusal": None}
        if reply.tool_calls:
            message["tool_calls"] = [
                {"id": c.id or new_id("call_"), "type": "function",
                 "function": {"name": c.name, "arguments": _args(c)}}
                for c in reply.tool_calls
            ]
        return {
            "id": new_id("chatcmpl-"),
            "object": "chat.completion",
            "created": int(time.time()),
            "model": model,
            "choices": [{"index": 0, "message": message, "finish_reason": self._finish(reply), "logprobs": None}],
            "usage": self._usage(usage),
        }

    def render_stream(self, reply, usage, model, body):
        include_usage = bool((body.get("stream_options") or {}).get("include_usage"))
        base = {"id": new_id("chatcmpl-"), "object": "chat.completion.chunk", "created": int(time.time()),
                "model": model}

        def chunk(delta: dict, finish=None) -> bytes:
            data = {**base, "choices": [{"index": 0, "delta": delta, "finish_reason": finish, "logprobs": None}]}
            if include_usage:  # the real API puts "usage": null on every chunk but the last
                data["usage"] = None
            return sse.encode(data)

        out = [chunk({"role": "assistant", "content": ""})]
        out += [chunk({"content": p}) for p in pieces(reply.text)]
        for i, call in enumerate(reply.tool_calls):
            head = {"index": i, "id": call.id or new_id("call_"), "type": "function",
                    "function": {"name": call.name, "arguments": ""}}
            out.append(chunk({"tool_calls": [head]}))
            for p in pieces(_args(call)):
                out.append(chunk({"tool_calls": [{"index": i, "function": {"arguments": p}}]}))
        out.append(chunk({}, self._finish(reply)))
        if include_usage:
            out.append(sse.encode({**base, "choices": [], "usage": self._usage(usage)}))
        out.append(sse.encode("[DONE]"))
        return out

    def usage_from_body(self, obj):
        usage = obj.get("usage")
        if not isinstance(usage, dict):
            return None
        details = usage.get("prompt_tokens_details") or {}
        # OpenAI/OpenRouter: prompt_tokens_details; DeepSeek: prompt_cache_hit_tokens; DashScope's explicit
        # cache: prompt_tokens_details.cache_creation_input_tokens; Anthropic-style names at the top level
        cached = (details.get("cached_tokens") or usage.get("prompt_cache_hit_tokens")
                  or usage.get("cache_read_input_tokens"))
        written = (details.get("cache_write_tokens") or details.get("cache_creation_input_tokens")
                   or usage.get("cache_creation_input_tokens"))
        return _openai_style_usage(usage.get("prompt_tokens"), cached, written, usage.get("completion_tokens"))

    usage_from_event = usage_from_body

    def stream_reader(self):
        return StreamUsage(self)

    @staticmethod
    def is_unrequested_usage_chunk(data: dict | None) -> bool:
        """The usage-only last chunk, which the gateway asks for on the harness's behalf."""
        return bool(data) and data.get("choices") == [] and data.get("usage") is not None
