"""An ATIF trajectory (Agent Trajectory Interchange Format, Harbor's RFC 0001; SCHEMA_VERSION below) from the
gateway's record of one attempt's model calls (pytest_clawswe/gateway/record/calls.py).

Steps: the system prompt (source "system", when there is one), the task (source "user": the first user message),
then one "agent" step per model request the gateway counted, in time order: the answer's text, reasoning and
tool calls, the tool results the harness sent back for those calls (found in a later request), and the
request's tokens, cost and latency from its ledger line. So the agent steps are exactly the ledger's lines and
their tokens add up to the ledger's (a failed request is a step too, with its status and no message).
"""
from __future__ import annotations

import json
from datetime import datetime

from pytest_clawswe.trajectory import requests as rq
from pytest_clawswe.usage import Usage

SCHEMA_VERSION = "ATIF-v1.8"  # the newest the public spec defines (harbor 0.26.0's models)
AGENT_NAME = "clawswe-gateway"  # the trajectory is the gateway's record, whatever harness made the calls
USAGE_FIELDS = ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens")


def _usage(call: dict) -> Usage:
    return Usage(1, *(int(call.get(f) or 0) for f in USAGE_FIELDS))


def _timestamp(value) -> str | None:
    try:
        return datetime.fromisoformat(str(value).replace("Z", "+00:00")).isoformat()
    except ValueError:
        return None


def _norm(call_id: str) -> str:
    return "".join(ch for ch in call_id if ch.isalnum())


def _key(name: str, args: dict) -> str:
    return name + "\0" + json.dumps(args, sort_keys=True, ensure_ascii=False)


class Observations:
    """What the harness sent back for each tool call, from the requests after it: by the call's id; by the id
    without punctuation (OpenClaw rewrites `call_abc` as `callabc`); else by the call itself (name and
    arguments) as the harness wrote it back into its conversation under an id of its own."""

    def __init__(self, calls: list[dict]) -> None:
        self.by_id: dict[str, str] = {}
        self.by_norm: dict[str, str] = {}
        self.id_of_call: dict[str, str] = {}
        for call in calls:
            body = call.get("request")
            if not isinstance(body, dict):
                continue
            protocol = call.get("protocol") or "chat"
            for call_id, content in rq.tool_results(protocol, body).items():
                self.by_id.setdefault(call_id, content)  # the first request that has it: later ones repeat it
                self.by_norm.setdefault(_norm(call_id), content)
            for call_id, name, args in rq.assistant_calls(protocol, body):
                self.id_of_call.setdefault(_key(name, args), call_id)

    def of(self, call_id: str, name: str, args: dict) -> str | None:
        if call_id in self.by_id:
            return self.by_id[call_id]
        if _norm(call_id) and _norm(call_id) in self.by_norm:
            return self.by_norm[_norm(call_id)]
        written = self.id_of_call.get(_key(name, args))
        return self.by_id.get(written) if written is not None else None


def _tool_definitions(calls: list[dict]) -> list[dict]:
    seen: dict[str, dict] = {}
    for call in calls:
        body = call.get("request")
        if isinstance(body, dict):
            for tool in rq.tool_definitions(call.get("protocol") or "chat", body):
                seen.setdefault(tool["function"]["name"], tool)
    return list(seen.values())


