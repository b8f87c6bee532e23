"""The oracle under load: every verdict must be "resolved" (issue 32 §4's done-when figure).

    python benchmarks/bench_oracle_load.py [--rounds 10] [--workers 3] [--load nop|none]

Each round runs the oracle (the gold patch, through the normal patch collection and SWE-bench grading) with
`--workers` xdist workers over the demo set and over a task repo made here (three instances of a small Python
project whose gold diffs are a few hundred KiB and whose test runs print a line per test: large answers on every
stream), while another run loads the same engine: a loop of `--harness nop` runs over both (containers made, purge
checks, collections, removals, in two workers). The oracle resolves every instance, so any other verdict
(unresolved, apply failed) is a false verdict; an error is the machinery saying it could not tell (counted apart).
The machine's other users load it as well: the load average is kept per round.

Writes benchmarks/results/oracle_load.json. Needs Docker and the demo images (built on first use).
"""
from __future__ import annotations

import argparse
import csv
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

RESULTS = Path(__file__).parent / "results" / "oracle_load.json"
INSTANCES = 3
DATES = {"GIT_AUTHOR_DATE": "2024-03-01T12:00:00Z", "GIT_COMMITTER_DATE": "2024-03-01T12:00:00Z"}
IDENTITY = {"GIT_AUTHOR_NAME": "clawswe bench", "GIT_AUTHOR_EMAIL": "bench@clawswe.invalid",
            "GIT_COMMITTER_NAME": "clawswe bench", "GIT_COMMITTER_EMAIL": "bench@clawswe.invalid"}
# the demo's Python image's first steps, word for word: the build reuses its layers (no download)
DOCKERFILE = """FROM debian:bookworm-slim
RUN mkdir -p /usr/share/man/man1 \\
 && apt-get update \\
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends git python3 python3-pytest \\
 && rm -rf /var/lib/apt/lists/*
ENV PYTHONDONTWRITEBYTECODE=1
COPY repo.bundle /tmp/repo.bundle
RUN git clone -q -b main /tmp/repo.bundle /testbed && rm /tmp/repo.bundle \\
 && cd /testbed && git branch -q develop origin/develop && git remote remove origin
WORKDIR /testbed
STOPSIGNAL SIGKILL
"""
TABLE = '''def widths(rows):
    """The width of each column: its longest cell."""
    return [max(len(str(row[c])) for row in rows) for c in range(len(rows[0]) - 1)]


def render(rows):
    w = widths(rows)
    return "\\n".join(" | ".join(str(cell).ljust(w[c]) for c, cell in enumerate(row)) for row in rows)
'''
TESTS = '''import pytest

from pkg.table import widths


@pytest.mark.parametrize("n", range(200))
def test_first_column_width(n):
    assert widths([["x" * n, "y"], ["z", "w"]])[0] == max(n, 1)
'''
NEW_TESTS = '''

@pytest.mark.parametrize("n", range(50))
def test_render_pads_every_column(n):
    from pkg.table import render

    lines = render([["a", "b" * n], ["cc", "d"]]).splitlines()
    assert len(lines[0]) == len(lines[1])
'''
EVAL = """#!/bin/bash
set -uxo pipefail
cd /testbed
git config --global --add safe.directory /testbed
git status
git -c core.fileMode=false diff {base}
git checkout {base} -- tests/test_table.py
git apply -v - <<'EOF_CLAWSWE_BENCH'
{test_patch}EOF_CLAWSWE_BENCH
: '>>>>> Start Test Output'
python3 -m pytest -rA -p no:cacheprovider tests
: '>>>>> End Test Output'
git checkout {base} -- tests/test_table.py
"""


def _git(repo: Path, *args: str) -> str:
    env = {**os.environ, **IDENTITY, **DATES, "GIT_CONFIG_GLOBAL": "/dev/null", "GIT_CONFIG_NOSYSTEM": "1"}
    return subprocess.run(["git", *args], cwd=repo, env=env, check=True, capture_output=True, text=True).stdout


def _commit_all(repo: Path, message: str) -> str:
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", message)
    return _git(repo, "rev-parse", "HEAD").strip()


def _diff(repo: Path, a: str, b: str, *paths: str) -> str:
    return _git(repo, "diff", "--no-color", a, b, "--", *paths)


