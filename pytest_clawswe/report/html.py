"""The static HTML report: one self-contained page (plus the figure files beside it) that links every
instance to its patch, transcript, session backup and evaluation logs in the run directories.

Links are relative to the page, so the report and the runs can be moved or served together.
"""
from __future__ import annotations

import os
from datetime import datetime, timezone
from html import escape
from pathlib import Path
from urllib.parse import quote

import pandas as pd

from ..results import ERROR, instance_dir
from ..summary import fmt_pct, fmt_tokens, fmt_usd
from .columns import Run
from .tables import formatted, is_numeric, run_label

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

STYLE = """
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; margin: 2em auto; max-width: 1600px;
       padding: 0 1.5em; color: #1d1d1f; }
h1 { font-size: 1.6em; margin-bottom: 0.2em; } h2 { margin-top: 2em; border-bottom: 1px solid #ddd; }
.meta, .note { color: #666; } .note { font-size: 0.9em; }
table { border-collapse: collapse; margin: 0.8em 0; font-size: 13px; }
th, td { padding: 4px 9px; border-bottom: 1px solid #e5e5e5; text-align: left; white-space: nowrap; }
th { background: #f5f5f7; position: sticky; top: 0; white-space: normal; vertical-align: bottom; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
td.text { white-space: normal; max-width: 24em; } .matrix th { max-width: 9em; font-size: 12px; }
tr:hover td { background: #fafafa; }
.outcome { font-weight: 600; padding: 1px 6px; border-radius: 4px; }
.resolved { color: #0a6b2d; background: #e3f6e8; } .unresolved { color: #555; background: #eee; }
.apply_failed { color: #8a4b00; background: #fff0db; } .error { color: #a0001c; background: #fde4e8; }
.links a { margin-right: 0.6em; white-space: nowrap; } td.links { white-space: normal; min-width: 16em; }
.wide { overflow-x: auto; } .why { color: #a0001c; font-size: 0.9em; margin-left: 0.4em; }
figure { margin: 1em 0; } figure img { max-width: min(100%, 1000px); border: 1px solid #eee; }
figcaption { color: #666; font-size: 0.9em; }
details { margin: 0.8em 0; } summary { cursor: pointer; font-weight: 600; font-size: 1.05em; }
.matrix td { text-align: center; padding: 2px 6px; } .matrix td:first-child { text-align: left; }
"""


def _href(target: Path, page_dir: Path) -> str:
    return quote(os.path.relpath(target, page_dir).replace(os.sep, "/"))


def link(target: Path, text: str, page_dir: Path) -> str:
    """A link to target, or nothing when the run did not record it."""
    if not target.exists():
        return ""
    return f'<a href="{_href(target, page_dir)}">{escape(text)}</a>'


def _wide(table: str) -> str:
    return f'<div class="wide">{table}</div>'


