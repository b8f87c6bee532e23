"""The HTML page of a WildClawBench report, built with the Claw-SWE-Bench report's template and helpers.

Sections: the runs; the mean score per paper category (errors count 0, as released, and are counted
apart); harness x model beside the paper's published figures for the same harness and model; the
published tables; every errored task with its reason; and per run every task with its score, what its
grader returned, the judge's calls, time, tokens, cost, finish reason and links to its files. Task ids,
criteria, errors and finish reasons come partly from agents and task files: they reach the page only
through the autoescaping template.
"""
from __future__ import annotations

import json
import re
from pathlib import Path

import pandas as pd
from markupsafe import Markup

from pytest_clawswe.files import write_atomic
from pytest_clawswe.report import html as report_html
from pytest_clawswe.report.format import config_label, fmt_tokens, fmt_usd
from pytest_clawswe.run.spending import ledger_name
from pytest_clawswe.trajectory.view import item_page
from pytest_clawswe.wildclaw.results import ERROR, TaskResult, load_results, task_dir

MARK = {"passed": "✓", "failed": "✗", ERROR: "!"}
TASK_FILES = {"prompt": "prompt.txt", "agent log": "agent.log", "transcript": "transcript.jsonl",
              "score": "score.json", "usage": "usage.json", "result": "result.json", "grade log": "grade.log",
              "audit": "audit", "workspace": "snapshot/tmp_workspace"}
RUN_FILES = ("run.json", "summary.json", "results.csv")
# our harness names -> the paper's (Table 3)
PAPER_HARNESS = {"openclaw": "OpenClaw", "claude-code": "Claude Code", "codex": "Codex", "hermes": "Hermes Agent"}


def _key(text: str) -> str:
    """'Search & Retrieval' ~ 'Search Retrieval'; 'openrouter/openai/gpt-5.4' ~ 'GPT-5.4'."""
    return re.sub(r"[^a-z0-9]", "", str(text).rsplit("/", 1)[-1].lower())


def _criteria(scores: dict) -> str:
    parts = []
    for k, v in scores.items():
        if k == "overall_score":
            continue
        parts.append(f"{k} {v:g}" if isinstance(v, (int, float)) and not isinstance(v, bool) else f"{k} {v}")
    return " · ".join(parts)


def judge_record(run: Path, task_id: str) -> Path:
    """The gateway's record of the task's judge calls (the first gateway worker's file that has any)."""
    from pytest_clawswe.gateway.record.calls import calls_paths

    paths = calls_paths(run / "gateway", ledger_name(task_id, "judge"))
    return next((p for p in paths if p.is_file()), paths[0])


def _verdict(run: Path, task_id: str) -> str:
    """What the judge last answered, e.g. 'score 1.0: lists every meeting' ('' when not recorded)."""
    from pytest_clawswe.gateway.record.calls import read_calls

    answers = [c["response"] for c in read_calls(run / "gateway", ledger_name(task_id, "judge"))
               if isinstance(c.get("response"), dict) and int(c.get("status") or 0) < 400]
    text = str(answers[-1].get("text") or "") if answers else ""
    try:
        answer = json.loads(text)
        return f"score {answer['score']}: {answer.get('reason', '')}"[:300]
    except (ValueError, KeyError, TypeError):
        return text[:300]


def _judge(r: TaskResult, run: Path) -> str:
    u = r.judge_usage or {}
    calls = u.get("requests", 0)
    if not calls:
        return "not called"
    status = "failed" if "judge failed" in r.error else "answered"
    verdict = _verdict(run, r.task_id)
    tokens = fmt_tokens(u.get("input_tokens", 0) + u.get("output_tokens", 0))
    return f"{status} ({calls} call(s), {tokens} tokens)" + (f": {verdict}" if verdict else "")


def _label(run: Path, results: list[TaskResult]) -> str:
    first = results[0] if results else TaskResult("")
    return f"{config_label(first.harness, first.model)} ({run.name})"


PUBLISHED_HEADER = {"rank": "Rank", "model": "Model", "org": "Org", "overall_score_pct": "Score (%)",
                    "total_time_min": "Total time (min)", "total_cost_usd": "Total cost ($)", "cost_note": "Note",
                    "harness": "Harness", "time_min_per_task": "Min/task", "cost_usd_per_task": "$/task",
                    "score_pct": "Score (%)"}


