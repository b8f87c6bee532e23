"""The transcript graders read, in OpenClaw's session format, built from the gateway's record of the model calls
(gateway/record/calls.py: the same record the ATIF trajectories come from), so what a grader reads is what the harness
received, streamed or not, for every harness and wire protocol (chat, responses, messages).

One JSON object per line: a `session` header, then `message` entries whose `message` has a role (`user`,
`assistant`, `toolResult`) and a list of content blocks: `text`, `thinking` (the model's reasoning), `toolCall`
(id, name, arguments), `image` (the bytes left out). A grader written against OpenClaw reads a Claude Code or Codex
run unchanged. System prompts are left out: they are the harness's, not the conversation's.

Which calls are the conversation: every request carries the conversation so far, so the longest request of the
attempt holds it; the calls that offer the same tools are its main line (a title, a summary or a sub-agent offers
other tools or none). The main line is read in time order: a request at least as long as the one before continues
the conversation, a shorter one starts again (the harness compacted its history), and that part is added after
(its opening messages already in the transcript not repeated). Each part ends with the answer the harness got to
its last request: the final answer is the last call's answer, as the harness received it.
"""
from __future__ import annotations

import json
import time
import uuid
from datetime import datetime, timezone
from pathlib import Path

from pytest_clawswe.errors import ItemError
from pytest_clawswe.trajectory.requests import arguments as tool_arguments

SESSION_PATH = "/root/.openclaw/agents/main/sessions/chat.jsonl"
SETTLE_S = 60.0  # how long to wait for the recorder's writer to have written the attempt's calls (it is niced)


class TranscriptError(ItemError):
    """The gateway's record lacks the attempt's last answer (cut, or not recorded): grading would under-score."""


# ---------------------------------------------------------------------- content blocks
def _text_blocks(content) -> list[dict]:
    if content is None:
        return []
    if isinstance(content, str):
        return [{"type": "text", "text": content}] if content else []
    blocks = []
    for part in content if isinstance(content, list) else [content]:
        if isinstance(part, str):
            blocks += [{"type": "text", "text": part}] if part else []
            continue
        if not isinstance(part, dict):
            continue
        kind = part.get("type")
        if kind in ("text", "input_text", "output_text"):
            blocks.append({"type": "text", "text": str(part.get("text") or "")})
        elif kind in ("image_url", "input_image", "image"):
            blocks.append({"type": "image"})  # the bytes stay out of the transcript
        elif kind == "thinking" and part.get("thinking"):
            blocks.append({"type": "thinking", "thinking": str(part["thinking"])})
    return blocks


def _thinking(text) -> list[dict]:
    return [{"type": "thinking", "thinking": text}] if isinstance(text, str) and text else []


def _tool_call(call_id, name, arguments) -> dict:
    return {"type": "toolCall", "id": str(call_id or ""), "name": str(name or ""), "arguments": tool_arguments(arguments)}


def _tool_result(call_id: str, name: str, content, is_error: bool = False) -> dict:
    if isinstance(content, list):
        text = "".join(str(b.get("text") or "") for b in content if isinstance(b, dict))
    elif isinstance(content, (dict, int, float, bool)):
        text = json.dumps(content, ensure_ascii=False)
    else:
        text = "" if content is None else str(content)
    return {"role": "toolResult", "toolCallId": call_id, "toolName": name,
            "content": [{"type": "text", "text": text}], "isError": bool(is_error)}


def _summary(item: dict) -> str:
    """A Responses reasoning item's text: its summary, else its content (encrypted reasoning has neither)."""
    parts = item.get("summary") or item.get("content") or []
    return "".join(str(p.get("text") or "") for p in parts if isinstance(p, dict)) if isinstance(parts, list) else ""


# ---------------------------------------------------------------------- one request's conversation per protocol
def _chat(body: dict) -> list[dict]:
    out, names = [], {}
    for m in body.get("messages") or []:
        if not isinstance(m, dict):
            continue
        role = m.get("role")
        if role == "user":
            out.append({"role": "user", "content": _text_blocks(m.get("content"))})
        elif role == "assistant":
            blocks = _thinking(m.get("reasoning_content") or m.get("reasoning")) + _text_blocks(m.get("content"))
            for c in m.get("tool_calls") or []:
                fn = (c or {}).get("function") or {}
                names[c.get("id")] = fn.get("name", "")
                blocks.append(_tool_call(c.get("id"), fn.get("name"), fn.get("arguments")))
            out.append({"role": "assistant", "content": blocks})
        elif role == "tool":
            out.append(_tool_result(m.get("tool_call_id", ""), names.get(m.get("tool_call_id"), ""),
                                    m.get("content")))
    return out


