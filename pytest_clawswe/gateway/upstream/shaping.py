"""Model-side shaping: what the released Claw-SWE-Bench proxies changed in a request before the
provider saw it, per provider and harness (docs: shared reference "official settings").

    dashscope_cache          DashScope (Qwen): mark the last user/assistant text block with
                             cache_control {"type": "ephemeral"} and turn empty assistant content
                             ("" or null, from tool-call-only turns) into " " (else no cache hits)
    zeroclaw_tools           zeroclaw: keep only its 7 tools the released proxy kept
    zeroclaw_responses_chat  zeroclaw: a Responses request goes to the provider as Chat Completions
                             (and its answer comes back as a Responses answer)
    zeroclaw_no_stream       zeroclaw: the provider is always asked without streaming (a streamed
                             request gets the answer re-encoded as SSE)
    deepseek_reasoning       DeepSeek (with zeroclaw, as released): the reasoning_content of each
                             answer is put back into its assistant message on later turns

`Shaping.select(...)` picks the defaults ("auto"), none ("off") or an explicit list; `describe()`
says what a run will do, for run.json.
"""
from __future__ import annotations

import hashlib
import json
from collections import OrderedDict
from dataclasses import dataclass, field

NAMES = ("dashscope_cache", "zeroclaw_tools", "zeroclaw_responses_chat", "zeroclaw_no_stream",
         "deepseek_reasoning")
ZEROCLAW_TOOLS = frozenset({"shell", "file_read", "file_write", "file_edit", "glob_search", "content_search",
                            "git_operations"})
EPHEMERAL = {"type": "ephemeral"}
SCRIPTED_APPLIES = frozenset({"zeroclaw_tools"})  # what Gateway._scripted applies (the rest shape provider calls)
MAX_REMEMBERED = 512  # reasoning texts kept per instance (oldest dropped first)


def is_dashscope(upstream, model: str) -> bool:
    return upstream is not None and ("dashscope" in upstream.name.lower() or "dashscope" in upstream.base_url)


def is_deepseek(upstream, model: str) -> bool:
    return upstream is not None and ("deepseek" in upstream.name.lower() or "deepseek" in upstream.base_url
                                     or "deepseek" in model.lower())


def defaults(upstream, model: str, harness: str) -> list[str]:
    """The shapings the released code applied for this provider and harness."""
    names = []
    if is_dashscope(upstream, model):
        names.append("dashscope_cache")
    if harness == "zeroclaw":
        names += ["zeroclaw_tools", "zeroclaw_responses_chat", "zeroclaw_no_stream"]
        if is_deepseek(upstream, model):
            names.append("deepseek_reasoning")
    return names


def parse_setting(setting: str | list[str] | None) -> list[str] | None:
    """None for "auto" (the defaults), else the explicit list ("off"/"none": empty). ValueError names a bad one."""
    if setting is None or setting == "auto" or setting == "":
        return None
    if isinstance(setting, str):
        setting = [] if setting in ("off", "none") else [s.strip() for s in setting.split(",") if s.strip()]
    if not isinstance(setting, (list, tuple)) or not all(isinstance(s, str) for s in setting):
        raise ValueError("gateway shaping must be auto, off, or a comma list of shaping names")
    unknown = [s for s in setting if s not in NAMES]
    if unknown:
        raise ValueError(f"unknown gateway shaping {unknown[0]!r}: use auto, off, or a comma list of "
                         f"{', '.join(NAMES)}")
    return list(setting)


def describe(model: str, harness: str = "", setting: str | list[str] | None = None, upstreams=()) -> dict:
    """What the gateway will do to this run's requests: {"setting", "active": [...], "defaults": [...]}.
    The session puts this in run.json."""
    from pytest_clawswe.gateway.upstream.providers import parse_model, resolve

    parsed = parse_model(model, upstreams)
    scripted = parsed.is_scripted
    upstream, name = (None, model) if scripted else (resolve(parsed, upstreams), parsed.upstream_name)
    default = defaults(upstream, name, harness)
    chosen = parse_setting(setting)
    active = default if chosen is None else chosen
    described = {"setting": setting if isinstance(setting, str) and setting else ("auto" if chosen is None else chosen),
                 "active": active, "defaults": default}
    if scripted:  # the scripted model is answered in the gateway: only the tool filter has a request to act on
        described["active"] = [n for n in active if n in SCRIPTED_APPLIES]
        described["not_applied"] = [n for n in active if n not in SCRIPTED_APPLIES]
    return described


