"""`clawswe report`: turn benchmark runs (or the published numbers) into tables, plots and an HTML page.

    clawswe report RUN_DIR... [--out DIR] [--compare A B] [--prices FILE]
    clawswe report --published [--out DIR]

Every run is one row of the tables (harness × model; runs of the same configuration are repeats);
all numbers are recomputed from the per-instance results.
"""
from __future__ import annotations

import argparse
from pathlib import Path

from markupsafe import Markup

from pytest_clawswe.errors import UserError
from pytest_clawswe.files import write_atomic
from pytest_clawswe.prices import PriceBook, PriceFileError
from pytest_clawswe.report import html as report_html
from pytest_clawswe.report import tables as report_tables
from pytest_clawswe.report.format import config_label
from pytest_clawswe.swe.paths import PUBLISHED_RESULTS
from pytest_clawswe.swe.report import html, plots, published, tables
from pytest_clawswe.swe.report.columns import NoRunsError, Run, columns_from_runs, load_runs

MAX_RUNS_ALL_PAIRS = 6  # 15 pairs


def build_report(runs: list[Run], out: Path, compare: tuple[Run, Run] | None = None,
                 confidence: float = 0.95) -> dict[str, list[Path]]:
    """Write every table, figure and the HTML page for `runs` into `out`; returns what was written."""
    out.mkdir(parents=True, exist_ok=True)
    columns = columns_from_runs(runs)
    main = tables.main_table(columns)
    langs = tables.language_table(columns)
    # every pair while that stays readable; beyond it, the pair asked for with --compare
    if compare or 1 < len(runs) <= MAX_RUNS_ALL_PAIRS:
        comparisons = tables.comparison_table(runs, [compare] if compare else None, confidence)
    else:
        comparisons = None
    repeats = tables.repeats_table(columns)

    written = {
        "main": report_tables.write_table(main, out, "main_table"),
        "languages": report_tables.write_table(langs, out, "per_language", tables.language_header(columns)),
    }
    if comparisons is not None:
        written["comparisons"] = report_tables.write_table(comparisons, out, "comparisons")
    if not repeats.empty:
        written["repeats"] = report_tables.write_table(repeats, out, "repeats")
    points, unplotted = plots.points_from_columns(columns)
    shared = plots.shared_setting(points)
    title = "Pass@1 vs total cost" + (f" ({shared})" if shared else "")
    written["pareto"] = plots.pareto_plot(points, out / "pareto", title, unplotted)
    pareto_caption = "Pass@1 against total cost; the dashed line is the Pareto frontier: " + _frontier_text(points)
    written["language_chart"] = plots.language_chart(columns, out / "per_language", "Pass@1 per language (%)")

    level = f"{100 * confidence:g}%"
    sections = [
        ("Runs", html.runs_html(runs, out)),
        ("Main table", _main_section(main, columns, written["main"], out)),
        ("Pass@1 vs cost", report_html.figure_html(written["pareto"], out, pareto_caption)),
        ("Per language", report_html.table_html(langs, tables.language_header(columns))
         + report_html.files_html(written["languages"], out)
         + report_html.figure_html(written["language_chart"], out, "Pass@1 per language group")),
    ]
    if comparisons is not None:
        sections.append(("Paired comparisons", _comparisons_section(comparisons, written["comparisons"], out, level)))
    if not repeats.empty:
        sections.append(("Repeats", report_html.table_html(repeats) + report_html.files_html(written["repeats"], out)))
    if len(runs) > 1:
        sections.append(("Instances across runs", html.matrix_html(runs)))
    sections.append(("Instances", Markup("").join(html.instances_html(run, i, out, runs)
                                                  for i, run in enumerate(runs))))
    index = out / "index.html"
    write_atomic(index, report_html.page("Claw-SWE-Bench report", sections, f"{len(runs)} run(s)."))
    written["html"] = [index]
    return written



def _main_section(main, columns, files: list[Path], out: Path) -> Markup:
    return (report_html.table_html(main)
            + Markup("").join(report_html.note(f"† {c.label}: {c.note}") for c in columns if c.note)
            + report_html.files_html(files, out)
            + report_html.note("Pass@1 = resolved / all instances of the run (errors count as not resolved); "
                               "Pass@1 healthy (runs given --health) = resolved / the instances its health file does "
                               "not call flaky, broken or too slow. "
                               "Cache hit = cache read / (input + cache read). Cost is unknown if any instance's model "
                               "has no price."))


