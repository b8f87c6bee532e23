"""Harbor's venv for the export checks (tests/harbor_venv.py) and the export itself: how long the venv takes to build
cold (a fresh cache; `--no-pip-cache`: pip's download cache empty too, as on a fresh CI machine) and warm (built:
found), and how long `clawswe export harbor` and Harbor's check of its files take on the given runs.

    python benchmarks/bench_harbor.py [--no-pip-cache] [RUN...]

Writes benchmarks/results/harbor.json. Needs a Python 3.12 and PyPI (the build downloads about 200 MB).
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
RESULTS = Path(__file__).parent / "results" / "harbor.json"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--no-pip-cache", action="store_true", help="an empty pip download cache for the cold build")
    parser.add_argument("runs", nargs="*", help="run folders to export (and check) after the build")
    args = parser.parse_args()
    import harbor_venv

    figures: dict = {"machine": f"{platform.node()} ({os.cpu_count()} cores)", "harbor": harbor_venv.HARBOR}
    with tempfile.TemporaryDirectory() as cache, tempfile.TemporaryDirectory() as pip_cache:
        os.environ["CLAWSWE_CACHE"] = cache
        if args.no_pip_cache:
            os.environ["PIP_CACHE_DIR"] = pip_cache
        t = time.monotonic()
        python = harbor_venv.build_harbor()
        cold = "venv_cold_no_pip_cache_s" if args.no_pip_cache else "venv_cold_s"  # the latter: pip's cache warm
        figures[cold] = round(time.monotonic() - t, 1)
        t = time.monotonic()
        harbor_venv.build_harbor()
        figures["venv_warm_s"] = round(time.monotonic() - t, 3)
        size = subprocess.run(["du", "-sm", str(python.parents[1])], capture_output=True, text=True).stdout.split()
        figures["venv_mb"] = int(size[0]) if size else None
        if args.runs:
            from pytest_clawswe.report.harbor import export

            with tempfile.TemporaryDirectory() as out:
                t = time.monotonic()
                jobs = export([Path(r) for r in args.runs], Path(out))
                figures["export_s"] = round(time.monotonic() - t, 2)
                figures["trials"] = sum(1 for job in jobs for p in job.iterdir() if p.is_dir())
                t = time.monotonic()
                checked = subprocess.run([str(python), str(ROOT / "tests" / "harbor_check.py"), out],
                                         capture_output=True, text=True)
                figures["harbor_check_s"] = round(time.monotonic() - t, 2)
                figures["harbor_check_ok"] = checked.returncode == 0
    earlier = json.loads(RESULTS.read_text()) if RESULTS.is_file() else {}
    RESULTS.write_text(json.dumps({**earlier, **figures}, indent=2) + "\n")  # either cold figure kept
    print(json.dumps(figures, indent=2))


if __name__ == "__main__":
    main()
