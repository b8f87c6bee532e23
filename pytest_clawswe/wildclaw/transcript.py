"""The transcript graders read, in OpenClaw's session format, built from the gateway's record.

One JSON object per line: a `session` header, then `message` entries whose `message` has a role (`user`,
`assistant`, `toolResult`) and a list of content blocks (`text`, `toolCall` with id/name/arguments,
`image`). The same shape for every harness and wire protocol (chat, responses, messages), so a grader
written against OpenClaw reads a Claude Code or Codex run unchanged. System prompts are left out: they
are the harness's, not the conversation's.
"""
from __future__ import annotations

import json
import uuid
from datetime import datetime, timezone

SESSION_PATH = "/root/.openclaw/agents/main/sessions/chat.jsonl"


def _text_blocks(content) -> list[dict]:
    if content is None:
        return []
    if isinstance(content, str):
        return [{"type": "text", "text": content}] if content else []
    blocks = []
    for part in content if isinstance(content, list) else [content]:
        if not isinstance(part, dict):
            continue
        kind = part.get("type")
        if kind in ("text", "input_text", "output_text"):
            blocks.append({"type": "text", "text": part.get("text", "")})
        elif kind in ("image_url", "input_image", "image"):
            blocks.append({"type": "image"})  # the bytes stay out of the transcript
    return blocks


def _args(raw) -> dict:
    if isinstance(raw, dict):
        return raw
    try:
        value = json.loads(raw or "{}")
        return value if isinstance(value, dict) else {"input": value}
    except (TypeError, ValueError):
        return {"input": raw}


def _tool_result(call_id: str, name: str, content) -> dict:
    if isinstance(content, list):
        text = "".join(b.get("text", "") for b in content if isinstance(b, dict))
    else:
        text = "" if content is None else str(content)
    return {"role": "toolResult", "toolCallId": call_id, "toolName": name,
            "content": [{"type": "text", "text": text}]}


def _chat(body: dict) -> list[dict]:
    out, names = [], {}
    for m in body.get("messages") or []:
        role = m.get("role")
        if role == "user":
            out.append({"role": "user", "content": _text_blocks(m.get("content"))})
        elif role == "assistant":
            blocks = _text_blocks(m.get("content"))
            for c in m.get("tool_calls") or []:
                fn = c.get("function") or {}
                names[c.get("id")] = fn.get("name", "")
                blocks.append({"type": "toolCall", "id": c.get("id", ""), "name": fn.get("name", ""),
                               "arguments": _args(fn.get("arguments"))})
            out.append({"role": "assistant", "content": blocks})
        elif role == "tool":
            out.append(_tool_result(m.get("tool_call_id", ""), names.get(m.get("tool_call_id"), ""),
                                    m.get("content")))
    return out


def _messages(body: dict) -> list[dict]:
    out, names = [], {}
    for m in body.get("messages") or []:
        content = m.get("content")
        parts = content if isinstance(content, list) else [{"type": "text", "text": content or ""}]
        blocks, results = [], []
        for p in parts:
            kind = p.get("type") if isinstance(p, dict) else None
            if kind == "tool_use":
                names[p.get("id")] = p.get("name", "")
                blocks.append({"type": "toolCall", "id": p.get("id", ""), "name": p.get("name", ""),
                               "arguments": p.get("input") or {}})
            elif kind == "tool_result":
                results.append(_tool_result(p.get("tool_use_id", ""), names.get(p.get("tool_use_id"), ""),
                                            p.get("content")))
            else:
                blocks += _text_blocks([p])
        out += results
        if blocks:
            out.append({"role": m.get("role", "user"), "content": blocks})
    return out


def _responses(body: dict) -> list[dict]:
    out, names = [], {}
    items = body.get("input")
    if isinstance(items, str):
        return [{"role": "user", "content": _text_blocks(items)}]
    for item in items or []:
        kind = item.get("type", "message")
        if kind == "message" and item.get("role") in ("user", "assistant"):
            out.append({"role": item["role"], "content": _text_blocks(item.get("content"))})
        elif kind == "function_call":
            names[item.get("call_id")] = item.get("name", "")
            out.append({"role": "assistant", "content": [{"type": "toolCall", "id": item.get("call_id", ""),
                                                           "name": item.get("name", ""),
                                                           "arguments": _args(item.get("arguments"))}]})
        elif kind == "function_call_output":
            out.append(_tool_result(item.get("call_id", ""), names.get(item.get("call_id"), ""),
                                    item.get("output")))
    return out


def messages_of(record: dict | None) -> list[dict]:
    """The conversation of a gateway record as OpenClaw messages, the final reply included."""
    if not record:
        return []
    body = record.get("request") or {}
    convert = {"chat": _chat, "messages": _messages, "responses": _responses}.get(record.get("protocol"), _chat)
    out = convert(body)
    reply = record.get("reply")
    if reply:
        blocks = _text_blocks(reply.get("text"))
        blocks += [{"type": "toolCall", "id": f"call_final_{i}", "name": c["name"], "arguments": c["arguments"]}
                   for i, c in enumerate(reply.get("tool_calls") or [])]
        out.append({"role": "assistant", "content": blocks})
    return out


def session_lines(messages: list[dict], cwd: str = "/tmp_workspace") -> list[dict]:
    now = datetime.now(timezone.utc).isoformat(timespec="milliseconds")
    lines = [{"type": "session", "version": 3, "id": str(uuid.uuid4()), "timestamp": now, "cwd": cwd}]
    parent = None
    for m in messages:
        entry_id = uuid.uuid4().hex[:8]
        lines.append({"type": "message", "id": entry_id, "parentId": parent, "timestamp": now, "message": m})
        parent = entry_id
    return lines


def to_jsonl(lines: list[dict]) -> str:
    return "".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines)