def _comparisons_section(comparisons, files: list[Path], out: Path, level: str) -> Markup:
    return report_html.table_html(comparisons) + report_html.files_html(files, out) + report_html.note(
        f"On the instances both runs contain: the difference of Pass@1 with a {level} Newcombe paired "
        "interval, and the exact McNemar test on the instances only one of the two resolved, which gives the "
        "verdict. On a handful of instances the two can disagree; a single run a few points ahead is rarely "
        "evidence of a better configuration.")

def build_published_report(out: Path, source: Path = PUBLISHED_RESULTS,
                           with_post_paper: bool = False) -> dict[str, list[Path]]:
    """Regenerate Tables 2 and 3, their per-language tables and the Figure 1 frontier from the
    published results JSON."""
    out.mkdir(parents=True, exist_ok=True)
    data = published.load_published(source)
    written: dict[str, list[Path]] = {}
    sections = []
    for name, (_, title) in published.TABLES.items():
        columns = published.table_columns(data, name)
        main, langs = tables.main_table(columns), tables.language_table(columns)
        header = tables.language_header(columns)
        written[name] = report_tables.write_table(main, out, name)
        written[f"{name}_languages"] = report_tables.write_table(langs, out, f"{name}_per_language", header)
        points, unplotted = plots.points_from_columns(columns)
        figure = "figure1_pareto" if name == "table3" else f"{name}_pareto"
        written[figure] = plots.pareto_plot(points, out / figure, f"{title}: Pass@1 vs total cost", unplotted,
                                            with_post_paper)
        written[f"{name}_language_chart"] = plots.language_chart(
            columns, out / f"{name}_per_language", f"{title}: Pass@1 per language (%)")
        notes = Markup("").join(report_html.note(f"† {c.model}: {c.note}" + ("" if with_post_paper else
                                ", not part of the paper's frontier")) for c in columns if c.note)
        caption = f"{title}: Pass@1 against total cost. Pareto frontier: {_frontier_text(points, with_post_paper)}"
        sections += [
            (title, report_html.table_html(main) + notes + report_html.files_html(written[name], out)
             + report_html.figure_html(written[figure], out, caption)),
            (f"{title}, per language", report_html.table_html(langs, header)
             + report_html.files_html(written[f"{name}_languages"], out)
             + report_html.figure_html(written[f"{name}_language_chart"], out, f"{title}: Pass@1 per language")),
        ]
    index = out / "index.html"
    write_atomic(index, report_html.page("Claw-SWE-Bench: published results, regenerated", sections,
                                  f"Source: {source.name}."))
    written["html"] = [index]
    return written


def _frontier_text(points: list[plots.Point], with_post_paper: bool = False) -> str:
    return "; ".join(config_label(p.harness, p.model) for p in plots.frontier(points, with_post_paper)) or "none"


def run_report(run_dirs: list[Path], args: argparse.Namespace) -> dict[str, list[Path]]:
    """Claw-SWE-Bench's part of `clawswe report`: its runs (or, with --published swe, the paper's tables)."""
    out = Path(args.out)
    if not 0 < args.confidence < 1:
        raise UserError("give --confidence as a fraction between 0 and 1, e.g. 0.95")
    if args.published:
        written = build_published_report(out, with_post_paper=args.with_post_paper)
        print((out / "table3.md").read_text())
        table3, _ = plots.points_from_columns(published.table_columns(published.load_published(), "table3"))
        print(f"Figure 1 Pareto frontier (Table 3, cost vs Pass@1): {_frontier_text(table3)}\n")
        return written
    try:
        prices = PriceBook.from_file(args.prices) if args.prices else None
        runs = load_runs(list(run_dirs) + list(args.compare or []), prices)
    except (NoRunsError, PriceFileError) as exc:
        raise UserError(str(exc)) from exc
    compare = None
    if args.compare:
        by_path = {run.path: run for run in runs}
        first, second = (by_path.get(Path(p).resolve()) for p in args.compare)
        if first is None or second is None:
            raise UserError("--compare takes two run directories (each with its own instances/ folder)")
        compare = (first, second)
    written = build_report(runs, out, compare, args.confidence)
    print(written["main"][1].read_text())
    if "comparisons" in written:
        print(written["comparisons"][1].read_text())
    return written
