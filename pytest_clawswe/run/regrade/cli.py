"""`clawswe regrade RUN [--out DIR] [OPTIONS]`: grade a finished run again, without an agent, into a new folder.

It runs `pytest --regrade RUN --run-dir DIR` (run/regrade/), so a regrade is a run like any other: -k and -m select
items, -n grades several at once, the terminal summary, JUnit and the run's files are a run's, and the same command
again resumes it (--resume DIR when DIR holds the regrade already). Options it does not know go to pytest: a
benchmark's grading options (WildClawBench: --judge-model, --scripted-fixtures, --grade-timeout, --pass-score;
Claw-SWE-Bench: --eval-timeout), --dataset where the suite or dataset is now, -k, -m, -n, --junitxml, ...
"""
from __future__ import annotations

import argparse
import shlex
import subprocess
import sys
import time
from pathlib import Path


def command(run: Path, out: Path, extra: list[str]) -> list[str]:
    where = ["--resume", str(out)] if (out / "run.json").is_file() else ["--run-dir", str(out)]
    return [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--regrade", str(run), *where,
            *[a for a in extra if a != "--"]]


def default_out(run: Path) -> Path:
    return run.resolve().parent / f"{run.resolve().name}.regrade-{time.strftime('%Y%m%d-%H%M%S')}"


def _run(args: argparse.Namespace) -> int:
    run = Path(args.run)
    out = Path(args.out) if args.out else default_out(run)
    cmd = command(run, out, args.extra)
    if args.dry_run:
        print(shlex.join(cmd))
        return 0
    return subprocess.run(cmd).returncode


def add_cli(sub) -> None:
    p = sub.add_parser("regrade", help="grade a finished run again, without an agent, into a new run folder",
                       description=__doc__.split("\n\n")[0] + " " + " ".join(__doc__.split("\n\n")[1].split()))
    p.add_argument("run", metavar="RUN", help="the folder of a finished run (only read)")
    p.add_argument("--out", metavar="DIR", help="the new run's folder (default: RUN.regrade-<time> beside RUN); the "
                                                "same --out again resumes it")
    p.add_argument("--dry-run", action="store_true", help="print the pytest command, run nothing")
    p.set_defaults(func=_run, pass_through=True)  # what it does not know goes to pytest (cli.main)