def _agent_step(step_id: int, call: dict, results: Observations, model: str, cost: float | None) -> dict:
    turn = call.get("response") if isinstance(call.get("response"), dict) else {}
    usage = _usage(call)
    step: dict = {"step_id": step_id, "source": "agent", "message": str(turn.get("text") or "")}
    timestamp = _timestamp(call.get("ts"))
    if timestamp:
        step["timestamp"] = timestamp
    if turn.get("model") and turn.get("model") != model:
        step["model_name"] = str(turn["model"])
    if turn.get("reasoning"):
        step["reasoning_content"] = str(turn["reasoning"])
    calls_made, observed = [], []
    for n, made in enumerate(turn.get("tool_calls") or []):
        call_id = str(made.get("id") or f"call-{step_id}-{n}")  # ATIF needs an id; a provider may omit it
        name, args = str(made.get("name") or ""), rq.arguments(made.get("arguments"))
        calls_made.append({"tool_call_id": call_id, "function_name": name, "arguments": args})
        content = results.of(call_id, name, args)
        if content is not None:
            observed.append({"source_call_id": call_id, "content": content})
    if calls_made:
        step["tool_calls"] = calls_made
    if observed:
        step["observation"] = {"results": observed}
    metrics: dict = {"prompt_tokens": usage.input_tokens + usage.cache_read_tokens + usage.cache_write_tokens,
                     "completion_tokens": usage.output_tokens, "cached_tokens": usage.cache_read_tokens}
    if cost is not None:
        metrics["cost_usd"] = cost
    step["metrics"] = metrics
    step["llm_call_count"] = 1
    extra = {"latency_s": call.get("latency_s"), "cache_write_tokens": usage.cache_write_tokens,
             "request_id": call.get("request_id"), "status": call.get("status")}
    more = {k: call[k] for k in ("protocol", "stream", "failure", "reason", "error", "cut") if call.get(k)}
    if turn.get("stop"):
        more["stop"] = turn["stop"]
    step["extra"] = {"clawswe": extra, **({"gateway": more} if more else {})}
    return step


def build(calls: list[dict], clawswe: dict, *, harness: str, model: str, prices=None,
          harness_version: str = "") -> dict:
    """The ATIF document of one attempt. `clawswe` is the root extra.clawswe (outcome, patch, tests...);
    `prices` a PriceBook (None: no cost)."""
    first = next((c for c in calls if isinstance(c.get("request"), dict)), None)
    steps: list[dict] = []
    if first is not None:
        protocol, body = first.get("protocol") or "chat", first["request"]
        system = rq.system_prompt(protocol, body)
        if system:
            steps.append({"step_id": 1, "source": "system", "message": system})
        task = rq.first_user_message(protocol, body)
        if task:
            steps.append({"step_id": len(steps) + 1, "source": "user", "message": task})
    results = Observations(calls)
    total_cost: float | None = 0.0
    for call in calls:
        cost = prices.cost_usd(_usage(call), model) if prices is not None else None
        total_cost = None if cost is None or total_cost is None else total_cost + cost
        steps.append(_agent_step(len(steps) + 1, call, results, model, cost))
    if not steps:  # ATIF wants one step at least: an attempt that never called the model
        steps.append({"step_id": 1, "source": "system", "message": "(the agent made no model request)"})
    agent_steps = [s for s in steps if s["source"] == "agent"]
    totals = Usage()
    for call in calls:
        totals += _usage(call)
    final = {"total_prompt_tokens": totals.input_tokens + totals.cache_read_tokens + totals.cache_write_tokens,
             "total_completion_tokens": totals.output_tokens, "total_cached_tokens": totals.cache_read_tokens,
             "total_steps": len(steps),
             "extra": {"clawswe": {"model_requests": len(agent_steps), "input_tokens": totals.input_tokens,
                                   "cache_write_tokens": totals.cache_write_tokens}}}
    if total_cost is not None and prices is not None:
        final["total_cost_usd"] = total_cost
    agent: dict = {"name": AGENT_NAME, "version": harness_version or "unknown", "model_name": model,
                   "extra": {"harness": harness}}
    tools = _tool_definitions(calls)
    if tools:
        agent["tool_definitions"] = tools
    item, attempt = clawswe.get("item_id"), clawswe.get("attempt")
    return {"schema_version": SCHEMA_VERSION, "session_id": f"{item}#{attempt}",
            "trajectory_id": f"{clawswe.get('benchmark')}/{item}/attempt-{attempt}", "agent": agent, "steps": steps,
            "notes": ("Built by pytest-clawswe from its model gateway's record: one agent step per model request "
                      "the gateway counted, tokens from its ledger; the first steps are the system prompt and the "
                      "task when the first request had them."),
            "final_metrics": final, "extra": {"clawswe": clawswe}}