def _messages(body: dict) -> list[dict]:
    out, names = [], {}
    for m in body.get("messages") or []:
        if not isinstance(m, dict) or m.get("role") not in ("user", "assistant"):
            continue  # a system message among the messages (Claude Code's environment) is the harness's
        content = m.get("content")
        parts = content if isinstance(content, list) else [{"type": "text", "text": content or ""}]
        blocks, results = [], []
        for p in parts:
            kind = p.get("type") if isinstance(p, dict) else None
            if kind == "tool_use":
                names[p.get("id")] = p.get("name", "")
                blocks.append(_tool_call(p.get("id"), p.get("name"), p.get("input") or {}))
            elif kind == "tool_result":
                results.append(_tool_result(p.get("tool_use_id", ""), names.get(p.get("tool_use_id"), ""),
                                            p.get("content"), bool(p.get("is_error"))))
            else:
                blocks += _text_blocks([p])
        out += results
        if blocks:
            out.append({"role": m.get("role", "user"), "content": blocks})
    return out


def _responses(body: dict) -> list[dict]:
    """Consecutive output items (reasoning, the assistant's message, its function calls) are one assistant turn."""
    out: list[dict] = []
    names: dict = {}
    items = body.get("input")
    if isinstance(items, str):
        return [{"role": "user", "content": _text_blocks(items)}]

    def turn() -> list:
        if not out or out[-1]["role"] != "assistant":
            out.append({"role": "assistant", "content": []})
        return out[-1]["content"]

    for item in items or []:
        if not isinstance(item, dict):
            continue
        kind = item.get("type", "message")
        if kind == "message" and item.get("role") == "user":
            out.append({"role": "user", "content": _text_blocks(item.get("content"))})
        elif kind == "message" and item.get("role") == "assistant":
            turn().extend(_text_blocks(item.get("content")))
        elif kind == "reasoning":
            turn().extend(_thinking(_summary(item)))
        elif kind in ("function_call", "custom_tool_call"):
            names[item.get("call_id")] = item.get("name", "")
            turn().append(_tool_call(item.get("call_id"), item.get("name"), item.get("arguments", item.get("input"))))
        elif kind in ("function_call_output", "custom_tool_call_output"):
            out.append(_tool_result(item.get("call_id", ""), names.get(item.get("call_id"), ""), item.get("output")))
    return out


_CONVERT = {"chat": _chat, "messages": _messages, "responses": _responses}


def _answer(turn) -> dict | None:
    """The assistant message of a recorded answer (reassemble.py's turn), or None when it said nothing."""
    if not isinstance(turn, dict):
        return None
    blocks = _thinking(turn.get("reasoning")) + _text_blocks(turn.get("text") or "")
    blocks += [_tool_call(c.get("id"), c.get("name"), c.get("arguments"))
               for c in turn.get("tool_calls") or [] if isinstance(c, dict)]
    return {"role": "assistant", "content": blocks} if blocks else None


# ---------------------------------------------------------------------- which calls are the conversation
def _items(call: dict) -> int:
    body = call.get("request")
    items = body.get("input" if call.get("protocol") == "responses" else "messages") if isinstance(body, dict) else None
    return len(items) if isinstance(items, list) else 1


def _key(message: dict | None) -> str:
    return json.dumps(message, sort_keys=True)


def _answered(call: dict) -> bool:
    return int(call.get("status") or 0) < 400 and isinstance(call.get("response"), dict)


