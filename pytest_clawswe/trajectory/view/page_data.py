"""What the viewer page shows, read from one ATIF trajectory: plain dicts with every key set.

The template runs under StrictUndefined, so it only ever reads what this module built; a field the file
lacks (older ATIF, another producer) becomes None or an empty list here, never an error in the page.
All text stays raw: Jinja's autoescape escapes it once, when the page is written.
"""
from __future__ import annotations

import json
from typing import Any

SOURCES = ("system", "user", "agent")


def _int(value: Any) -> int:
    return int(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else 0


def _float(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, list):  # ATIF 1.6+ allows content parts; show the text parts, name the others
        return "\n".join(p.get("text", f"[{p.get('type', 'part')}]") if isinstance(p, dict) else str(p)
                         for p in value)
    return json.dumps(value, indent=2, ensure_ascii=False, default=str)


def pretty(value: Any) -> str:
    """Tool arguments as people read them: JSON indented, a string (not JSON) as it came."""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            return value
    return json.dumps(value, indent=2, ensure_ascii=False, default=str)


def _call_summary(name: str, args: Any) -> str:
    """One line for a collapsed tool call: the command, path or first argument."""
    if isinstance(args, str):
        try:
            args = json.loads(args)
        except ValueError:
            return args.splitlines()[0][:160] if args else ""
    if isinstance(args, dict):
        for key in ("command", "cmd", "file_path", "path", "url", "query", "pattern"):
            if isinstance(args.get(key), str):
                return args[key].splitlines()[0][:160] if args[key] else ""
        if args:
            key, first = next(iter(args.items()))
            return f"{key}={_text(first).splitlines()[0][:140] if _text(first) else ''}"
    return ""


def tool_definitions(agent: dict) -> list[dict]:
    """OpenAI ({type, function: {...}}), Anthropic ({name, input_schema}) or bare ({name, parameters})."""
    out = []
    for tool in agent.get("tool_definitions") or []:
        if not isinstance(tool, dict):
            continue
        fn = tool.get("function") if isinstance(tool.get("function"), dict) else tool
        schema = fn.get("parameters", fn.get("input_schema", tool.get("input_schema")))
        out.append({"name": _text(fn.get("name") or tool.get("type") or "tool"),
                    "description": _text(fn.get("description")),
                    "schema": pretty(schema) if schema is not None else ""})
    return out


def _step(raw: dict, index: int, running: dict) -> dict:
    metrics = raw.get("metrics") or {}
    own = ((raw.get("extra") or {}).get("clawswe")) or {}
    gateway = ((raw.get("extra") or {}).get("gateway")) or {}  # the recorder's: failure, reason, error, cut, stop
    results = ((raw.get("observation") or {}).get("results")) or []
    by_call: dict[str, list[str]] = {}
    loose = []  # results that answer no tool call of this step (system-side output)
    call_ids = {str(c.get("tool_call_id")) for c in raw.get("tool_calls") or [] if isinstance(c, dict)}
    for r in results:
        if not isinstance(r, dict):
            continue
        content = _text(r.get("content"))
        cid = r.get("source_call_id")
        if cid is not None and str(cid) in call_ids:
            by_call.setdefault(str(cid), []).append(content)
        else:
            loose.append(content)
    calls = []
    for c in raw.get("tool_calls") or []:
        if not isinstance(c, dict):
            continue
        name = _text(c.get("function_name")) or "tool"
        outputs = by_call.get(str(c.get("tool_call_id")), [])
        calls.append({"id": _text(c.get("tool_call_id")), "name": name,
                      "summary": _call_summary(name, c.get("arguments")),
                      "arguments": pretty(c.get("arguments")), "outputs": outputs,
                      "output_chars": sum(len(o) for o in outputs)})
    prompt, completion = _int(metrics.get("prompt_tokens")), _int(metrics.get("completion_tokens"))
    cached, cost = _int(metrics.get("cached_tokens")), _float(metrics.get("cost_usd"))
    cache_write = _int(own.get("cache_write_tokens"))
    running["tokens"] += prompt + completion
    running["cost"] += cost or 0.0
    running["priced"] = running["priced"] and (cost is not None or not metrics)
    source = raw.get("source") if raw.get("source") in SOURCES else "agent"
    return {
        "index": index, "id": _text(raw.get("step_id", index)), "source": source,
        "timestamp": _text(raw.get("timestamp")), "model": _text(raw.get("model_name")),
        "message": _text(raw.get("message")), "reasoning": _text(raw.get("reasoning_content")),
        "calls": calls, "observations": loose,
        "has_metrics": bool(metrics), "prompt_tokens": prompt, "completion_tokens": completion,
        "cached_tokens": cached, "cache_write_tokens": cache_write, "cost": cost,
        "latency": _float(own.get("latency_s")), "status": _text(own.get("status")),
        "request_id": _text(own.get("request_id")),
        "problem": " · ".join(_text(gateway[k]) for k in ("failure", "reason", "error") if gateway.get(k)),
        "cut": _text(gateway.get("cut")), "stop": _text(gateway.get("stop")),
        "running_tokens": running["tokens"], "running_cost": running["cost"] if running["priced"] else None,
    }


def diff_lines(patch: str | None) -> list[dict]:
    """The patch as lines with a kind for colour: file, hunk, add, del, context."""
    out = []
    for line in (patch or "").splitlines():
        if line.startswith(("diff --git", "index ", "--- ", "+++ ", "new file", "deleted file", "similarity",
                            "rename ", "old mode", "new mode", "Binary files")):
            kind = "file"
        elif line.startswith("@@"):
            kind = "hunk"
        elif line.startswith("+"):
            kind = "add"
        elif line.startswith("-"):
            kind = "del"
        else:
            kind = "ctx"
        out.append({"kind": kind, "text": line})
    return out


def _tests(tests: Any) -> list[dict]:
    """F2P / P2P groups: each test with passed True/False, failures first."""
    groups = []
    for group in ("FAIL_TO_PASS", "PASS_TO_PASS"):
        block = (tests or {}).get(group) if isinstance(tests, dict) else None
        if not isinstance(block, dict):
            continue
        passed = [_text(t) for t in block.get("passed") or []]
        failed = [_text(t) for t in block.get("failed") or []]
        groups.append({"name": group, "passed": len(passed), "failed": len(failed),
                       "tests": [{"name": t, "ok": False} for t in failed] + [{"name": t, "ok": True} for t in passed]})
    return groups


def _criteria(criteria: Any) -> list[dict]:
    out = []
    for c in criteria or []:
        if isinstance(c, dict):
            out.append({"name": _text(c.get("name")), "score": _float(c.get("score")),
                        "weight": _float(c.get("weight")), "note": _text(c.get("note"))})
    return out


def build(trajectory: dict) -> dict:
    """The page's whole content from one ATIF trajectory."""
    if not isinstance(trajectory, dict) or not isinstance(trajectory.get("steps"), list):
        raise ValueError("not an ATIF trajectory: it has no list of steps")
    agent = trajectory.get("agent") or {}
    own = ((trajectory.get("extra") or {}).get("clawswe")) or {}
    running = {"tokens": 0, "cost": 0.0, "priced": True}
    steps = [_step(s, i, running) for i, s in enumerate(trajectory["steps"], 1) if isinstance(s, dict)]
    final = trajectory.get("final_metrics") or {}
    totals = {
        "steps": len(steps),
        "agent_steps": sum(s["source"] == "agent" for s in steps),
        "tool_calls": sum(len(s["calls"]) for s in steps),
        "prompt_tokens": sum(s["prompt_tokens"] for s in steps),
        "completion_tokens": sum(s["completion_tokens"] for s in steps),
        "cached_tokens": sum(s["cached_tokens"] for s in steps),
        "cache_write_tokens": sum(s["cache_write_tokens"] for s in steps),
        "cost": _float(final.get("total_cost_usd")) if final.get("total_cost_usd") is not None
        else running["cost"] if running["priced"] else None,
        "latency": sum(s["latency"] or 0.0 for s in steps),
    }
    peak = max((s["prompt_tokens"] + s["completion_tokens"] for s in steps), default=0)
    score = _float(own.get("score"))
    truncated = own.get("truncated")
    return {
        "title": _text(own.get("item_id") or trajectory.get("trajectory_id") or trajectory.get("session_id")
                       or "trajectory"),
        "benchmark": _text(own.get("benchmark")), "attempt": _text(own.get("attempt")),
        "harness": _text(own.get("harness") or agent.get("name")),
        "harness_version": "" if agent.get("version") == "unknown" else _text(agent.get("version")),
        "model": _text(own.get("model") or agent.get("model_name")),
        "outcome": _text(own.get("outcome")), "score": score,
        "schema_version": _text(trajectory.get("schema_version")),
        "trajectory_id": _text(trajectory.get("trajectory_id") or trajectory.get("session_id")),
        "notes": _text(trajectory.get("notes")),
        "truncated": pretty(truncated) if truncated else "",
        "system_prompts": [s["message"] for s in steps if s["source"] == "system" and s["message"]],
        "tools": tool_definitions(agent),
        "steps": steps, "totals": totals, "peak_tokens": peak,
        "patch": diff_lines(own.get("patch")), "has_patch": own.get("patch") is not None,
        "tests": _tests(own.get("tests")), "criteria": _criteria(own.get("criteria")),
    }
