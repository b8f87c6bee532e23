"""A WildClawBench run's files: per task result.json, score.json, usage.json; per run results.csv and
summary.json, always rebuilt from the task folders (so a resumed run never counts a task twice).

The benchmark number is the released one: the mean overall_score over tasks, a task without a score
(an error) counting 0. Pass/fail (overall_score >= --pass-score) is ours: upstream has no threshold.
"""
from __future__ import annotations

import csv
import io
import json
from dataclasses import dataclass, field
from pathlib import Path

from pytest_clawswe.files import write_atomic
from pytest_clawswe.run.item.result import ERROR, ItemResult

PASSED, FAILED = "passed", "failed"  # ERROR is every benchmark's: not final, a resume runs it again
RESULT = "result.json"
TASKS_DIR = "tasks"
DEFAULT_PASS_SCORE = 0.5


@dataclass
class TaskResult(ItemResult):
    task_id: str
    name: str = ""
    category: str = ""
    modality: str = ""
    judge_model: str = ""
    overall_score: float | None = None
    scores: dict = field(default_factory=dict)  # everything grade() returned
    pass_score: float = DEFAULT_PASS_SCORE
    timeout_seconds: float = 0.0  # the task's own
    budget_s: float | None = None  # the agent's budget: timeout_seconds x --budget-factor
    usage: dict = field(default_factory=dict)  # the harness's model calls through the gateway
    tool_usage: dict = field(default_factory=dict)  # model calls the agent made itself (OPENROUTER_* vars)
    judge_usage: dict = field(default_factory=dict)  # the grader's judge calls
    judge_cost_usd: float | None = None
    judge_provider_cost_usd: float | None = None  # what the judge's provider itself billed (OpenRouter's usage.cost)
    warmup_moved: list = field(default_factory=list)
    warnings: list = field(default_factory=list)  # what the released runner logs and goes on (a missing skill)

    @classmethod
    def from_json(cls, data: dict) -> "TaskResult":
        known = {k: v for k, v in data.items() if k in cls.__dataclass_fields__}
        return cls(**known)


def task_dir(run_dir: Path, task_id: str) -> Path:
    return Path(run_dir) / TASKS_DIR / task_id


def score_json(result: TaskResult) -> dict:
    """score.json as the released runner writes it: what grade() returned (overall_score included)."""
    return dict(result.scores)


def task_score(scores: dict) -> float | None:
    """The task's score as the released summary takes it: `overall_score`, else the mean of the numeric
    values grade() returned (bools count, as in Python); None when there is no number at all."""
    numeric = {k: float(v) for k, v in scores.items() if isinstance(v, (int, float))}
    if not numeric:
        return None
    score = numeric.get("overall_score", sum(numeric.values()) / len(numeric))
    return max(0.0, min(1.0, score))


def usage_json(result: TaskResult) -> dict:
    """usage.json: the released fields (the agent's tokens, cost, request_count, elapsed_time), then ours:
    model, harness, the agent's own model calls and the judge's, kept apart."""
    u = result.usage or {}
    agent_s = result.timings.get("agent")
    return {
        "input_tokens": u.get("input_tokens", 0), "output_tokens": u.get("output_tokens", 0),
        "cache_read_tokens": u.get("cache_read_tokens", 0), "cache_write_tokens": u.get("cache_write_tokens", 0),
        "total_tokens": sum(u.get(k, 0) for k in ("input_tokens", "output_tokens", "cache_read_tokens",
                                                  "cache_write_tokens")),
        "cost_usd": result.cost_usd, "request_count": u.get("requests", 0),
        "elapsed_time": None if agent_s is None else round(agent_s, 2),
        "model": result.model, "harness": result.harness,
        "tool_calls_usage": result.tool_usage,
        "judge": {"model": result.judge_model, **(result.judge_usage or {}), "cost_usd": result.judge_cost_usd,
                  "provider_cost_usd": result.judge_provider_cost_usd},
    }


def write_task_files(folder: Path, result: TaskResult) -> None:
    write_atomic(folder / RESULT, json.dumps(result.to_json(), indent=2) + "\n")
    if result.outcome != ERROR:
        write_atomic(folder / "score.json", json.dumps(score_json(result), indent=2, default=str) + "\n")
    write_atomic(folder / "usage.json", json.dumps(usage_json(result), indent=2) + "\n")


