"""`clawswe report` for WildClawBench runs, and `clawswe report --published wildclaw`.

Views, recomputed from the task folders of the runs (never from summary.json):
- table2: one row per model (the paper's Table 2): mean score %, minutes and USD per task;
- table3: model x harness (the paper's Table 3): score %, minutes and USD per task;
- per_category: mean score per category and run, as a table and a bar chart;
- index.html: all of these beside the published figures, the errors apart and every task (report/html.py).
Runs of the same harness and model are pooled (repeats).
"""
from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from pytest_clawswe.errors import UserError
from pytest_clawswe.report.tables import write_table
from pytest_clawswe.wildclaw.paths import WILDCLAW_PUBLISHED_RESULTS
from pytest_clawswe.wildclaw.report import html as html_report
from pytest_clawswe.wildclaw.results import load_results

PUBLISHED = WILDCLAW_PUBLISHED_RESULTS


def task_frame(runs: list[Path]) -> pd.DataFrame:
    from pytest_clawswe.files import load_run_info
    from pytest_clawswe.run.regrade import REGRADE_LABEL, beside_its_run

    infos = {run: load_run_info(run) for run in runs}
    run_ids = {str(info.get("run_id")) for info in infos.values()}
    rows = []
    for run in runs:
        # a regrade beside the run it grades again is its own configuration (another judge), not a repeat of it
        label = REGRADE_LABEL if beside_its_run(infos[run], run_ids) else ""
        for r in load_results(run):
            rows.append({"run": run.name, "model": r.model, "harness": r.harness + label, "regrade": bool(label),
                         "task_id": r.task_id,
                         "category": r.category, "modality": r.modality,
                         "score": r.overall_score or 0.0,  # missing = 0, as released
                         "minutes": (r.timings.get("agent") or 0) / 60, "cost": r.cost_usd,
                         "judge_tokens": (r.judge_usage or {}).get("input_tokens", 0)
                         + (r.judge_usage or {}).get("output_tokens", 0)})
    return pd.DataFrame(rows)


def _per_task(df: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    g = df.groupby(keys, sort=True)
    out = g.agg(tasks=("task_id", "count"), score_pct=("score", "mean"), min_per_task=("minutes", "mean"),
                usd_per_task=("cost", lambda c: None if c.isna().any() else c.mean()),
                judge_tokens=("judge_tokens", "sum")).reset_index()
    out["score_pct"] = (100 * out["score_pct"]).round(1)
    out["min_per_task"] = out["min_per_task"].round(2)
    return out


def build(runs: list[Path], out: Path) -> dict[str, list[Path]]:
    out.mkdir(parents=True, exist_ok=True)
    df = task_frame(runs)
    if df.empty:
        raise ValueError("the WildClawBench runs hold no finished task yet")
    agents = df[~df["regrade"]]  # per model: each run's agents once (a regrade beside its run is not counted again)
    written = {"table2": write_table(_per_task(agents, ["model"]).sort_values("score_pct", ascending=False), out,
                                     "wildclaw_table2"),
               "table3": write_table(_per_task(df, ["model", "harness"]), out, "wildclaw_table3")}
    cats = (df.groupby(["category", "harness", "model"])["score"].mean() * 100).round(1).reset_index()
    written["per_category"] = write_table(cats, out, "wildclaw_per_category")
    written["chart"] = [_bars(cats, out / "wildclaw_per_category.png")]
    written["html"] = [html_report.page(runs, out, _per_task(df, ["model", "harness"]),
                                        json.loads(PUBLISHED.read_text()), written)]
    return written


def _bars(cats: pd.DataFrame, path: Path) -> Path:
    wide = cats.assign(config=cats["harness"] + " / " + cats["model"]).pivot(index="category", columns="config",
                                                                             values="score")
    return _bar_chart(wide, path, "mean score (%)", "WildClawBench: score per category", rot=20)


def _bar_chart(wide: pd.DataFrame, path: Path, ylabel: str, title: str, rot: int) -> Path:
    """One bar per column in each row's group, scores 0-100, saved as a PNG."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ax = wide.plot.bar(figsize=(8, 4), rot=rot, ylim=(0, 100))
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    plt.tight_layout()
    ax.figure.savefig(path, dpi=120)
    plt.close(ax.figure)
    return path


def build_published(out: Path, source: Path = PUBLISHED) -> dict[str, list[Path]]:
    out.mkdir(parents=True, exist_ok=True)
    data = json.loads(source.read_text())
    board = pd.DataFrame(data["leaderboard_openclaw"])[["rank", "model", "org", "overall_score_pct", "total_time_min",
                                                        "total_cost_usd"]]
    harness = pd.DataFrame(data["harness_comparison"])
    written = {"leaderboard": write_table(board, out, "wildclaw_published_leaderboard"),
               "harnesses": write_table(harness, out, "wildclaw_published_harnesses")}
    written["chart"] = [_published_bars(harness, out / "wildclaw_published_harnesses.png")]
    return written


def _published_bars(harness: pd.DataFrame, path: Path) -> Path:
    wide = harness.pivot(index="model", columns="harness", values="score_pct")
    return _bar_chart(wide, path, "score (%)", "WildClawBench (published): model x harness", rot=0)


def run(run_dirs: list[Path], args) -> dict[str, list[Path]]:
    """WildClawBench's part of `clawswe report`: its runs, or (--published wildclaw) the released figures."""
    out = Path(args.out)
    if args.published:
        written = build_published(out)
        print(written["leaderboard"][1].read_text())
        print(written["harnesses"][1].read_text())
        return written
    try:
        written = build(list(run_dirs), out)
    except ValueError as exc:
        raise UserError(str(exc)) from None
    for key in ("table2", "table3", "per_category"):
        print(written[key][1].read_text())
    written["main"] = written["table3"]  # harness x model: the table a page over benchmarks shows
    return written