@dataclass
class Shaping:
    names: frozenset = frozenset()
    reasoning: OrderedDict = field(default_factory=OrderedDict)  # deepseek_reasoning's memory
    # several gateway worker processes: what was remembered here and not yet told to the others (service/leader.py)
    unshared: list | None = None

    @classmethod
    def select(cls, upstream, model: str, harness: str = "", setting: str | list[str] | None = None) -> "Shaping":
        chosen = parse_setting(setting)
        return cls(frozenset(defaults(upstream, model, harness) if chosen is None else chosen))

    def __contains__(self, name: str) -> bool:
        return name in self.names

    # ------------------------------------------------------------------ requests
    def filter_tools(self, protocol_name: str, body: dict) -> dict:
        if "zeroclaw_tools" not in self.names or not isinstance(body.get("tools"), list):
            return body
        kept = [t for t in body["tools"] if _tool_name(protocol_name, t) in ZEROCLAW_TOOLS]
        return {**body, "tools": kept}

    def chat_request(self, body: dict) -> dict:
        """A Chat Completions body as the provider gets it."""
        messages = body.get("messages")
        if not isinstance(messages, list):
            return body
        if "deepseek_reasoning" in self.names:
            messages = [self._with_reasoning(m) for m in messages]
        if "dashscope_cache" in self.names:
            messages = mark_cache(messages)
        return {**body, "messages": messages}

    def _with_reasoning(self, message):
        if not isinstance(message, dict) or message.get("role") != "assistant" or message.get("reasoning_content"):
            return message
        text = self.reasoning.get(_turn_key(message))
        return {**message, "reasoning_content": text} if text else message

    # ------------------------------------------------------------------ answers
    def remember(self, message: dict) -> None:
        """An assistant message of an answer: keep its reasoning_content for the next turns."""
        if "deepseek_reasoning" not in self.names or not isinstance(message, dict):
            return
        text = message.get("reasoning_content")
        if isinstance(text, str) and text:
            self.learn(_turn_key(message), text)
            if self.unshared is not None:
                self.unshared.append((_turn_key(message), text))

    def learn(self, key: str, text: str) -> None:
        self.reasoning[key] = text
        while len(self.reasoning) > MAX_REMEMBERED:
            self.reasoning.popitem(last=False)

    def stream_collector(self) -> "ChatStreamCollector | None":
        return ChatStreamCollector(self) if "deepseek_reasoning" in self.names else None


class ChatStreamCollector:
    """Rebuilds the assistant message of a streamed chat answer (content, tool call ids, reasoning)."""

    def __init__(self, shaping: Shaping) -> None:
        self.shaping = shaping
        self.content, self.reasoning, self.calls = [], [], {}
        self.done = False  # the answer's last choice chunk (finish_reason) was seen

    def feed(self, data: dict | None) -> None:
        for choice in (data or {}).get("choices") or []:
            self.done = self.done or bool(choice.get("finish_reason"))
            delta = choice.get("delta") or {}
            self.content.append(delta.get("content") or "")
            self.reasoning.append(delta.get("reasoning_content") or "")
            for call in delta.get("tool_calls") or []:
                if call.get("id"):
                    self.calls.setdefault(call.get("index", 0), call["id"])

    def finish(self) -> None:
        if getattr(self, "finished", False):
            return
        self.finished = True
        calls = [{"id": self.calls[i]} for i in sorted(self.calls)]
        self.shaping.remember({"content": "".join(self.content), "tool_calls": calls,
                               "reasoning_content": "".join(self.reasoning)})


def _tool_name(protocol_name: str, tool) -> str:
    if not isinstance(tool, dict):
        return ""
    fn = tool.get("function")
    return str((fn or {}).get("name") if isinstance(fn, dict) else tool.get("name") or "")