def load_results(run_dir: str | Path) -> list[TaskResult]:
    out = []
    for meta in sorted(Path(run_dir, TASKS_DIR).glob(f"*/{RESULT}")):
        if meta.parent.name.startswith("."):
            continue
        out.append(TaskResult.from_json(json.loads(meta.read_text())))
    return out


def ended_tasks(run_dir: str | Path) -> list[tuple[str, Path, dict]]:
    """(task id, folder, result.json) of every ended task of a run (a task that never ended has no result)."""
    items = []
    for folder in sorted(p for p in (Path(run_dir) / TASKS_DIR).glob("*") if p.is_dir() and not p.name.startswith(".")):
        try:
            result = json.loads((folder / RESULT).read_text())
        except (OSError, ValueError):
            continue
        items.append((str(result.get("task_id") or folder.name), folder, result))
    return items


def _mean(values) -> float:
    values = list(values)
    return round(sum(values) / len(values), 4) if values else 0.0


def summarise(results: list[TaskResult]) -> dict:
    def block(rs: list[TaskResult]) -> dict:
        return {"tasks": len(rs), "mean_score": _mean(r.overall_score or 0.0 for r in rs),  # missing = 0
                "passed": sum(r.outcome == PASSED for r in rs), "errors": sum(r.outcome == ERROR for r in rs)}

    first = results[0] if results else TaskResult("")
    summary = {
        "benchmark": "wildclaw", "run_id": first.run_id, "harness": first.harness, "model": first.model,
        "judge_model": first.judge_model, "pass_score": first.pass_score, **block(results),
        "mean_agent_s": _mean(r.timings.get("agent", 0) for r in results),
        "mean_grade_s": _mean(r.timings.get("grade", 0) for r in results),
        "cost_usd": round(sum(r.cost_usd or 0 for r in results), 6),
        "judge_cost_usd": round(sum(r.judge_cost_usd or 0 for r in results), 6),
        "judge_tokens": sum((r.judge_usage or {}).get("input_tokens", 0) + (r.judge_usage or {}).get("output_tokens", 0)
                            for r in results),
        "by_category": {}, "by_modality": {},
    }
    for key, attr in (("by_category", "category"), ("by_modality", "modality")):
        groups: dict[str, list[TaskResult]] = {}
        for r in results:
            groups.setdefault(getattr(r, attr) or "unknown", []).append(r)
        summary[key] = {k: block(v) for k, v in sorted(groups.items())}
    return summary


CSV_FIELDS = ("task_id", "category", "modality", "outcome", "overall_score", "finish_reason", "agent_s", "grade_s",
              "input_tokens", "output_tokens", "cost_usd", "judge_input_tokens", "judge_output_tokens", "error",
              "error_phase")  # where the error happened (run/item/phases.py); last: added later


def results_csv(results: list[TaskResult]) -> str:
    buf = io.StringIO()
    w = csv.writer(buf)
    w.writerow(CSV_FIELDS)
    for r in results:
        w.writerow([r.task_id, r.category, r.modality, r.outcome, "" if r.overall_score is None else r.overall_score,
                    r.finish_reason, r.timings.get("agent", ""), r.timings.get("grade", ""),
                    r.usage.get("input_tokens", 0), r.usage.get("output_tokens", 0),
                    "" if r.cost_usd is None else r.cost_usd, r.judge_usage.get("input_tokens", 0),
                    r.judge_usage.get("output_tokens", 0), r.error[:200], r.error_phase])
    return buf.getvalue()


def rebuild(run_dir: str | Path) -> list[TaskResult]:
    run_dir = Path(run_dir)
    results = load_results(run_dir)
    write_atomic(run_dir / "results.csv", results_csv(results))
    write_atomic(run_dir / "summary.json", json.dumps(summarise(results), indent=2) + "\n")
    return results


def terminal_lines(summary: dict) -> list[str]:
    lines = [f"mean score {summary['mean_score']:.3f} over {summary['tasks']} task(s) (missing = 0); "
             f"passed {summary['passed']} (overall_score >= {summary['pass_score']}), errors {summary['errors']}"]
    for cat, b in summary["by_category"].items():
        lines.append(f"  {cat:<22} {b['mean_score']:.3f}  ({b['tasks']} task(s))")
    lines.append(f"judge {summary.get('judge_model') or '?'}, {summary['judge_tokens']} tokens; mean agent "
                 f"{summary['mean_agent_s']:.1f} s, "
                 f"mean grading {summary['mean_grade_s']:.1f} s")
    return lines