def _as_given(df: pd.DataFrame) -> pd.DataFrame:
    """Published numbers at the precision the paper gives them (the generic format rounds to 0.1)."""
    out = df.copy()
    for name in out.columns:
        if pd.api.types.is_float_dtype(out[name]):
            out[name] = [None if pd.isna(v) else f"{v:g}" for v in out[name]]
    return out


def category_frame(runs: dict[Path, list[TaskResult]], published: dict) -> pd.DataFrame:
    """Mean score (%) per category and run: the paper's categories in its order, then any others."""
    paper = dict(published.get("categories", {}))
    known = {_key(name) for name in paper}
    extra = sorted({r.category for rs in runs.values() for r in rs if _key(r.category) not in known})
    rows = []
    for name, size in [*paper.items(), *((c, None) for c in extra)]:
        row: dict = {"Category": name, "Tasks (paper)": size}
        for run, results in runs.items():
            mine = [r for r in results if _key(r.category) == _key(name)]
            label = _label(run, results)
            row[f"{label}: tasks"] = len(mine)
            row[f"{label}: score (%)"] = 100 * sum(r.overall_score or 0.0 for r in mine) / len(mine) if mine else None
            row[f"{label}: errors"] = sum(r.outcome == ERROR for r in mine)
        rows.append(row)
    return pd.DataFrame(rows)


def published_beside(table3: pd.DataFrame, published: dict) -> pd.DataFrame:
    """Our harness x model rows with the paper's Table 3 row for the same harness and model, when it has one."""
    paper = {(_key(r["harness"]), _key(r["model"])): r for r in published.get("harness_comparison", [])}
    board = {_key(r["model"]): r for r in published.get("leaderboard_openclaw", [])}
    rows = []
    for _, ours in table3.iterrows():
        harness = PAPER_HARNESS.get(ours["harness"], ours["harness"])
        theirs = paper.get((_key(harness), _key(ours["model"])))
        if theirs is None and harness == "OpenClaw" and _key(ours["model"]) in board:
            b = board[_key(ours["model"])]
            theirs = {"score_pct": b["overall_score_pct"], "time_min_per_task": b["total_time_min"] / 60,
                      "cost_usd_per_task": b["total_cost_usd"] / 60}
        theirs = theirs or {}
        rows.append({"Harness": ours["harness"], "Model": ours["model"], "Tasks": ours["tasks"],
                     "Score (%)": ours["score_pct"], "Paper score (%)": theirs.get("score_pct"),
                     "Min/task": ours["min_per_task"], "Paper min/task": theirs.get("time_min_per_task"),
                     "$/task": ours["usd_per_task"], "Paper $/task": theirs.get("cost_usd_per_task")})
    return _as_given(pd.DataFrame(rows))


def tasks_html(index: int, run: Path, results: list[TaskResult], out: Path) -> Markup:
    rows = []
    for r in results:
        folder = task_dir(run, r.task_id)
        u = r.usage or {}
        rows.append({
            "task_id": r.task_id, "category": r.category, "modality": r.modality, "outcome": r.outcome,
            "mark": MARK.get(r.outcome, "?"), "error": r.error_line(), "finish_reason": r.finish_reason,
            # an error has no score: shown as none, never as 0 (the mean counts it 0, as released)
            "score": "—" if r.overall_score is None else f"{r.overall_score:.3f}",
            "criteria": _criteria(r.scores or {}), "judge": _judge(r, run),
            "numbers": [f"{float(r.timings.get('agent', 0)):.1f}", f"{float(r.timings.get('grade', 0)):.1f}",
                        u.get("requests", 0), fmt_tokens(u.get("input_tokens", 0)),
                        fmt_tokens(u.get("output_tokens", 0)), fmt_usd(r.cost_usd), fmt_usd(r.judge_cost_usd)],
            "links": [x for x in (report_html.link(item_page(folder), "trajectory", out),
                                  *(report_html.link(folder / rel, label, out) for label, rel in TASK_FILES.items()),
                                  report_html.link(judge_record(run, r.task_id), "judge", out)) if x],
        })
    scored = [r.overall_score or 0.0 for r in results]
    errors = sum(r.outcome == ERROR for r in results)
    summary = (f"mean score {sum(scored) / len(scored):.3f} over {len(results)} task(s), "
               f"{errors} error(s)") if results else "no task"
    return report_html.render("wild_tasks", index, _label(run, results), summary, rows)