def _turn_key(message: dict) -> str:
    """An assistant turn is known again by its first tool call id, else by its text."""
    for call in message.get("tool_calls") or []:
        if isinstance(call, dict) and call.get("id"):
            return "call:" + str(call["id"])
    content = message.get("content")
    text = content if isinstance(content, str) else json.dumps(content, sort_keys=True)
    return "text:" + hashlib.sha256(text.encode()).hexdigest()


def mark_cache(messages: list) -> list:
    """DashScope: empty assistant content becomes " ", and the last user/assistant text block
    carries cache_control (a string content becomes one text block)."""
    out = []
    for m in messages:
        if isinstance(m, dict) and m.get("role") == "assistant" and m.get("content") in ("", None):
            m = {**m, "content": " "}
        out.append(m)
    for i in range(len(out) - 1, -1, -1):
        m = out[i]
        if not isinstance(m, dict) or m.get("role") not in ("user", "assistant"):
            continue
        content = m.get("content")
        if isinstance(content, str) and content:
            out[i] = {**m, "content": [{"type": "text", "text": content, "cache_control": EPHEMERAL}]}
            return out
        if isinstance(content, list):
            for j in range(len(content) - 1, -1, -1):
                block = content[j]
                if isinstance(block, dict) and block.get("type") == "text":
                    blocks = list(content)
                    blocks[j] = {**block, "cache_control": EPHEMERAL}
                    out[i] = {**m, "content": blocks}
                    return out
    return out


# ---------------------------------------------------------------------- Responses -> Chat Completions
def _text_of(content) -> str:
    if isinstance(content, str):
        return content
    parts = []
    for block in content or []:
        if isinstance(block, dict) and isinstance(block.get("text"), str):
            parts.append(block["text"])
    return "".join(parts)


def responses_to_chat(body: dict) -> dict:
    """A Responses request as the equivalent Chat Completions request (function tools, messages,
    function calls and their outputs; reasoning items are dropped)."""
    messages: list[dict] = []
    if body.get("instructions"):
        messages.append({"role": "system", "content": str(body["instructions"])})
    items = body.get("input")
    items = [{"role": "user", "content": items}] if isinstance(items, str) else (items or [])
    for item in items:
        if not isinstance(item, dict):
            continue
        kind = item.get("type") or "message"
        if kind == "message":
            role = {"developer": "system"}.get(item.get("role"), item.get("role") or "user")
            messages.append({"role": role, "content": _text_of(item.get("content"))})
        elif kind == "function_call":
            call = {"id": item.get("call_id") or item.get("id") or "", "type": "function",
                    "function": {"name": item.get("name") or "", "arguments": item.get("arguments") or "{}"}}
            last = messages[-1] if messages else None
            if last and last["role"] == "assistant" and "tool_calls" in last:
                last["tool_calls"].append(call)
            elif last and last["role"] == "assistant" and not last.get("tool_calls"):
                last["tool_calls"] = [call]
            else:
                messages.append({"role": "assistant", "content": None, "tool_calls": [call]})
        elif kind == "function_call_output":
            output = item.get("output")
            messages.append({"role": "tool", "tool_call_id": item.get("call_id") or "",
                             "content": output if isinstance(output, str) else _text_of(output)})
    chat: dict = {"model": body.get("model"), "messages": messages, "stream": False}
    tools = [{"type": "function", "function": {k: t[k] for k in ("name", "description", "parameters") if k in t}}
             for t in body.get("tools") or [] if isinstance(t, dict) and t.get("type") == "function"]
    if tools:
        chat["tools"] = tools
    choice = body.get("tool_choice")
    if isinstance(choice, str):
        chat["tool_choice"] = choice
    elif isinstance(choice, dict) and choice.get("name"):
        chat["tool_choice"] = {"type": "function", "function": {"name": choice["name"]}}
    for src, dst in (("max_output_tokens", "max_tokens"), ("temperature", "temperature"), ("top_p", "top_p"),
                     ("parallel_tool_calls", "parallel_tool_calls")):
        if body.get(src) is not None and (dst != "parallel_tool_calls" or tools):
            chat[dst] = body[src]
    return chat
