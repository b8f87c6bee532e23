"""`clawswe grid`: several harness-model columns over one dataset, in an order that keeps images hot.

    clawswe grid --column oracle --column claude-code/scripted/gold --dataset demo --out grids/demo \\
        [--chunk 25] [--instance-ids ID,...] [--dry-run] [-- PYTEST OPTIONS]

The instances are cut into chunks (default: one chunk, all of them); for each chunk every column runs before
the next chunk starts, each column as its own pytest run in OUT/<column>/ (`--run-dir` the first time,
`--resume` after). So an instance image and its prepared image are made once per engine for the chunk and
used by every column while they are on disk: give a chunk that fits --image-cache (or the disk), and pass the
same --docker-host/--registry/--image-cache options to every column after `--`. Each column resumes on its
own: run the same command again and finished items are kept, the rest run (OUT/grid.json records the plan and
which chunk of which column has ended). A usage error or an interrupt stops the grid; failed items do not.
"""
from __future__ import annotations

import json
import re
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from pytest_clawswe.errors import UserError

PLAN = "grid.json"
STOP_CODES = (2, 3, 4)  # pytest: interrupted, internal error, usage error (1 = some items failed: go on)


@dataclass
class Column:
    harness: str
    model: str = ""
    tag: str = ""  # tells apart columns of the same harness and model (`clawswe health`: each repeat, r1, r2, ...)
    options: list[str] = field(default_factory=list)  # --harness-option KEY=VALUE of this column's runs

    @classmethod
    def parse(cls, text: str) -> "Column":
        harness, _, model = text.strip().partition("/")
        if not harness:
            raise UserError(f"--column {text!r}: give HARNESS or HARNESS/MODEL, e.g. claude-code/scripted/gold")
        return cls(harness, model)

    @property
    def name(self) -> str:
        text = f"{self.harness}_{self.model}" if self.model else self.harness
        return re.sub(r"[^A-Za-z0-9_.-]+", "-", f"{text}.{self.tag}" if self.tag else text)


@dataclass
class Plan:
    dataset: str
    columns: list[Column]
    chunks: list[list[str]]
    pytest_args: list[str] = field(default_factory=list)
    done: dict[str, list[int]] = field(default_factory=dict)  # column name -> chunks that ended

    def command(self, out: Path, column: Column, chunk: int) -> list[str]:
        run_dir = out / column.name
        where = ["--resume", str(run_dir)] if (run_dir / "run.json").is_file() else ["--run-dir", str(run_dir)]
        model = ["--model", column.model] if column.model else []
        model += [arg for option in column.options for arg in ("--harness-option", option)]
        return [sys.executable, "-m", "pytest", "--harness", column.harness, *model, "--dataset", self.dataset,
                "--instance-ids", ",".join(self.chunks[chunk]), *where, "-p", "no:cacheprovider",
                *self.pytest_args]

    def save(self, out: Path) -> None:
        out.mkdir(parents=True, exist_ok=True)
        tmp = out / (PLAN + ".tmp")
        tmp.write_text(json.dumps(asdict(self), indent=2) + "\n")
        tmp.replace(out / PLAN)

    @classmethod
    def load(cls, out: Path) -> "Plan | None":
        path = out / PLAN
        if not path.is_file():
            return None
        data = json.loads(path.read_text())
        return cls(data["dataset"], [Column(**c) for c in data["columns"]], data["chunks"],
                   data.get("pytest_args", []), data.get("done", {}))


def make_plan(dataset: str, columns: list[Column], chunk: int | None, ids: list[str] | None,
              pytest_args: list[str]) -> Plan:
    from pytest_clawswe.errors import DatasetError
    from pytest_clawswe.swe.dataset import load_instances

    try:
        known = [i.instance_id for i in load_instances(dataset)]
    except (DatasetError, OSError, ValueError) as exc:
        raise UserError(f"--dataset {dataset}: {exc}") from None
    if ids:
        unknown = sorted(set(ids) - set(known))
        if unknown:
            raise UserError(f"{dataset} has no instance {unknown[0]}; give ids of the dataset")
        known = [i for i in known if i in set(ids)]
    if not known:
        raise UserError(f"{dataset} selects no instance")
    size = chunk or len(known)
    names = [c.name for c in columns]
    if len(set(names)) != len(names):
        raise UserError("a column is given twice; give each harness-model column once")
    return Plan(dataset, columns, [known[i:i + size] for i in range(0, len(known), size)], pytest_args)


def run(plan: Plan, out: Path, dry_run: bool = False, echo=print, name: str = "grid") -> int:
    """Every (chunk, column) that has not ended, chunk by chunk; returns the first stopping exit code or 0."""
    for n in range(len(plan.chunks)):
        for column in plan.columns:
            if n in plan.done.get(column.name, []):
                continue
            cmd = plan.command(out, column, n)
            echo(f"[{name}] chunk {n + 1}/{len(plan.chunks)} column {column.name}: {' '.join(cmd[2:])}")
            if dry_run:
                continue
            started = time.monotonic()
            code = subprocess.run(cmd).returncode
            echo(f"[{name}] chunk {n + 1} column {column.name} ended with exit code {code} in "
                 f"{time.monotonic() - started:.0f}s")
            if code in STOP_CODES:
                return code
            plan.done.setdefault(column.name, []).append(n)
            plan.save(out)
    return 0


def _cmd_grid(args) -> int:
    out = Path(args.out)
    columns = [Column.parse(c) for c in args.column]
    ids = [i for part in (args.instance_ids or []) for i in re.split(r"[\s,]+", part) if i] or None
    fresh = make_plan(args.dataset, columns, args.chunk, ids, list(args.pytest_args))
    stored = Plan.load(out)
    if stored is not None:
        if (stored.dataset, stored.columns, stored.chunks) != (fresh.dataset, fresh.columns, fresh.chunks):
            raise UserError(f"{out} holds another grid ({PLAN}); resume it with its own columns, dataset and "
                            "chunks, or give another --out")
        stored.pytest_args = fresh.pytest_args
        fresh = stored
    elif not args.dry_run:
        fresh.save(out)
    return run(fresh, out, args.dry_run)


def add_cli(subparsers) -> None:
    grid = subparsers.add_parser("grid", help="run several harness-model columns, chunk by chunk, images hot")
    grid.add_argument("--column", action="append", required=True, metavar="HARNESS[/MODEL]",
                      help="a harness-model column (repeatable), e.g. oracle or claude-code/scripted/gold")
    grid.add_argument("--dataset", default="demo", help="as pytest's --dataset (default: %(default)s)")
    grid.add_argument("--instance-ids", nargs="+", metavar="ID", help="only these instances")
    grid.add_argument("--chunk", type=int, metavar="N",
                      help="instances per chunk: every column runs a chunk before the next (default: all at once)")
    grid.add_argument("--out", required=True, help="the grid's folder: one run folder per column, and grid.json")
    grid.add_argument("--dry-run", action="store_true", help="print the pytest commands, run nothing")
    grid.add_argument("pytest_args", nargs="*", metavar="-- PYTEST OPTIONS",
                      help="options for every column's pytest run, after --, e.g. -- --image-cache 50g -n 4")
    grid.set_defaults(func=_cmd_grid)
