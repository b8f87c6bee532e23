"""`clawswe export atif RUN [--out DIR]` (and `clawswe export harbor`, report/harbor.py): every item's trajectories of a run folder (either benchmark), rebuilt
from the gateway's record into the item folders (<item>/trajectory/attempt-<n>.atif.json), and with --out also
collected into DIR as <item id>.attempt-<n>.atif.json."""
from __future__ import annotations

import shutil
from pathlib import Path

from pytest_clawswe.errors import UserError
from pytest_clawswe.trajectory.store import write_for_item


def export(run_dir: Path, out: Path | None = None, prices_file: str | None = None) -> list[Path]:
    if not (run_dir / "gateway").is_dir():
        raise UserError(f"{run_dir} has no gateway/ folder: give a run folder of a harness that calls a model")
    from pytest_clawswe.prices import PriceBook

    prices = PriceBook.from_file(prices_file)
    from pytest_clawswe.files import load_run_info
    from pytest_clawswe.run.benchmark import benchmark_of

    benchmark = benchmark_of(load_run_info(run_dir))
    if benchmark is None:
        raise UserError(f"{run_dir}/run.json names no installed benchmark; give a run folder a run wrote")
    written = []
    for item_id, folder, result in benchmark.item_folders(run_dir):
        outcome = benchmark.trajectory_outcome(folder, result)
        for path in write_for_item(run_dir, benchmark.name, item_id, folder, result, outcome, prices=prices,
                                   timeout=0):
            if out is not None:
                out.mkdir(parents=True, exist_ok=True)
                target = out / f"{folder.name}.{path.name}"
                shutil.copyfile(path, target)
                path = target
            written.append(path)
    return written


def _cli(args) -> int:
    run_dir = Path(args.run)
    if not run_dir.is_dir():
        raise UserError(f"{run_dir} is not a folder: give a run folder (reports/<run id>)")
    written = export(run_dir, Path(args.out) if args.out else None, args.prices)
    print(f"{len(written)} ATIF trajectories written" + (f" to {args.out}" if args.out else " into the item folders"))
    return 0


def add_cli(sub) -> None:
    p = sub.add_parser("export", help="export runs: their trajectories (atif), or as Harbor jobs (harbor)")
    formats = p.add_subparsers(dest="format", required=True)
    atif = formats.add_parser("atif", help="one ATIF file per item and attempt, from the gateway's record")
    atif.add_argument("run", help="a run folder (reports/<run id>), either benchmark")
    atif.add_argument("--out", metavar="DIR", help="also collect the files into DIR")
    atif.add_argument("--prices", metavar="FILE", help="the run's --prices file, for per-step cost")
    atif.set_defaults(func=_cli)
    from pytest_clawswe.report import harbor

    harbor.add_cli(formats)
