"""`clawswe wildclaw ...`: the jobs around a WildClawBench run (running it is `pytest --benchmark wildclaw`).

    clawswe wildclaw standin PATH     # empty stand-in workspaces where the suite's data was not downloaded
    clawswe wildclaw check PATH       # set up every task without an agent: a readiness table
"""
from __future__ import annotations

import time
from pathlib import Path

from pytest_clawswe.errors import UserError


def add_cli(sub) -> None:
    p = sub.add_parser("wildclaw", help="WildClawBench suites: stand-in workspaces, a setup check")
    wsub = p.add_subparsers(dest="wildclaw_command", required=True)
    c = wsub.add_parser("check", help="set up every task (image, workspace, services, Warmup, skills) without an "
                                      "agent and print a readiness table ending with 'ready: N of M'")
    c.add_argument("path", help="a checkout of the suite (tasks/, workspace/, skills/) or a folder of task files")
    c.add_argument("-j", "--jobs", type=int, default=2, help="tasks set up at once (default: %(default)s)")
    c.add_argument("--harness", default="openclaw", choices=("openclaw", "claude-code", "codex", "hermes"),
                   help="whose skill folder the skills are copied to (default: %(default)s)")
    c.add_argument("--task-image", help="the image tasks run in, e.g. a released one (default: ours, built on "
                                        "first use)")
    c.set_defaults(func=_check)
    s = wsub.add_parser("standin", help="give every task without a workspace an empty exec/ and gt/ (and empty "
                                        "mock-service fixtures), marked as stand-ins; nothing existing is touched")
    s.add_argument("path", help="a checkout of the suite or a folder of task files")
    s.set_defaults(func=_standin)


def _root(text: str) -> Path:
    path = Path(text)
    if not path.is_dir():
        raise UserError(f"{text} is not a folder; give a checkout of the suite (with tasks/) or a folder of task files")
    return path.resolve()


def _check(args) -> int:
    from pytest_clawswe.engine.docker.client import docker_client
    from pytest_clawswe.wildclaw.suite.check import check_suite, table

    root = _root(args.path)
    if args.jobs < 1:
        raise UserError(f"--jobs {args.jobs}: give 1 or more")
    begin = time.monotonic()
    rows = check_suite(docker_client(), root, jobs=args.jobs, harness=args.harness, task_image=args.task_image)
    print(table(rows))
    print(f"checked in {time.monotonic() - begin:.0f} s")
    return 0 if all(r.ready for r in rows) else 1


def _standin(args) -> int:
    from pytest_clawswe.wildclaw.suite.offline_workspaces import make_standins

    done = make_standins(_root(args.path))
    for sentence in done.refused:
        print(f"skipped: {sentence}")
    print(f"stand-in workspaces: {len(done.created)} made, {len(done.kept)} real ones kept, "
          f"{len(done.fixtures)} empty mock-service fixture(s)")
    return 1 if done.refused else 0
