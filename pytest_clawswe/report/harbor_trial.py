"""One item attempt as a Harbor trial (report/harbor.py writes the job around it): its result.json (a TrialResult),
config.json (a TrialConfig) and verifier files, from the item's result, its benchmark's word on it (rewards, tests,
criteria) and the gateway's ledger. The field names are Harbor's (harbor 0.26.0's pydantic models); what we fill in
and what we cannot is in docs/trajectories.md, "Harbor jobs"."""
from __future__ import annotations

import hashlib
import uuid
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path

NAMESPACE = uuid.UUID("6b1f3c2e-5a4d-4e0b-9c7a-0d2f8e1a6c35")  # our trial and job ids: uuid5 of their names
PHASES = ("environment_setup", "agent_setup", "agent_execution", "verifier")
# a finish reason that is not a plain stop, as the exception Harbor records for it; Harbor's own names where
# the meaning is the same (graded, the reward valid), ours otherwise (a name Harbor does not know keeps the reward
# valid: these items were graded and count in our numbers)
FINISH_EXCEPTIONS = {"timeout": "AgentTimeoutError", "error": "NonZeroAgentExitCodeError",
                     "disk_limit": "DiskLimitExceeded", "cost_limit": "CostLimitReached",
                     "provider_error": "ProviderError"}
FINISH_MESSAGES = {"timeout": "the agent reached its budget and was stopped; what it left was graded",
                   "error": "the harness ended in an error; what it left was graded",
                   "disk_limit": "the agent's container passed the disk limit; what it left was graded",
                   "cost_limit": "the item reached its cost ceiling; what the agent left was graded",
                   "provider_error": "the provider failed the agent's calls; what it left was graded"}
RETRIED = ("this attempt ended in an error and the item was run again from scratch (an infrastructure retry, or "
           "--resume); its own error sentence is not kept")


def stable_id(*names: str) -> str:
    return str(uuid.uuid5(NAMESPACE, "\0".join(names)))


def iso(moment: datetime | None) -> str | None:
    return None if moment is None else moment.astimezone(timezone.utc).isoformat(timespec="milliseconds")


def parse_time(value) -> datetime | None:
    """An ISO 8601 time with its offset (ours: the gateway's ledger, result.json, run.json), or None."""
    try:
        moment = datetime.fromisoformat(str(value).replace("Z", "+00:00"))
    except ValueError:
        return None
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=timezone.utc)


@dataclass
class Timing:
    started_at: datetime | None = None
    finished_at: datetime | None = None
    phases: dict[str, tuple[datetime, datetime]] = field(default_factory=dict)

    def to_json(self) -> dict:
        out: dict = {"started_at": iso(self.started_at), "finished_at": iso(self.finished_at)}
        for phase in PHASES:
            span = self.phases.get(phase)
            out[phase] = None if span is None else {"started_at": iso(span[0]), "finished_at": iso(span[1])}
        return out


def item_timing(result: dict, timing_phases) -> Timing | None:
    """The item's phases laid end to end from its start (result "started_at") in the order its runner takes them:
    each starts when the one before it ended (what the runner did between two timed phases is not counted).
    None without a recorded start (a run written before it was recorded)."""
    start = parse_time(result.get("started_at"))
    if start is None:
        return None
    timings = result.get("timings") if isinstance(result.get("timings"), dict) else {}
    timing, cursor = Timing(start), start
    for key, phase in timing_phases:
        seconds = timings.get(key)
        if not isinstance(seconds, (int, float)) or isinstance(seconds, bool):
            continue
        end = cursor + timedelta(seconds=float(seconds))
        if phase is not None:
            begun = timing.phases.get(phase, (cursor, end))[0]
            timing.phases[phase] = (begun, end)
        cursor = end
    total = timings.get("total")
    timing.finished_at = start + timedelta(seconds=float(total)) if isinstance(total, (int, float)) else cursor
    return timing


def ledger_timing(records: list[dict]) -> Timing | None:
    """An attempt known only from the gateway's ledger: the agent worked from its first request (the first
    answer's end less its latency) to its last answer."""
    spans = []
    for record in records:
        end = parse_time(record.get("ts"))
        if end is not None:
            spans.append((end - timedelta(seconds=float(record.get("latency_s") or 0)), end))
    if not spans:
        return None
    start, end = min(s for s, _ in spans), max(e for _, e in spans)
    return Timing(start, end, {"agent_execution": (start, end)})


def exception_info(result: dict, last: bool, when: datetime | None) -> dict | None:
    """Harbor's ExceptionInfo for how the attempt ended: an earlier attempt (it was retried), an error, or a
    finish reason other than a plain stop; None for a plain end."""
    if not last:
        kind, message = "InfraError", RETRIED
    elif result.get("outcome") == "error":
        kind = str(result.get("error_type") or "ClawsweError")
        message = str(result.get("error") or "the item ended in an error (no sentence was recorded)")
        if result.get("error_phase"):  # ExceptionInfo has no field for it: the message ends with it, as error_line
            message += f" (in phase {result['error_phase']})"
    elif result.get("finish_reason") in FINISH_EXCEPTIONS:
        reason = result["finish_reason"]
        kind, message = FINISH_EXCEPTIONS[reason], str(result.get("error") or FINISH_MESSAGES[reason])
    else:
        return None
    return {"exception_type": kind, "exception_message": message, "exception_traceback": "",
            "occurred_at": iso(when or datetime(1970, 1, 1, tzinfo=timezone.utc))}