def _main_line(calls: list[dict]) -> list[tuple[int, dict, list[dict]]]:
    """(thread, call, its conversation) of the main line's calls, in time order. A thread is the calls whose
    conversation opens with the same message (the task; a sub-agent's opens with its own); the agent's calls offer
    tools (a title or summary request offers none). The main line is the first call's thread, then a thread that
    starts once it has no call left (the harness compacted its history): a sub-agent starts while it goes on."""
    with_tools = [c for c in calls if (c["request"].get("tools") or None)] or calls
    threads: dict[str, list[tuple[dict, list[dict]]]] = {}
    for call in with_tools:
        messages = _CONVERT.get(call.get("protocol"), _chat)(call["request"])
        threads.setdefault(_key(messages[0] if messages else None), []).append((call, messages))
    position = {id(call): n for n, call in enumerate(calls)}
    spans = sorted((position[id(t[0][0])], position[id(t[-1][0])], key) for key, t in threads.items())
    chosen = [spans[0]]
    for span in spans[1:]:
        if span[0] > chosen[-1][1]:
            chosen.append(span)
    return [(n, call, messages) for n, (_, _, key) in enumerate(chosen) for call, messages in threads[key]]


def from_calls(calls: list[dict]) -> tuple[list[dict], list[str]]:
    """The conversation of one attempt as OpenClaw messages, from its calls in time order (recorded call lines; a
    ledger line without its call stands for a call that was not recorded), and what the record could not give, in
    sentences. TranscriptError when the last answer of the conversation is not in the record."""
    full = [c for c in calls if isinstance(c.get("request"), dict)]
    if not full:
        if calls:
            raise TranscriptError("the gateway recorded none of the agent's model calls with its request, so its "
                                  "transcript cannot be built; see CLAWSWE_RECORD_MAX_MB and --resume the task")
        return [], []
    transcript: list[dict] = []
    part: list[dict] = []
    previous, last = (0, 0), full[0]
    for thread, call, messages in _main_line(full):
        now = (thread, _items(call))
        if now[0] != previous[0] or now[1] < previous[1]:  # another thread, or shorter: the harness started over
            transcript = _joined(transcript, part)
        previous, last = now, call
        answer = _answer(call.get("response")) if _answered(call) else None
        part = messages + ([answer] if answer else [])
    transcript = _joined(transcript, part)
    return transcript, _after_the_record(calls, last, transcript)


def _joined(transcript: list[dict], part: list[dict]) -> list[dict]:
    """`part` after `transcript`, without the messages already there (the task, repeated after a compaction)."""
    seen = {_key(m) for m in transcript}
    return transcript + [m for m in part if _key(m) not in seen]


def _after_the_record(calls: list[dict], last: dict, transcript: list[dict]) -> list[str]:
    """Calls after the last recorded main-line request that continue it (as large or larger) but were recorded
    without their request, or not at all: their answers are appended when kept; the last one lost is an error."""
    later = calls[next(n for n, c in enumerate(calls) if c is last) + 1:]
    size = int(last.get("request_bytes") or 0)
    lost = [c for c in later if not isinstance(c.get("request"), dict) and int(c.get("request_bytes") or 0) >= size]
    if not lost:
        return []
    for call in lost:
        answer = _answer(call.get("response")) if _answered(call) else None
        if answer is not None:
            transcript.append(answer)
    last_lost = lost[-1]
    if int(last_lost.get("status") or 0) < 400 and not isinstance(last_lost.get("response"), dict):
        raise TranscriptError("the gateway's record lacks the agent's last answer (cut by CLAWSWE_RECORD_MAX_MB or "
                              "not recorded), so its transcript would lack the final answer; raise "
                              "CLAWSWE_RECORD_MAX_MB and --resume the task")
    return [f"the gateway recorded {len(lost)} of the agent's last model call(s) without their request "
            "(CLAWSWE_RECORD_MAX_MB): the transcript has their answers but not the tool results sent between them"]


# ---------------------------------------------------------------------- the record of one attempt
def recorded_calls(state_dir: Path, item_id: str, records: list[dict], timeout: float = SETTLE_S) -> list[dict]:
    """The attempt's calls, one per ledger line in `records` (the agent token's), each the recorded call once
    the recorder's writer has written it (it writes a moment after the ledger), else the ledger line itself."""
    from pytest_clawswe.gateway.record.calls import read_calls

    wanted = [r for r in records if r.get("request_id")]
    deadline = time.monotonic() + timeout
    while True:
        by_id = {c.get("request_id"): c for c in read_calls(state_dir, item_id)}
        if all(r["request_id"] in by_id for r in wanted) or time.monotonic() >= deadline:
            break
        time.sleep(0.05)
    return [by_id.get(r.get("request_id"), r) for r in records]


# ---------------------------------------------------------------------- the session file
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