def table_html(df: pd.DataFrame, header: dict[str, str] | None = None) -> str:
    if df.empty:
        return '<p class="note">(none)</p>'
    header = header or {}
    cells = formatted(df)
    numeric = {c for c in df.columns if is_numeric(df, c)}
    head = "".join(f'<th class="{"num" if c in numeric else ""}">{escape(header.get(c, c))}</th>' for c in df.columns)
    body = "".join(
        "<tr>" + "".join(f'<td class="{"num" if c in numeric else "text"}">{escape(v)}</td>'
                         for c, v in zip(df.columns, row)) + "</tr>"
        for row in cells.itertuples(index=False)
    )
    return _wide(f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>")


def figure_html(paths: list[Path], page_dir: Path, caption: str) -> str:
    png = next(p for p in paths if p.suffix == ".png")
    others = " · ".join(link(p, p.suffix[1:].upper(), page_dir) for p in paths)
    return (f'<figure><a href="{_href(png, page_dir)}"><img src="{_href(png, page_dir)}" alt="{escape(caption)}">'
            f"</a><figcaption>{escape(caption)} ({others})</figcaption></figure>")


def files_html(paths: list[Path], page_dir: Path) -> str:
    return '<p class="links note">Files: ' + " ".join(link(p, p.name, page_dir) for p in paths) + "</p>"


def runs_html(runs: list[Run], page_dir: Path) -> str:
    rows = []
    for i, run in enumerate(runs):
        files = " ".join(link(run.path / name, name, page_dir) for name in RUN_FILES)
        rows.append(
            f'<tr><td><a href="#run-{i}">{escape(run_label(run, runs))}</a></td><td>{escape(run.run_id)}</td>'
            f'<td>{escape(str(run.info.get("dataset", "")))}</td><td class="num">{len(run.results)}</td>'
            f'<td title="{escape(str(run.path))}">{link(run.path, run.path.name + "/", page_dir)}</td>'
            f'<td class="links">{files}</td></tr>'
        )
    return _wide("<table><thead><tr><th>Configuration</th><th>Run id</th><th>Dataset</th><th class=num>Instances</th>"
                 "<th>Directory</th><th>Files</th></tr></thead><tbody>" + "".join(rows) + "</tbody></table>")


def _outcome(result) -> str:
    badge = (f'<span class="outcome {escape(result.outcome)}">{OUTCOME_MARK.get(result.outcome, "?")} '
             f"{escape(result.outcome.replace('_', ' '))}</span>")
    if not result.error:
        return badge
    short = result.error if len(result.error) <= 60 else result.error[:57] + "…"
    return f'{badge}<span class="why" title="{escape(result.error)}">{escape(short)}</span>'


def _harness_usage(usage: dict) -> str:
    """What the harness itself reported, beside the gateway's counts: a cross-check, not the source."""
    return " · ".join(f"{k} {fmt_tokens(v) if k.endswith('tokens') else v}" for k, v in usage.items()
                      if isinstance(v, (int, float)) and not isinstance(v, bool))


def instances_html(run: Run, index: int, page_dir: Path, runs: list[Run]) -> str:
    """One run's instances, each with its numbers and links to what it left on disk."""
    reported = any(r.harness_usage for r in run.results)  # a column only for harnesses that report
    head = ("<tr><th>Instance</th><th>Language</th><th>Outcome</th><th>Finish</th><th class=num>Duration (s)</th>"
            "<th class=num>Agent (s)</th><th class=num>Turns</th><th class=num>In</th><th class=num>Out</th>"
            "<th class=num>Cache read</th><th class=num>Cache hit</th><th class=num>Cost</th>"
            "<th class=num>Patch lines</th>" + ("<th>Harness-reported usage</th>" if reported else "")
            + "<th>Artifacts</th></tr>")
    rows = []
    for r in run.results:
        folder = instance_dir(run.path, r.instance_id)
        links = " ".join(link(folder / rel, label, page_dir) for label, rel in ARTIFACTS.items())
        u = r.usage
        rows.append(
            f'<tr id="run-{index}-{escape(r.instance_id)}"><td>{escape(r.instance_id)}</td>'
            f"<td>{escape(r.language)}</td><td>{_outcome(r)}</td><td>{escape(r.finish_reason)}</td>"
            f'<td class="num">{r.duration_s:.1f}</td><td class="num">{float(r.timings.get("agent", 0)):.1f}</td>'
            f'<td class="num">{u.requests}</td><td class="num">{fmt_tokens(u.input_tokens)}</td>'
            f'<td class="num">{fmt_tokens(u.output_tokens)}</td><td class="num">{fmt_tokens(u.cache_read_tokens)}</td>'
            f'<td class="num">{fmt_pct(u.cache_hit_rate)}</td><td class="num">{fmt_usd(r.cost_usd)}</td>'
            f'<td class="num">{r.patch_lines}</td>'
            + (f'<td class="text">{escape(_harness_usage(r.harness_usage))}</td>' if reported else "")
            + f'<td class="links">{links}</td></tr>'
        )
    resolved = sum(r.outcome == "resolved" for r in run.results)
    table = _wide(f"<table><thead>{head}</thead><tbody>{''.join(rows)}</tbody></table>")
    return (f'<details id="run-{index}" open><summary>{escape(run_label(run, runs))}: {resolved}/{len(run.results)} '
            f"resolved</summary>{table}</details>")


def matrix_html(runs: list[Run]) -> str:
    """Instances × runs: where configurations agree and disagree, each cell a link to the instance row."""
    ids = sorted({r.instance_id for run in runs for r in run.results})
    by_run = [{r.instance_id: r for r in run.results} for run in runs]
    head = "<th>Instance</th>" + "".join(f"<th>{escape(run_label(run, runs))}</th>" for run in runs)
    rows = []
    for iid in ids:
        cells = []
        for i, results in enumerate(by_run):
            r = results.get(iid)
            cells.append("<td></td>" if r is None else
                         f'<td><a class="outcome {escape(r.outcome)}" href="#run-{i}-{escape(iid)}" '
                         f'title="{escape(r.outcome)}">{OUTCOME_MARK.get(r.outcome, "?")}</a></td>')
        rows.append(f"<tr><td>{escape(iid)}</td>{''.join(cells)}</tr>")
    return _wide(f'<table class="matrix"><thead><tr>{head}</tr></thead><tbody>{"".join(rows)}</tbody></table>')


def page(title: str, sections: list[tuple[str, str]], intro: str = "") -> str:
    """The whole page: a title, a line saying when it was made, and (heading, html) sections."""
    made = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    toc = " · ".join(f'<a href="#s{i}">{escape(h)}</a>' for i, (h, _) in enumerate(sections))
    body = "".join(f'<h2 id="s{i}">{escape(h)}</h2>{html}' for i, (h, html) in enumerate(sections))
    return (f'<!doctype html><html lang="en"><head><meta charset="utf-8"><title>{escape(title)}</title>'
            f'<meta name="viewport" content="width=device-width, initial-scale=1"><style>{STYLE}</style></head>'
            f'<body><h1>{escape(title)}</h1><p class="meta">Generated {made}. {intro}</p>'
            f'<p class="note">{toc}</p>{body}</body></html>\n')