def make_task_repo(dest: Path) -> Path:
    """A swebench 5 task repo of INSTANCES instances; the same files every time (fixed dates and names)."""
    (dest / "tasks").mkdir(parents=True)
    (dest / "sweb.yaml").write_text("datasets: [clawswe/bench-oracle-load]\nsplits: [test]\n")
    for number in range(1, INSTANCES + 1):
        iid, work = f"clawswe__tablefmt-py-{number}", dest / f"work-{number}"
        (work / "pkg").mkdir(parents=True)
        (work / "tests").mkdir()
        _git(work, "init", "-q", "-b", "main")
        (work / "pkg" / "__init__.py").write_text("")
        (work / "pkg" / "table.py").write_text(TABLE)
        (work / "tests" / "test_table.py").write_text(TESTS)
        base = _commit_all(work, "A table renderer")
        # the fix, and a large generated file: the diff is read back in many frames
        (work / "pkg" / "table.py").write_text(TABLE.replace("range(len(rows[0]) - 1)", "range(len(rows[0]))"))
        (work / "pkg" / "codes.py").write_text("".join(f'CODE_{i:05d} = "{i * number:08x}-{"x" * 40}"\n'
                                                       for i in range(2000 * number)))
        fix = _commit_all(work, "Pad the last column too")
        (work / "tests" / "test_table.py").write_text(TESTS + NEW_TESTS)
        tests = _commit_all(work, "Test every column")
        gold, test_patch = _diff(work, base, fix), _diff(work, fix, tests)
        _git(work, "branch", "-q", "develop")  # the future, for the purge to remove
        _git(work, "reset", "-q", "--hard", base)
        task = dest / "tasks" / iid
        task.mkdir()
        _git(work, "bundle", "create", "-q", str(task / "repo.bundle"), "HEAD", "main", "develop")
        shutil.rmtree(work)
        (task / "Dockerfile").write_text(DOCKERFILE)
        (task / "gold.patch").write_text(gold)
        (task / "test.patch").write_text(test_patch)
        (task / "eval.sh").write_text(EVAL.format(base=base, test_patch=test_patch))
        (task / "problem_statement.md").write_text("render() raises IndexError: widths() leaves out the last column.\n")
        (task / "tests.json").write_text(json.dumps({
            "FAIL_TO_PASS": [f"tests/test_table.py::test_render_pads_every_column[{n}]" for n in range(50)],
            "PASS_TO_PASS": [f"tests/test_table.py::test_first_column_width[{n}]" for n in range(200)]}, indent=2))
        (task / "task.yaml").write_text(
            f"instance_id: {iid}\nrepo: clawswe/tablefmt-py\nversion: '0.1'\nbase_commit: {base}\n"
            f"created_at: '2024-03-01T12:00:00Z'\nsplit: test\n"
            f"image: swebench/sweb.eval.x86_64.clawswe_1776_tablefmt-py-{number}:latest\n"
            "log_parser: parse_log_pytest\neval_type: pass_and_fail\ndatasets:\n- clawswe/bench-oracle-load\n"
            "language: Python\n")
    return dest


def _pytest(*args: str, cwd: Path, timeout: float = 3600) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=timeout)


def verdicts(run_dir: Path) -> tuple[dict[str, str], list[str]]:
    """Each instance's outcome, and the errors' reasons."""
    path = run_dir / "results.csv"
    if not path.is_file():
        return {}, []
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    return {row["instance_id"]: row["outcome"] for row in rows}, [row["error"] for row in rows if row["error"]]


def load_loop(datasets: list[str], scratch: Path, stop: threading.Event, runs: list) -> None:
    """Another run on the same engine, again and again: nop over both sets, two workers."""
    n = 0
    while not stop.is_set():
        for dataset in datasets:
            if stop.is_set():
                return
            n += 1
            started = time.monotonic()
            done = _pytest("--dataset", dataset, "--harness", "nop", "-n", "2", "--run-dir",
                           str(scratch / f"load-{n}"), cwd=scratch)
            runs.append({"exit": done.returncode, "seconds": round(time.monotonic() - started, 1)})
            shutil.rmtree(scratch / f"load-{n}", ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--workers", type=int, default=3)
    parser.add_argument("--load", choices=("nop", "none"), default="nop")
    args = parser.parse_args()
    scratch = Path(tempfile.mkdtemp(prefix="clawswe-oracle-load-"))
    repo = str(make_task_repo(scratch / "task-repo"))
    datasets = ["demo", repo]
    stop, load_runs = threading.Event(), []
    loader = threading.Thread(target=load_loop, args=(datasets, scratch, stop, load_runs), daemon=True)
    rounds = []
    try:
        if args.load == "nop":
            loader.start()
        for number in range(1, args.rounds + 1):
            for dataset in datasets:
                run_dir = scratch / f"round-{number}-{'demo' if dataset == 'demo' else 'own'}"
                started = time.monotonic()
                done = _pytest("--dataset", dataset, "--harness", "oracle", "-n", str(args.workers), "--run-dir",
                               str(run_dir), cwd=scratch)
                seen, errors = verdicts(run_dir)
                rounds.append({"round": number, "dataset": "demo" if dataset == "demo" else "own (3 instances)",
                               "exit": done.returncode, "seconds": round(time.monotonic() - started, 1),
                               "load_average": os.getloadavg(), "verdicts": seen, "errors": errors[:5],
                               "tail": done.stdout.splitlines()[-3:] if done.returncode else []})
                print(json.dumps(rounds[-1]), flush=True)
    finally:
        stop.set()
        loader.join(timeout=1800)
    items = [outcome for r in rounds for outcome in r["verdicts"].values()]
    totals = {"items": len(items), "resolved": items.count("resolved"), "errors": items.count("error"),
              "false_verdicts": sum(1 for o in items if o not in ("resolved", "error")),
              "rounds": len(rounds), "load_runs": len(load_runs),
              "load_runs_failed": sum(1 for r in load_runs if r["exit"] not in (0, 1))}
    RESULTS.parent.mkdir(exist_ok=True)
    RESULTS.write_text(json.dumps({"settings": vars(args), "cpus": os.cpu_count(), "totals": totals,
                                   "rounds": rounds, "load_runs": load_runs}, indent=2) + "\n")
    print(json.dumps(totals, indent=2))
    shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
