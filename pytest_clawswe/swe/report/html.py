"""The static HTML report: one self-contained page (plus the figure files beside it) that links every
instance to its patch, transcript, session backup and evaluation logs in the run directories.

Links are relative to the page, so the report and the runs can be moved or served together. The markup
is in templates/report.html.j2, rendered by Jinja2 with autoescape: instance ids, errors and labels come
partly from agents, and no value reaches the page unescaped unless it is a fragment built by a template.
"""
from __future__ import annotations

from pathlib import Path

from markupsafe import Markup

from pytest_clawswe.report.format import fmt_pct, fmt_tokens, fmt_usd
from pytest_clawswe.report.html import _T, human_number, link
from pytest_clawswe.run.item.result import ERROR
from pytest_clawswe.swe.report.columns import Run
from pytest_clawswe.swe.report.tables import run_label
from pytest_clawswe.swe.results.run_dir import instance_dir
from pytest_clawswe.trajectory.view import item_page

# per-instance artifacts worth a link: label -> path inside instances/<id>/
ARTIFACTS = {
    "patch": "patch.diff",
    "raw patch": "patch.raw.diff",
    "transcript": "agent.log",
    "session": "session",
    "eval report": "eval/report.json",
    "tests": "eval/test_output.txt",
    "eval log": "eval/run_instance.log",
}
RUN_FILES = ("run.json", "summary.json", "results.csv", "predictions.jsonl")
OUTCOME_MARK = {"resolved": "✓", "unresolved": "✗", "apply_failed": "⊘", ERROR: "!"}




def runs_html(runs: list[Run], page_dir: Path) -> Markup:
    rows = [
        {"index": i, "label": run_label(run, runs), "run_id": run.run_id, "dataset": str(run.info.get("dataset", "")),
         "instances": len(run.results), "path": str(run.path),
         "directory": link(run.path, run.path.name + "/", page_dir),
         "files": [link(run.path / name, name, page_dir) for name in RUN_FILES]}
        for i, run in enumerate(runs)
    ]
    return _T.runs(rows)


def _harness_usage(usage: dict) -> str:
    """What the harness itself reported, beside the gateway's counts: a cross-check, not the source."""
    return " · ".join(f"{k} {fmt_tokens(v) if k.endswith('tokens') else human_number(v)}" for k, v in usage.items()
                      if isinstance(v, (int, float)) and not isinstance(v, bool))


def instances_html(run: Run, index: int, page_dir: Path, runs: list[Run]) -> Markup:
    """One run's instances, each with its numbers and links to what it left on disk."""
    from pytest_clawswe.swe.health.marks import note

    reported = any(r.harness_usage for r in run.results)  # a column only for harnesses that report
    marked = any(r.health for r in run.results)  # a column only for runs given --health
    rows = []
    for r in run.results:
        folder = instance_dir(run.path, r.instance_id)
        u = r.usage
        rows.append({
            "instance_id": r.instance_id, "language": r.language, "outcome": r.outcome,
            "mark": OUTCOME_MARK.get(r.outcome, "?"), "error": r.error_line(), "finish_reason": r.finish_reason,
            "numbers": [f"{r.duration_s:.1f}", f"{float(r.timings.get('agent', 0)):.1f}", u.requests,
                        fmt_tokens(u.input_tokens), fmt_tokens(u.output_tokens), fmt_tokens(u.cache_read_tokens),
                        fmt_pct(u.cache_hit_rate), fmt_usd(r.cost_usd), r.patch_lines],
            "harness_usage": _harness_usage(r.harness_usage),
            "health": r.health.replace("_", " "), "health_note": note(r),
            "links": [x for x in (link(item_page(folder), "trajectory", page_dir),
                                  *(link(folder / rel, label, page_dir) for label, rel in ARTIFACTS.items())) if x],
        })
    resolved = sum(r.outcome == "resolved" for r in run.results)
    return _T.instances(index, run_label(run, runs), resolved, reported, rows, marked)


def matrix_html(runs: list[Run]) -> Markup:
    """Instances × runs: where configurations agree and disagree, each cell a link to the instance row."""
    ids = sorted({r.instance_id for run in runs for r in run.results})
    by_run = [{r.instance_id: r for r in run.results} for run in runs]
    rows = []
    for iid in ids:
        cells = []
        for i, results in enumerate(by_run):
            r = results.get(iid)
            cells.append(None if r is None else {"run": i, "outcome": r.outcome,
                                                 "mark": OUTCOME_MARK.get(r.outcome, "?")})
        rows.append((iid, cells))
    return _T.matrix([run_label(run, runs) for run in runs], rows)


