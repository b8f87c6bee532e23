"""The three wire protocols the gateway speaks: OpenAI Chat Completions, OpenAI Responses and
Anthropic Messages.

For each: read what a request asks for (tools, conversation), normalise the usage a response
reports to pytest_clawswe.usage.Usage, and build responses (plain JSON or SSE events) the way
the real API does, so the official SDKs and the harnesses parse them unchanged.

Usage normalisation (Usage.input_tokens is the UNCACHED prompt):
- chat: prompt_tokens includes prompt_tokens_details.cached_tokens and .cache_write_tokens
- responses: input_tokens includes input_tokens_details.cached_tokens and .cache_write_tokens
- messages: input_tokens already excludes cache_read_input_tokens and cache_creation_input_tokens
"""
from __future__ import annotations

import json
import uuid
from dataclasses import dataclass, field

from pytest_clawswe.gateway.protocols import sse
from pytest_clawswe.usage import Usage


@dataclass
class ToolSpec:
    name: str
    params: dict  # JSON schema of the arguments


@dataclass
class ToolCall:
    name: str
    arguments: dict | str  # a str: the provider's JSON text, passed on as it came
    id: str = ""  # empty: each protocol makes one in its own style


@dataclass
class Reply:
    """One assistant turn, independent of the wire protocol."""

    text: str = ""
    tool_calls: list[ToolCall] = field(default_factory=list)


@dataclass
class RequestView:
    """What the scripted model needs to know about a request."""

    tools: list[ToolSpec]
    history: str  # the conversation as JSON: earlier tool calls and their results show up here
    prompt: str  # system prompt and conversation as JSON
    assistant_turns: int  # assistant messages (or items) already in the conversation
    tool_calls_made: int  # tool calls already in the conversation


def new_id(prefix: str) -> str:
    return prefix + uuid.uuid4().hex[:24]


def pieces(text: str, n: int = 3) -> list[str]:
    """Split into up to n non-empty deltas, so clients really have to accumulate."""
    if not text:
        return []
    size = max(1, -(-len(text) // n))
    return [text[i : i + size] for i in range(0, len(text), size)]


def _dumps(value) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def _args(call: ToolCall) -> str:
    return call.arguments if isinstance(call.arguments, str) else _dumps(call.arguments)


def _args_obj(call: ToolCall) -> dict:
    if isinstance(call.arguments, dict):
        return call.arguments
    try:
        value = json.loads(call.arguments)
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def _int(value) -> int:
    return value if isinstance(value, int) and value > 0 else 0


def _openai_style_usage(total_prompt, cached, written, output) -> Usage:
    cached, written = _int(cached), _int(written)
    return Usage(
        requests=1,
        input_tokens=max(0, _int(total_prompt) - cached - written),
        output_tokens=_int(output),
        cache_read_tokens=cached,
        cache_write_tokens=written,
    )


def _count_tool_calls(messages: list) -> tuple[int, int]:
    """(assistant messages, tool calls) in a chat or Anthropic message list. Tool calls are
    counted both as OpenAI tool_calls and as Anthropic tool_use blocks, because some harnesses
    (GenericAgent) send the latter inside OpenAI chat messages."""
    turns = calls = 0
    for msg in messages:
        if not isinstance(msg, dict) or msg.get("role") != "assistant":
            continue
        turns += 1
        calls += len(msg.get("tool_calls") or [])
        content = msg.get("content")
        if isinstance(content, list):
            calls += sum(1 for b in content if isinstance(b, dict) and b.get("type") == "tool_use")
    return turns, calls


class Protocol:
    name = ""
    content_type = "application/json"

    def view(self, body: dict) -> RequestView:
        raise NotImplementedError

    def render(self, reply: Reply, usage: Usage, model: str, body: dict) -> dict:
        raise NotImplementedError

    def render_stream(self, reply: Reply, usage: Usage, model: str, body: dict) -> list[bytes]:
        raise NotImplementedError

    def usage_from_body(self, obj: dict) -> Usage | None:
        raise NotImplementedError

    def stream_reader(self) -> "StreamUsage":
        raise NotImplementedError

    def error_body(self, message: str, kind: str = "invalid_request_error") -> dict:
        return {"error": {"message": message, "type": kind, "param": None, "code": None}}


def provider_cost_of(usage) -> float | None:
    """What a provider says a call cost, from its usage object (OpenRouter's `cost`, USD credits), else None."""
    cost = usage.get("cost") if isinstance(usage, dict) else None
    return float(cost) if isinstance(cost, (int, float)) and not isinstance(cost, bool) else None


class StreamUsage:
    """Reads the usage out of a streamed response, one SSE event at a time."""

    def __init__(self, protocol: Protocol) -> None:
        self.protocol = protocol
        self.usage: Usage | None = None
        self.failure = None  # failures.Failure of an error event, set by the relay
        self.provider_cost: float | None = None  # what the provider says the answer cost (OpenRouter)

    def feed(self, event: sse.Event) -> None:
        if not event.mentions(b'"usage"'):  # most events carry no usage: not worth parsing
            return
        data = event.json()
        if data is not None:
            found = self.protocol.usage_from_event(data)
            if found is not None:
                self.usage = found
                cost = provider_cost_of(data.get("usage"))
                if cost is not None:
                    self.provider_cost = cost


# --------------------------------------------------------------------------- chat completions


# --------------------------------------------------------------------------- responses


# --------------------------------------------------------------------------- anthropic messages
