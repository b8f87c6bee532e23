"""The gateway's own record of each conversation, from which WildClawBench transcripts are built.

Every model request carries the whole conversation so far, so keeping the longest request of an attempt
(plus the reply to it) keeps the conversation; side requests (titles, summaries) are shorter and lose.
Written only when the run asked for it by creating DIR/conversations/; the agent never sees this file,
so it cannot rewrite what it is graded on.
"""
from __future__ import annotations

import fcntl
import json
import os
import re
from pathlib import Path

DIR_NAME = "conversations"


def conversation_path(state_dir: str | Path, instance_id: str) -> Path:
    safe = re.sub(r"[^A-Za-z0-9._-]", "_", instance_id) or "_"
    return Path(state_dir) / DIR_NAME / f"{safe}.json"


def _size(protocol: str, body: dict) -> int:
    items = body.get("input") if protocol == "responses" else body.get("messages")
    return len(items) if isinstance(items, list) else 1


def _reply_from_response(protocol: str, response) -> dict | None:
    """The assistant turn of a plain-JSON answer (a streamed one is not kept: see docs/fidelity.md)."""
    raw = getattr(response, "body", None)
    if not isinstance(raw, (bytes, bytearray)) or getattr(response, "status", 200) >= 400:
        return None
    try:
        obj = json.loads(raw)
    except ValueError:
        return None
    text, calls = "", []
    if protocol == "chat":
        message = ((obj.get("choices") or [{}])[0] or {}).get("message") or {}
        text = message.get("content") or ""
        calls = [{"name": c["function"]["name"], "arguments": _args(c["function"].get("arguments"))}
                 for c in message.get("tool_calls") or [] if c.get("function")]
    elif protocol == "messages":
        for block in obj.get("content") or []:
            if block.get("type") == "text":
                text += block.get("text", "")
            elif block.get("type") == "tool_use":
                calls.append({"name": block.get("name", ""), "arguments": block.get("input") or {}})
    elif protocol == "responses":
        for item in obj.get("output") or []:
            if item.get("type") == "message":
                text += "".join(c.get("text", "") for c in item.get("content") or [] if isinstance(c, dict))
            elif item.get("type") == "function_call":
                calls.append({"name": item.get("name", ""), "arguments": _args(item.get("arguments"))})
    return {"text": text if isinstance(text, str) else "", "tool_calls": calls}


def _args(raw) -> dict:
    try:
        value = json.loads(raw) if isinstance(raw, str) else raw
    except ValueError:
        return {"input": raw}
    return value if isinstance(value, dict) else {"input": value}


def remember(state_dir, reg, protocol, body: dict, response=None) -> None:
    """Keep this request if it is the attempt's longest so far (called for every model request)."""
    if not os.path.isdir(os.path.join(state_dir, DIR_NAME)):  # one stat: this runs for every model request
        return
    path = conversation_path(state_dir, reg.instance_id)
    # several gateway worker processes may serve one attempt: keep-the-longest is read and written under a lock
    with open(path.with_suffix(".lock"), "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        _keep_if_longest(path, reg, protocol, body, response)


def _keep_if_longest(path: Path, reg, protocol, body: dict, response) -> None:
    try:
        old = json.loads(path.read_text())
    except (OSError, ValueError):
        old = None
    if old and old.get("attempt") == reg.attempt and old.get("size", 0) > _size(protocol.name, body):
        return
    reply = _reply_from_response(protocol.name, response)
    if reg.scripted is not None:  # stateless: asking again gives the reply the harness got
        answer = reg.scripted.reply(protocol.view(body))
        reply = {"text": answer.text, "tool_calls": [{"name": c.name, "arguments": c.arguments}
                                                      for c in answer.tool_calls]}
    record = {"instance_id": reg.instance_id, "attempt": reg.attempt, "protocol": protocol.name,
              "size": _size(protocol.name, body), "request": body, "reply": reply}
    tmp = path.with_suffix(f".{os.getpid()}.tmp")
    tmp.write_text(json.dumps(record))
    os.replace(tmp, path)


def load(state_dir, instance_id: str) -> dict | None:
    try:
        return json.loads(conversation_path(state_dir, instance_id).read_text())
    except (OSError, ValueError):
        return None