def agent_context(doc: dict | None, result: dict, last: bool) -> dict | None:
    """Tokens and cost of the attempt: exactly its trajectory's totals (the gateway's ledger), so the trial and
    its trajectory agree; Harbor's n_input_tokens include the cached ones, as our ATIF prompt tokens do."""
    if doc is None:
        return None
    final = doc.get("final_metrics") or {}
    metadata = {"outcome": result.get("outcome") if last else "error",
                "finish_reason": result.get("finish_reason") if last else "error",
                "model_requests": (final.get("extra") or {}).get("clawswe", {}).get("model_requests")}
    return {"n_input_tokens": final.get("total_prompt_tokens"), "n_cache_tokens": final.get("total_cached_tokens"),
            "n_output_tokens": final.get("total_completion_tokens"), "cost_usd": final.get("total_cost_usd"),
            "metadata": {"clawswe": metadata}}


def model_info(model: str) -> dict | None:
    """Harbor's ModelInfo: the provider before the first "/" (as its viewer splits a model name)."""
    if not model:
        return None
    provider, _, name = model.partition("/")
    return {"name": name, "provider": provider} if name else {"name": model, "provider": None}


def task_checksum(folder: Path, benchmark: str, item_id: str) -> str:
    """What identifies the task as it was given: the prompt the item sent (prompt.txt, both benchmarks' run
    folders have it), else its benchmark and id."""
    prompt = Path(folder) / "prompt.txt"
    data = prompt.read_bytes() if prompt.is_file() else f"{benchmark}\0{item_id}".encode()
    return hashlib.sha256(data).hexdigest()


def ctrf(tests: dict, tool: str, span: tuple[datetime, datetime] | None) -> dict:
    """The evaluator's FAIL_TO_PASS / PASS_TO_PASS results as a Common Test Report Format document (what Harbor's
    viewer shows as the verifier's tests); each test's suite says which list it is in."""
    cases = [{"name": name, "status": status, "duration": 0, "suite": kind}
             for kind in ("FAIL_TO_PASS", "PASS_TO_PASS")
             for status in ("passed", "failed")
             for name in (tests.get(kind) or {}).get(status) or []]
    start, stop = (int(span[0].timestamp() * 1000), int(span[1].timestamp() * 1000)) if span else (0, 0)
    passed = sum(1 for c in cases if c["status"] == "passed")
    return {"reportFormat": "CTRF",
            "results": {"tool": {"name": tool},
                        "summary": {"tests": len(cases), "passed": passed, "failed": len(cases) - passed,
                                    "skipped": 0, "pending": 0, "other": 0, "start": start, "stop": stop},
                        "tests": cases}}


def reward_details(score: float, criteria: list[dict]) -> dict:
    """The grader's criteria in the shape Harbor's viewer draws as a reward's details (its rewardkit's
    reward-details.json): one reward, its score, and each criterion's value, weight and note."""
    rows = []
    for criterion in criteria:
        row = {"name": criterion["name"], "value": criterion["score"], "weight": criterion.get("weight", 1.0)}
        if criterion.get("note"):
            row["reasoning"] = criterion["note"]
        rows.append(row)
    return {"reward": {"kind": "grade", "score": score, "criteria": rows}}


def trial_lock(item_id: str, source: str, checksum: str, agent: dict, budget_factor) -> dict:
    """Harbor's TrialLock (lock.json: the trial's resolved inputs, its viewer's Lock tab): the task as given (the
    checksum of its prompt), the agent as configured, the environment; a WildClawBench budget factor is Harbor's
    agent timeout multiplier."""
    lock = {"schema_version": 2, "task": {"name": item_id, "type": "local", "digest": f"sha256:{checksum}",
                                          "source": source, "path": item_id},
            "agent": agent, "environment": {"type": "docker"}, "verifier": {}}
    if isinstance(budget_factor, (int, float)) and not isinstance(budget_factor, bool) and budget_factor != 1:
        lock["agent_timeout_multiplier"] = float(budget_factor)
    return lock


def trial_log(timing: Timing, exception: dict | None, rewards: dict | None) -> str:
    """The trial's log (trial.log, its viewer's Log tab), from what the run recorded: each phase's start and end in
    the order they ran, then how the attempt ended."""
    events = []
    for phase, (begun, ended) in timing.phases.items():
        events += [(begun, 1, f"{phase} started"), (ended, 0, f"{phase} ended")]  # an end before a start at once
    lines = [f"{iso(moment)} {text}" for moment, _, text in sorted(events, key=lambda e: (e[0], e[1]))]
    end = iso(timing.finished_at) or ""
    if exception is not None:
        lines.append(f"{exception['occurred_at']} {exception['exception_type']}: {exception['exception_message']}")
    if rewards is not None:
        lines.append(f"{end} rewards: " + ", ".join(f"{k} {v:g}" if isinstance(v, (int, float)) else f"{k} {v}"
                                                    for k, v in rewards.items()))
    return "\n".join(lines) + "\n" if lines else "(no phase of this attempt was recorded)\n"
