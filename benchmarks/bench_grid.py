"""A two-column grid over the demo set on two engines with images through a local registry (issue 25).

    python benchmarks/bench_grid.py [--columns oracle nop]

The second engine is scripts/second-engine.sh's (started if it does not answer, and left as found); the
registry is Debian's docker-registry with TLS on the second engine's host-side address (tests/local_registry.py).
The demo images and their prepared images are removed from the second engine first, so everything it runs comes
through the registry. Both engines' image and commit events are streamed during the grid. Writes
benchmarks/results/grid.json: per image, pushes (first engine), pulls and loads (second engine), prepared
images made (commits) per engine, which engine ran which item of which column, and the wall time.
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import docker

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
from local_registry import start_registry  # noqa: E402
from second_engine import HOST_SIDE, SCRIPT, TLS_DIR, URL, _answers  # noqa: E402
from test_registry import _Events  # noqa: E402

from pytest_clawswe.engine.images.cache_level import SOURCE_LABEL  # noqa: E402
from pytest_clawswe.engine.docker.client import docker_client  # noqa: E402
from pytest_clawswe.labels import LABEL_RUN  # noqa: E402
from pytest_clawswe.swe.dataset import load_instances  # noqa: E402

RESULTS = Path(__file__).parent / "results" / "grid.json"
LOCAL = "unix:///var/run/docker.sock"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--columns", nargs="+", default=["oracle", "nop"])
    args = ap.parse_args()
    if not _answers():
        subprocess.run([str(SCRIPT), "up"], check=True, capture_output=True)
    local, engine2 = docker_client(), docker_client(base_url=URL, tls_dir=TLS_DIR)
    images = sorted({i.image for i in load_instances("demo")})
    for image in images:
        for prepared in engine2.images.list(filters={"label": f"{SOURCE_LABEL}={image}"}):
            engine2.images.remove(prepared.id, force=True)
        try:
            engine2.images.remove(image, force=True)
        except docker.errors.ImageNotFound:
            pass
    with tempfile.TemporaryDirectory() as tmp, start_registry(HOST_SIDE, Path(tmp, "registry")) as registry:
        out = Path(tmp, "grid")
        watch1, watch2 = _Events(local), _Events(engine2)
        started = time.monotonic()
        try:
            cmd = [sys.executable, "-m", "pytest_clawswe.cli", "grid", "--dataset", "demo", "--out", str(out)]
            for column in args.columns:
                cmd += ["--column", column]
            cmd += ["--", "-n", "2", "--docker-host", LOCAL, "--docker-host", URL, f"--docker-tls-dir={TLS_DIR}",
                    f"--registry={registry}"]
            done = subprocess.run(cmd, cwd=tmp, capture_output=True, text=True)
            wall = time.monotonic() - started
            seen1, seen2 = watch1.stop(), watch2.stop()
        finally:
            for image in images:
                try:
                    local.images.remove(f"{registry}/{image}")
                except docker.errors.ImageNotFound:
                    pass

        def count(events, action):
            return Counter(e["Actor"]["ID"].removeprefix(registry + "/") for e in events
                           if e.get("Type") == "image" and e.get("Action") == action)

        items = []
        for meta in sorted(out.glob("*/instances/*/metadata.json")):
            m = json.loads(meta.read_text())
            items.append({"column": meta.parts[-4], "instance_id": m["instance_id"], "engine": m["docker_host"],
                          "outcome": m["outcome"], "images": m.get("images"), "total_s": m["timings"].get("total")})
        run_ids = {json.loads(p.read_text())["run_id"] for p in out.glob("*/run.json")}

        def commits(events):  # this grid's prepared images (the shared engine has other users)
            return sum(e.get("Action") == "commit" and (e["Actor"].get("Attributes") or {}).get(LABEL_RUN) in run_ids
                       for e in events)

        on_two = sorted({i["instance_id"] for i in items if i["engine"] == URL})
        result = {
            "columns": args.columns, "exit_code": done.returncode, "wall_s": round(wall, 1),
            "pushes_first_engine": dict(count(seen1, "push")), "pulls_second_engine": dict(count(seen2, "pull")),
            "loads_second_engine": dict(count(seen2, "load")),
            "prepared_made": {"first_engine": commits(seen1), "second_engine": commits(seen2)},
            "instances_on_second_engine": on_two, "items": items,
        }
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps({k: v for k, v in result.items() if k != "items"}, indent=2))
    if done.returncode:
        print(done.stdout[-3000:], done.stderr[-3000:])
    return 0


if __name__ == "__main__":
    sys.exit(main())
