"""`clawswe report`: the runs given, grouped by the benchmark that made them, each reported by its benchmark.

    clawswe report RUN_DIR... [--out DIR] [--compare A B] [--prices FILE] [--confidence C]
    clawswe report --published [swe|wildclaw] [--out DIR]

Runs of one benchmark: that benchmark's report in DIR (its tables, figures and index.html). Runs of several:
each benchmark's report in DIR/<benchmark>/ and DIR/index.html with a section per benchmark (its harness x
model table and a link to its page). The benchmark of a run is read from its run.json (Benchmark.owns).
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path

from pytest_clawswe.errors import UserError
from pytest_clawswe.files import write_atomic
from pytest_clawswe.run.benchmark import Benchmark, benchmark_classes

DEFAULT_OUT = "clawswe-report"


def find_runs(paths: list[str], classes: list[type[Benchmark]]) -> list[Path]:
    """The run folders given, or found one level below a given folder (a folder of runs, or of repeats)."""
    def is_run(path: Path) -> bool:
        return any(cls.is_run_dir(path) for cls in classes)

    found = []
    for path in map(Path, paths):
        if not path.is_dir():
            raise UserError(f"{path} is not a directory; give the run directory of a benchmark run")
        if is_run(path):
            found.append(path.resolve())
            continue
        inner = sorted(c.resolve() for c in path.iterdir() if c.is_dir() and is_run(c))
        if not inner:
            raise UserError(f"{path} holds no benchmark run (no run.json); give a run directory")
        found += inner
    return list(dict.fromkeys(found))


def group_by_benchmark(runs: list[Path], classes: list[type[Benchmark]]) -> dict[type[Benchmark], list[Path]]:
    groups: dict[type[Benchmark], list[Path]] = {}
    for run in runs:
        try:
            info = json.loads((run / "run.json").read_text()) if (run / "run.json").is_file() else {}
        except (OSError, ValueError) as exc:
            raise UserError(f"{run / 'run.json'} cannot be read ({exc}); give run folders written by a run") from None
        owner = next((cls for cls in classes if cls.owns(info) and cls.is_run_dir(run)), None)
        if owner is None:
            raise UserError(f"{run} is a run of benchmark {info.get('benchmark')!r}, which is not installed; "
                            f"installed: {', '.join(cls.name for cls in classes)}")
        groups.setdefault(owner, []).append(run)
    return groups


def run_report(args: argparse.Namespace) -> int:
    out = Path(args.out)
    classes = {cls.name: cls for cls in benchmark_classes()}
    if args.published:
        if args.run_dirs or args.compare:
            raise UserError("--published regenerates the published tables alone; report runs in a separate call")
        if args.published not in classes:
            raise UserError(f"--published {args.published}: give one of {', '.join(classes)}")
        _print_written(classes[args.published].report([], args))
        return 0
    if not args.run_dirs:
        raise UserError("give at least one run directory (clawswe report RUN_DIR...), or --published")
    groups = group_by_benchmark(find_runs(args.run_dirs, list(classes.values())), list(classes.values()))
    if len(groups) == 1:
        (cls, paths), = groups.items()
        _print_written(cls.report(paths, args))
        return 0
    if args.compare:
        raise UserError("--compare pairs two runs of one benchmark; report the runs of each benchmark in its own call "
                        "to compare them")
    sections = []
    for cls, paths in sorted(groups.items(), key=lambda kv: kv[0].name):
        sub = argparse.Namespace(**{**vars(args), "out": str(out / cls.name)})
        written = cls.report(paths, sub)
        _print_written(written)
        sections.append((cls, paths, written))
    index = out / "index.html"
    write_atomic(index, _overview_page(sections, out))
    print(f"wrote {index}")
    return 0


def _overview_page(sections, out: Path) -> str:
    """One page over the benchmarks: each one's harness x model table and a link to its own page."""
    import pandas as pd

    from pytest_clawswe.report.html import page, table_html

    parts = []
    for cls, paths, written in sections:
        main = written.get("main")
        table = table_html(pd.read_csv(main[0])) if main else ""
        link = Path(cls.name) / "index.html"
        parts.append((f"{cls.title} ({len(paths)} run(s))", table + _link(link, f"the whole {cls.title} report")))
    return page("Benchmark report", parts, f"{sum(len(p) for _, p, _ in sections)} run(s) of "
                f"{len(sections)} benchmarks.")


def _link(href: Path, text: str):
    from markupsafe import Markup, escape

    return Markup(f'<p><a href="{escape(str(href))}">{escape(text)}</a></p>')


def _print_written(written: dict[str, list[Path]]) -> None:
    for paths in written.values():
        for path in paths:
            print(f"wrote {path}")


def add_cli(subparsers) -> None:
    parser = subparsers.add_parser(
        "report", help="tables, plots and an HTML report across runs (of one benchmark or several)",
        description="Turn benchmark runs into the papers' tables (Markdown, CSV), figures and a static HTML "
                    "report. Runs of the same harness and model are treated as repeats; runs of several benchmarks "
                    "get a report each and one page over them.")
    parser.add_argument("run_dirs", nargs="*", metavar="RUN_DIR",
                        help="run directories, or directories that contain runs")
    parser.add_argument("--out", default=DEFAULT_OUT, help=f"output directory (default: ./{DEFAULT_OUT})")
    parser.add_argument("--compare", nargs=2, metavar=("A", "B"),
                        help="compare these two runs on their common instances (paired test)")
    parser.add_argument("--published", nargs="?", const="swe", metavar="BENCHMARK",
                        help="regenerate a benchmark's published tables and figures (swe, the default: Tables 2 "
                             "and 3 and the Figure 1 frontier; wildclaw: the leaderboard and harness table)")
    parser.add_argument("--with-post-paper", action="store_true",
                        help="with --published: let post-paper rows (e.g. GLM 5.2) into the Pareto frontier")
    parser.add_argument("--prices", metavar="FILE",
                        help="re-price every instance from its token usage with these prices (YAML/JSON)")
    parser.add_argument("--confidence", type=float, default=0.95,
                        help="confidence level of the paired intervals (default: 0.95)")
    parser.set_defaults(func=run_report)
