"""`--image-cache SIZE` over the demo set's images: a run under a budget smaller than they are stays under it.

    python benchmarks/bench_image_cache.py [--budget-fraction 0.5]

Every demo instance runs once with `oracle` on an image of this benchmark's own (a label on the demo image: no
bytes copied, each its own image id and size, removed at the end; the shared demo images are never indexed),
under `--image-cache` = the fraction of the images' total size, `-n 2`, with an index folder of its own; then a
second run (a grid's next column) under the same budget over the instances whose images stayed. Writes
benchmarks/results/image_cache.json: the budget, the images' total, and summary.json's image_cache of each run.
"""
from __future__ import annotations

import argparse
import io
import json
import os
import subprocess
import sys
import tempfile
import uuid
from pathlib import Path

import docker

from pytest_clawswe.engine.docker.client import docker_client
from pytest_clawswe.engine.images.cache_level import SOURCE_LABEL
from pytest_clawswe.swe.dataset import load_local_rows
from pytest_clawswe.swe.paths import DEMO_TASK_REPO

RESULTS = Path(__file__).parent / "results" / "image_cache.json"


def _exists(client, tag: str) -> bool:
    try:
        client.images.get(tag)
        return True
    except docker.errors.ImageNotFound:
        return False


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--budget-fraction", type=float, default=0.5)
    args = ap.parse_args()
    client = docker_client()
    rows = load_local_rows(DEMO_TASK_REPO)
    made = []
    with tempfile.TemporaryDirectory() as tmp:
        try:
            data = Path(tmp, "copies.jsonl")
            lines = []
            for row in rows:
                tag = f"clawswe-bench-imgcache/{row['instance_id'].lower()}:{uuid.uuid4().hex[:8]}"
                client.images.build(fileobj=io.BytesIO(f"FROM {row['image']}\nLABEL b={tag}\n".encode()), tag=tag,
                                    rm=True, pull=False)
                made.append(tag)
                lines.append(json.dumps({**row, "image": tag}))
            data.write_text("\n".join(lines) + "\n")
            total = sum(client.images.get(t).attrs["Size"] for t in made)
            budget = int(total * args.budget_fraction)
            env = {**os.environ, "CLAWSWE_IMAGE_INDEX": str(Path(tmp, "index"))}
            runs = {}
            for name in ("first", "second"):
                run_dir = Path(tmp, name)
                # the second run (a grid's next column) over the instances whose images stayed: the others'
                # images are this benchmark's own labels, which nothing could make again
                kept = [r["instance_id"] for r, t in zip(rows, made) if name == "first" or _exists(client, t)]
                proc = subprocess.run([sys.executable, "-m", "pytest", "--harness=oracle", "--dataset", str(data),
                                       "--run-dir", str(run_dir), "--image-cache", str(budget), "-n", "2",
                                       "--instance-ids", ",".join(kept), "-p", "no:cacheprovider", "-q"], cwd=tmp,
                                      env=env, capture_output=True, text=True)
                summary = json.loads((run_dir / "summary.json").read_text())
                runs[name] = {"exit_code": proc.returncode, "resolved": summary["resolved"],
                              "instances": summary["instances"], "image_cache": summary["image_cache"]}
            result = {"images": len(made), "images_total_bytes": total, "budget_bytes": budget,
                      "budget_fraction": args.budget_fraction, "runs": runs,
                      "stayed_under": all(r["image_cache"]["max_bytes_after_an_item"] <= budget
                                          for r in runs.values())}
        finally:
            for tag in made:
                for prepared in client.images.list(filters={"label": f"{SOURCE_LABEL}={tag}"}):
                    client.images.remove(prepared.id, force=True)
                try:
                    client.images.remove(tag, force=True)
                except docker.errors.ImageNotFound:
                    pass
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