def ablation(run: Path) -> str:
    """The paper's ablation a run made (run.json's "ablation", as Claw-SWE-Bench's --no-purge), or ""."""
    try:
        return str(json.loads((run / "run.json").read_text()).get("ablation") or "")
    except (OSError, ValueError, AttributeError):
        return ""


def runs_frame(runs: dict[Path, list[TaskResult]]) -> pd.DataFrame:
    rows = []
    for run, results in runs.items():
        first = results[0] if results else TaskResult("")
        rows.append({"Run": run.name, "Harness": first.harness, "Model": first.model, "Judge": first.judge_model,
                     "Tasks": len(results), "Mean score": sum(r.overall_score or 0.0 for r in results) / max(1, len(results)),
                     "Errors": sum(r.outcome == ERROR for r in results),
                     "Ablation": f"ABLATION {ablation(run)}" if ablation(run) else "", "Regrade": regrade_note(run)})
    return pd.DataFrame(rows)


def regrade_note(run: Path) -> str:
    """A regrade's run (`clawswe regrade`): which run it grades again, and with which judge; "" otherwise."""
    from pytest_clawswe.run.regrade import note

    try:
        return note(json.loads((run / "run.json").read_text()))
    except (OSError, ValueError, AttributeError):
        return ""


def ablation_notes(runs: list[Path]) -> Markup:
    return Markup("").join(report_html.note(f"† {run.name}: ABLATION {ablation(run)} with the paper")
                           for run in runs if ablation(run))


def page(runs: list[Path], out: Path, table3: pd.DataFrame, published: dict, written: dict[str, list[Path]]) -> Path:
    by_run = {run: load_results(run) for run in runs}
    errors = [{"index": i, "label": _label(run, rs), "task_id": r.task_id, "error": r.error_line() or "error"}
              for i, (run, rs) in enumerate(by_run.items()) for r in rs if r.outcome == ERROR]
    files = Markup("").join(report_html.files_html([run / name for name in RUN_FILES], out) for run in runs)
    board = pd.DataFrame(published.get("leaderboard_openclaw", []))
    sections = [
        ("Runs", report_html.table_html(runs_frame(by_run)) + ablation_notes(runs) + files),
        ("Score per category", report_html.table_html(category_frame(by_run, published))
         + report_html.note("Mean overall_score per category of the paper, in %: a task that errored counts 0, as in the "
                     "released runner, and is counted apart under errors. Tasks (paper): the category's size in "
                     "the published suite.")
         + report_html.figure_html(written["chart"], out, "Mean score per category")
         + report_html.files_html(written["per_category"], out)),
        ("Beside the paper", report_html.table_html(published_beside(table3, published)) + ablation_notes(runs)
         + report_html.note("Paper figures: Table 3 (harness comparison) for the same harness and model, else the "
                     "OpenClaw leaderboard per task; — where the paper has no such row.")
         + report_html.files_html(written["table3"] + written["table2"], out)),
        ("Published results", report_html.note("The OpenClaw leaderboard (60 tasks; time and cost for the whole suite):")
         + report_html.table_html(_as_given(board), PUBLISHED_HEADER)
         + report_html.note("Harness comparison (the paper's Table 3; time and cost per task):")
         + report_html.table_html(_as_given(pd.DataFrame(published.get("harness_comparison", []))), PUBLISHED_HEADER)),
        ("Errors", report_html.render("errors", errors)
         + report_html.note("Setup failures, grader crashes or time-outs and judge failures: no score, kept apart.")),
        ("Tasks", Markup("").join(tasks_html(i, run, rs, out) for i, (run, rs) in enumerate(by_run.items()))),
    ]
    index = out / "index.html"
    write_atomic(index, report_html.page("WildClawBench report", sections, f"{len(runs)} run(s)."))
    return index
