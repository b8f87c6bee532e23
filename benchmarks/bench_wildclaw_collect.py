"""WildClawBench collection speed: a folder of 60 task files (the released suite's size, 6 categories).

Copies of the demo tasks are written under tasks/<NN_Category>/ with fresh ids, then timed two ways:
parsing all 60 files, pytest's collection hook in process (target < 1 s), and a whole
`pytest --benchmark wildclaw --collect-only` process (pytest's start-up and plugin loading included).

    python benchmarks/bench_wildclaw_collect.py [--repeats 5]

Writes benchmarks/results/wildclaw_collect.json (with the load average: the machine is shared).
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from pytest_clawswe.wildclaw.options import DEMO_DIR
from pytest_clawswe.wildclaw.task.file import parse_task, task_files

RESULTS = Path(__file__).parent / "results" / "wildclaw_collect.json"
CATEGORIES = ["01_Productivity_Flow", "02_Code_Intelligence", "03_Social_Interaction", "04_Search_Retrieval",
              "05_Creative_Synthesis", "06_Safety_Alignment"]
TARGET_S = 1.0


class CollectionTimer:
    seconds, items = 0.0, 0

    @pytest.hookimpl(hookwrapper=True)
    def pytest_collection(self, session):
        start = time.perf_counter()
        yield
        self.seconds = time.perf_counter() - start
        self.items = len(session.items)


def make_suite(root: Path, n: int = 60) -> None:
    demo = [p.read_text() for p in task_files(DEMO_DIR)]
    for i in range(n):
        cat = CATEGORIES[i % len(CATEGORIES)]
        text = demo[i % len(demo)]
        old_id = text.split("id: ", 1)[1].split("\n", 1)[0]
        path = root / "tasks" / cat / f"{cat}_task_{i}_copy.md"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text.replace(f"id: {old_id}", f"id: {cat}_task_{i}_copy"))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        make_suite(root)
        parse_s = []
        for _ in range(args.repeats):
            start = time.perf_counter()
            tasks = [parse_task(p) for p in task_files(root)]
            parse_s.append(time.perf_counter() - start)
        assert len(tasks) == 60
        cmd = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--benchmark", "wildclaw", "--dataset",
               str(root), "--harness", "claude-code", "--model", "scripted/gold", "--collect-only", "-q"]
        pytest_s, session_s = [], []
        for _ in range(args.repeats):
            start = time.perf_counter()
            done = subprocess.run(cmd, capture_output=True, text=True, cwd=tmp)
            pytest_s.append(time.perf_counter() - start)
            assert "60 tests collected" in done.stdout, done.stdout[-500:]
        for _ in range(args.repeats):  # the collection hook alone, in process (what -n workers also pay)
            timer = CollectionTimer()
            pytest.main(cmd[3:], plugins=[timer])
            assert timer.items == 60, timer.items
            session_s.append(timer.seconds)
    result = {"task_files": 60, "parse_s_median": round(statistics.median(parse_s), 4),
              "parse_s_max": round(max(parse_s), 4), "target_s": TARGET_S,
              "pytest_collection_hook_s_median": round(statistics.median(session_s), 3),
              "pytest_collect_only_process_s_median": round(statistics.median(pytest_s), 3),
              "loadavg_1m": round(os.getloadavg()[0], 2), "repeats": args.repeats}
    RESULTS.parent.mkdir(exist_ok=True)
    RESULTS.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))
    if result["pytest_collection_hook_s_median"] >= TARGET_S:
        raise SystemExit(f"collecting 60 task files took {result['pytest_collection_hook_s_median']} s, "
                         f"over {TARGET_S} s")


if __name__ == "__main__":
    main()
