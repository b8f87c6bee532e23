"""Writes this task repo (tasks/<id>/) from the project below: `python tests/data/health-tasks/generate.py`.

Four instances of one small Python project (tally), made the way instances/demo is (history and future as patch
series that make_history.sh replays inside the image, so base_commit is the same everywhere), for the health
check's tests (tests/test_health_docker.py):

- tally-py-1, tally-py-2: healthy (the gold patch resolves them, the base commit does not);
- tally-py-3: flaky on purpose: three PASS_TO_PASS tests assume `random.choice` picks the first of two values,
  so each fails on a fair coin toss (os.urandom, fresh in every container): a run passes all three one time in
  eight, and three gold and three nop runs miss the flips with probability (1/4)**6 per test set, 1/4096;
- tally-py-4: broken on purpose: its gold patch rounds the median of an even count down, so the FAIL_TO_PASS
  test that wants 2.5 fails every time.

Writing is deterministic (fixed authors and dates): running it again changes nothing.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
MAKE_HISTORY = HERE.parents[2] / "instances" / "demo" / "tools" / "make_history.sh"
AUTHOR = ("Ines Okafor", "ines.okafor@clawswe.invalid")
REPO = "clawswe/tally-py"
EOF_MARK = "EOF_114329324912"

INIT = 'from .stats import clamp, mean, median\n\n__all__ = ["clamp", "mean", "median"]\n'
STATS = '''"""Small statistics over lists of numbers."""


def mean(values):
    values = list(values)
    if not values:
        raise ValueError("mean of no values")
    return sum(values) / len(values)


def median(values):
    ordered = sorted(values)
    if not ordered:
        raise ValueError("median of no values")
    return ordered[len(ordered) // 2]


def clamp(value, low, high):
    return max(low, min(value, high))
'''
TESTS = '''import pytest

from tally import clamp, mean, median


def test_mean():
    assert mean([1, 2, 3, 4]) == 2.5


def test_mean_of_nothing():
    with pytest.raises(ValueError):
        mean([])


def test_median_odd_count():
    assert median([3, 1, 2]) == 2


def test_median_of_nothing():
    with pytest.raises(ValueError):
        median([])


def test_clamp_inside():
    assert clamp(5, 0, 10) == 5


def test_clamp_below_and_above():
    assert (clamp(-1, 0, 10), clamp(11, 0, 10)) == (0, 10)
'''
SAMPLE = '''"""Sampling helpers."""
import random


def pick(values):
    return random.choice(list(values))
'''
# made flaky on purpose: each assumes the pick is the first value, true on a fair coin toss
SAMPLE_TESTS = '''import pytest

from tally.sample import pick


@pytest.mark.parametrize("round_", [1, 2, 3])
def test_pick_keeps_the_first(round_):
    assert pick([1, 2]) == 1
'''
MEDIAN_EVEN = '''

def test_median_even_count():
    assert median([4, 1, 3, 2]) == 2.5
    assert median([1, 2]) == 1.5
'''
CLAMP_BOUNDS = '''

def test_clamp_refuses_crossed_bounds():
    with pytest.raises(ValueError):
        clamp(5, 10, 0)
'''
MEDIAN_FIX = ("    return ordered[len(ordered) // 2]\n",
              "    middle = len(ordered) // 2\n    if len(ordered) % 2:\n        return ordered[middle]\n"
              "    return (ordered[middle - 1] + ordered[middle]) / 2\n")
MEDIAN_FIX_FLOORED = (MEDIAN_FIX[0], MEDIAN_FIX[1].replace(") / 2\n", ") // 2\n"))
CLAMP_FIX = ("    return max(low, min(value, high))\n",
             "    if low > high:\n        raise ValueError(f\"clamp: low {low} is above high {high}\")\n"
             "    return max(low, min(value, high))\n")
MEDIAN_ISSUE = ("The median of an even number of values is wrong\n\n`tally.median([1, 2])` returns 2, and "
                "`median([4, 1, 3, 2])` returns 3. For an even count the median is the mean of the two middle "
                "values: 1.5 and 2.5.\n")
CLAMP_ISSUE = ("clamp accepts crossed bounds\n\n`tally.clamp(5, 10, 0)` returns 10 without a word. Bounds whose low "
               "end is above the high end are a caller's mistake: raise ValueError.\n")
BASE_TESTS = ["test_mean", "test_mean_of_nothing", "test_median_odd_count", "test_median_of_nothing",
              "test_clamp_inside", "test_clamp_below_and_above"]
COINS = [f"tests/test_sample.py::test_pick_keeps_the_first[{n}]" for n in (1, 2, 3)]

# id -> (issue, the fix (old, new) in tally/stats.py, the test added to tests/test_stats.py, its name, sampling)
INSTANCES = {
    "clawswe__tally-py-1": (MEDIAN_ISSUE, MEDIAN_FIX, MEDIAN_EVEN, "test_median_even_count", False),
    "clawswe__tally-py-2": (CLAMP_ISSUE, CLAMP_FIX, CLAMP_BOUNDS, "test_clamp_refuses_crossed_bounds", False),
    "clawswe__tally-py-3": (MEDIAN_ISSUE, MEDIAN_FIX, MEDIAN_EVEN, "test_median_even_count", True),
    "clawswe__tally-py-4": (MEDIAN_ISSUE, MEDIAN_FIX_FLOORED, MEDIAN_EVEN, "test_median_even_count", False),
}
DOCKERFILE = """FROM debian:bookworm-slim
# The same first layer as instances/demo's Python image (built once, shared).
RUN mkdir -p /usr/share/man/man1 \\
 && apt-get update \\
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends git python3 python3-pytest \\
 && rm -rf /var/lib/apt/lists/*
ENV PYTHONDONTWRITEBYTECODE=1
COPY make_history.sh /tmp/src/
COPY history /tmp/src/history
COPY future /tmp/src/future
RUN sh /tmp/src/make_history.sh /tmp/src /testbed develop v0.2.0 \\
 && rm -rf /tmp/src
WORKDIR /testbed
STOPSIGNAL SIGKILL
"""


def git(repo: Path, *args: str, date: str = "2024-03-01T10:00:00+0100") -> str:
    env = {**os.environ, "GIT_AUTHOR_NAME": AUTHOR[0], "GIT_AUTHOR_EMAIL": AUTHOR[1], "GIT_AUTHOR_DATE": date,
           "GIT_COMMITTER_NAME": AUTHOR[0], "GIT_COMMITTER_EMAIL": AUTHOR[1], "GIT_COMMITTER_DATE": date}
    return subprocess.run(["git", "-c", "commit.gpgsign=false", *args], cwd=repo, env=env, check=True,
                          capture_output=True, text=True).stdout


def commit(repo: Path, files: dict[str, str], message: str, date: str) -> None:
    for name, text in files.items():
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / name).write_text(text)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", message, date=date)


def eval_script(base: str, test_patch: str, test_files: list[str]) -> str:
    files = " ".join(test_files)
    return (f"#!/bin/bash\nset -uxo pipefail\nexec 2>&1\ncd /testbed\n"
            f"git config --global --add safe.directory /testbed\ngit status\ngit show --stat HEAD\n"
            f"git -c core.fileMode=false diff {base}\ngit checkout {base} -- {files}\n"
            f"git apply -v - <<'{EOF_MARK}'\n{test_patch}{EOF_MARK}\n: '>>>>> Start Test Output'\n"
            f"python3 -m pytest -rA -p no:cacheprovider tests\n: '>>>>> End Test Output'\n"
            f"git checkout {base} -- {files}\n")


def write_task(iid: str, issue: str, fix: tuple[str, str], test: str, test_name: str, sampling: bool) -> None:
    folder = HERE / "tasks" / iid
    shutil.rmtree(folder, ignore_errors=True)
    (folder / "history").mkdir(parents=True)
    (folder / "future").mkdir()
    with tempfile.TemporaryDirectory() as tmp:
        repo = Path(tmp, "repo")
        repo.mkdir()
        git(repo, "init", "-q")
        git(repo, "symbolic-ref", "HEAD", "refs/heads/main")
        commit(repo, {"tally/__init__.py": INIT, "tally/stats.py": STATS, "tests/test_stats.py": TESTS,
                      ".gitignore": "__pycache__/\n"}, "Add mean, median and clamp", "2024-02-12T09:30:00+0100")
        if sampling:
            commit(repo, {"tally/sample.py": SAMPLE, "tests/test_sample.py": SAMPLE_TESTS}, "Add pick",
                   "2024-02-20T16:05:00+0100")
        git(repo, "checkout", "-q", "-b", "develop")
        commit(repo, {"tally/stats.py": STATS.replace(*fix), "tests/test_stats.py": TESTS + test},
               issue.splitlines()[0], "2024-03-04T11:00:00+0100")
        commit(repo, {"CHANGELOG.md": "# Changelog\n\n## 0.2.0\n- " + issue.splitlines()[0] + "\n"},
               "Release 0.2.0", "2024-03-05T12:00:00+0100")
        fix_commit = git(repo, "rev-parse", "develop~1").strip()
        for sub, spec in (("history", ["--root", "main"]), ("future", ["main..develop"])):
            git(repo, "format-patch", "-q", "--no-signature", "--zero-commit", "-o", str(folder / sub), *spec)
        gold = git(repo, "diff", "main", fix_commit, "--", "tally")
        test_patch = git(repo, "diff", "main", fix_commit, "--", "tests")
        shutil.copy(MAKE_HISTORY, folder / "make_history.sh")
        replayed = Path(tmp, "replayed")
        subprocess.run(["sh", str(folder / "make_history.sh"), str(folder), str(replayed), "develop", "v0.2.0"],
                       check=True, capture_output=True)
        base = git(replayed, "rev-parse", "main").strip()
    p2p = [f"tests/test_stats.py::{name}" for name in BASE_TESTS] + (COINS if sampling else [])
    task = {"instance_id": iid, "repo": REPO, "version": "0.1", "base_commit": base,
            "created_at": "2024-03-01T09:00:00Z", "split": "test",
            "image": f"swebench/sweb.eval.x86_64.{iid.replace('__', '_1776_')}:latest", "log_parser": "parse_log_pytest",
            "eval_type": "pass_and_fail", "datasets": ["clawswe/tally-health"], "language": "Python"}
    from swebench.task.repo import dump_yaml

    (folder / "task.yaml").write_text(dump_yaml(task))
    (folder / "tests.json").write_text(json.dumps({"FAIL_TO_PASS": [f"tests/test_stats.py::{test_name}"],
                                                   "PASS_TO_PASS": sorted(p2p)}, indent=2) + "\n")
    (folder / "gold.patch").write_text(gold)
    (folder / "test.patch").write_text(test_patch)
    (folder / "eval.sh").write_text(eval_script(base, test_patch, ["tests/test_stats.py"]))
    (folder / "problem_statement.md").write_text(issue)
    (folder / "Dockerfile").write_text(DOCKERFILE)


def main() -> None:
    (HERE / "sweb.yaml").write_text("# the health check's test set (generate.py)\ndatasets: [clawswe/tally-health]\n"
                                    "splits: [test]\n")
    for iid, spec in INSTANCES.items():
        write_task(iid, *spec)


if __name__ == "__main__":
    main()
