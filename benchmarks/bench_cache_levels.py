"""Bytes a demo-set run leaves behind under each `--cache-level` (issue 17 §3).

For each level: the oracle harness on the 8 demo instances, each instance on an image of this script's own (a
label on top of the demo image: a new image id, no bytes copied), so removals never touch the demo images other
runs on this host use. Then what is left: the run's instance and prepared images, and the run folder.

    PYTHONPATH=$PWD python benchmarks/bench_cache_levels.py [--levels instance base none] [-n 2]

Needs the demo images (`clawswe images build --dataset demo`); writes benchmarks/results/cache_levels.json.

`image_bytes_left` counts each image left as a host that pulled it for the run keeps it: an instance image
whole, a prepared image by what it adds. Here the instance images share their layers with the demo images, so
what this machine actually keeps more is only `new_bytes_left` (the prepared images' own layers).
"""
from __future__ import annotations

import argparse
import io
import json
import os
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

import docker.errors

from pytest_clawswe.engine.images.cache_level import SOURCE_LABEL
from pytest_clawswe.engine.docker.client import docker_client
from pytest_clawswe.swe.dataset import load_local_rows
from pytest_clawswe.swe.paths import DEMO_TASK_REPO

RESULTS = Path(__file__).parent / "results" / "cache_levels.json"
REPO = "clawswe-cachebench"


def own_copies(client, rows: list[dict], nonce: str) -> dict[str, str]:
    """instance id -> a copy of its demo image under a tag of this script's own."""
    copies = {}
    for row in rows:
        try:
            client.images.get(row["image"])
        except docker.errors.ImageNotFound:
            sys.exit(f"the demo image {row['image']} is missing; build the demo images first "
                     "(clawswe images build --dataset demo)")
        tag = f"{REPO}/{row['instance_id'].lower().replace('__', '_')}:{nonce}"
        dockerfile = f"FROM {row['image']}\nLABEL clawswe.cachebench={nonce}\n"
        client.images.build(fileobj=io.BytesIO(dockerfile.encode()), tag=tag, rm=True, forcerm=True, pull=False)
        copies[row["instance_id"]] = tag
    return copies


def left_behind(client, copies: dict[str, str]) -> dict:
    names, image_bytes, new_bytes = [], 0, 0
    for tag in copies.values():
        base = 0
        try:
            image = client.images.get(tag)
            names.append(tag)
            base = image.attrs["Size"]
            image_bytes += base
        except docker.errors.ImageNotFound:
            pass
        for prepared in client.images.list(filters={"label": f"{SOURCE_LABEL}={tag}"}):
            names.extend(prepared.tags or [prepared.id])
            own = sum(layer["Size"] for layer in prepared.history()[:1])  # the committed preparation layer
            image_bytes += own if base else prepared.attrs["Size"]
            new_bytes += own
    return {"images_left": len(names), "image_bytes_left": image_bytes, "new_bytes_left": new_bytes,
            "names": sorted(names)}


def remove_own(client, copies: dict[str, str]) -> None:
    for tag in copies.values():
        for prepared in client.images.list(filters={"label": f"{SOURCE_LABEL}={tag}"}):
            client.images.remove(prepared.id, force=True)
        try:
            client.images.remove(tag, force=True)
        except docker.errors.ImageNotFound:
            pass


def folder_bytes(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file() and not p.is_symlink())


def measure(client, rows, level: str, workers: int, scratch: Path) -> dict:
    nonce = uuid.uuid4().hex[:8]
    copies = own_copies(client, rows, nonce)
    try:
        dataset = scratch / f"demo-{level}.jsonl"
        dataset.write_text("".join(json.dumps({**r, "image": copies[r["instance_id"]]}) + "\n" for r in rows))
        run_dir = scratch / f"run-{level}"
        cmd = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "--harness=oracle",
               "--dataset", str(dataset), "--run-dir", str(run_dir), "--cache-level", level]
        if workers > 1:
            cmd += ["-n", str(workers)]
        started = time.monotonic()
        done = subprocess.run(cmd, cwd=scratch, capture_output=True, text=True)
        seconds = time.monotonic() - started
        summary = json.loads((run_dir / "summary.json").read_text())
        left = left_behind(client, copies)
        resolved = sum(json.loads(m.read_text())["outcome"] == "resolved"
                       for m in (run_dir / "instances").glob("*/metadata.json"))
        return {"level": level, "instances": len(rows), "resolved": resolved, "exit_code": done.returncode,
                "wall_s": round(seconds, 1), "run_dir_bytes": folder_bytes(run_dir), **left,
                "summary_disk": summary.get("disk")}
    finally:
        remove_own(client, copies)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--levels", nargs="+", default=["instance", "base", "none"])
    parser.add_argument("-n", type=int, default=2, help="xdist workers")
    args = parser.parse_args()
    client = docker_client()
    rows = load_local_rows(DEMO_TASK_REPO)
    demo_ids = {r["image"]: client.images.get(r["image"]).id for r in rows}
    results = []
    with tempfile.TemporaryDirectory(prefix="clawswe-cachebench-") as scratch:
        for level in args.levels:
            result = measure(client, rows, level, args.n, Path(scratch))
            print(json.dumps({k: v for k, v in result.items() if k != "names"}), flush=True)
            results.append(result)
    after = {name: client.images.get(name).id for name in demo_ids}
    assert after == demo_ids, "a demo image changed"  # never expected: the measurement used copies only
    RESULTS.parent.mkdir(exist_ok=True)
    RESULTS.write_text(json.dumps({
        "what": "bytes a demo-set oracle run leaves behind per --cache-level (images of its own, see the script)",
        "machine": f"{os.cpu_count()} cores, Docker {client.version()['Version']}",
        "date": time.strftime("%Y-%m-%d"), "workers": args.n,
        "note": "none equals base here: the demo images' base (debian) was on this host before the run, so no "
                "build pulled it; none differs only for bases a build had to pull",
        "results": results}, indent=2) + "\n")
    print(f"wrote {RESULTS}")


if __name__ == "__main__":
    main()
