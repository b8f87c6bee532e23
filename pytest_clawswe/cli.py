"""The `clawswe` command: the jobs around a run (images, harness bundles, reports, Lite, clean-up).

Running the benchmark itself is `pytest --harness ...`; this command never duplicates that.
Each subcommand lives in the module that does the work and registers itself through `add_cli`.
"""
from __future__ import annotations

import argparse
import importlib
import sys

from pytest_clawswe.errors import UserError

# the core's commands: module -> it defines add_cli(subparsers), and the parsers it adds set `func(args) -> int`;
# each installed benchmark adds its own (Benchmark.add_cli)
COMMAND_MODULES = ["harness.cli", "report.cli", "report.compare", "run.clean", "report.export",
                   "trajectory.view", "run.regrade.cli"]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="clawswe", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    for name in COMMAND_MODULES:
        importlib.import_module(f"pytest_clawswe.{name}").add_cli(sub)
    from pytest_clawswe.run.benchmark import benchmark_classes

    for benchmark in benchmark_classes():
        benchmark.add_cli(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args, extra = parser.parse_known_args(argv)
    if extra and not getattr(args, "pass_through", False):  # (a command that hands options on takes them: regrade)
        parser.error(f"unrecognized arguments: {' '.join(extra)}")
    args.extra = extra
    try:
        return int(args.func(args) or 0)
    except UserError as exc:
        print(f"clawswe: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("clawswe: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
