"""Future-commit purge on a large history, in a real container.

Generates a repository like the big ones in SWE-bench Multilingual (default: 40,000 commits, 300 tags,
a few hundred MB packed, plus branches, a stash and dangling objects after the base), then times
`prepare()` (reset + purge) and the check that proves it. Target: < 90 s, complete.

    python benchmarks/bench_purge.py [--commits 40000] [--tags 300] [--blob-kb 12] [--image IMAGE]

Writes benchmarks/results/purge.json. Needs a Docker engine and an image with git (default: the demo
Python image, or any image given with --image).
"""
from __future__ import annotations

import argparse
import json
import os
import random
import sys
import tempfile
import time
from pathlib import Path

from pytest_clawswe.engine.docker.client import docker_client
from pytest_clawswe.engine.sandbox.docker_workspace import Workspace
from pytest_clawswe.swe.instance.prepare import check_purged, prepare

RESULTS = Path(__file__).parent / "results" / "purge.json"


def fast_import_stream(path: Path, commits: int, tags: int, blob_kb: int, base_index: int, seed: int = 0) -> None:
    """A git fast-import stream: `commits` commits on main, each rewriting one of 200 files with
    incompressible content; tags spread over the history; a feature branch off the future."""
    rng = random.Random(seed)
    tag_at = set(rng.sample(range(1, commits), tags))
    with open(path, "wb") as out:
        for i in range(1, commits + 1):
            data = os.urandom(blob_kb * 1024 // 2).hex().encode()  # hex: text, still incompressible-ish
            when = 1_500_000_000 + i * 60
            msg = f"commit {i}".encode()
            out.write(b"commit refs/heads/main\n")
            out.write(f"mark :{i}\ncommitter Bench <b@b> {when} +0000\n".encode())
            out.write(f"data {len(msg)}\n".encode() + msg + b"\n")
            if i > 1:
                out.write(f"from :{i - 1}\n".encode())
            out.write(f"M 100644 inline src/file{i % 200}.txt\ndata {len(data)}\n".encode() + data + b"\n")
            if i in tag_at:
                out.write(f"reset refs/tags/v{i}\nfrom :{i}\n\n".encode())
            if i == base_index:
                out.write(f"reset refs/tags/BASE\nfrom :{i}\n\n".encode())
        # a feature branch growing from the future
        out.write(f"commit refs/heads/feature\nmark :{commits + 1}\n"
                  f"committer Bench <b@b> {1_500_000_000 + (commits + 1) * 60} +0000\ndata 7\nfeature\n"
                  f"from :{commits}\nM 100644 inline feature.txt\ndata 4\nnew\n\n".encode())


AFTER_IMPORT = r"""
set -e
export GIT_AUTHOR_NAME=b GIT_AUTHOR_EMAIL=b@b GIT_COMMITTER_NAME=b GIT_COMMITTER_EMAIL=b@b
cd /testbed
git checkout -q -f main
echo wip >> src/file1.txt && git stash -q
git commit-tree -p BASE -m dangling "$(git write-tree)" >/dev/null
git checkout -q -f BASE 2>/dev/null
git rev-parse HEAD
"""


def repo_stats(ws) -> dict:
    out = ws.exec("cd /testbed && git count-objects -v | grep size-pack && git rev-list --all --reflog | wc -l "
                  "&& git tag | wc -l && git for-each-ref | wc -l", check=True).stdout.split()
    return {"packed_mb": round(int(out[1]) / 1024, 1), "commits_reachable": int(out[2]), "tags": int(out[3]),
            "refs": int(out[4])}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--commits", type=int, default=40_000)
    ap.add_argument("--tags", type=int, default=300)
    ap.add_argument("--blob-kb", type=int, default=12, help="size of each commit's new blob")
    ap.add_argument("--image", default="clawswe-test/git:latest")
    args = ap.parse_args()
    client = docker_client()
    base_index = int(args.commits * 0.8)
    with tempfile.TemporaryDirectory() as tmp:
        stream = Path(tmp) / "history.fi"
        t = time.monotonic()
        fast_import_stream(stream, args.commits, args.tags, args.blob_kb, base_index)
        gen_s = time.monotonic() - t
        with Workspace(client, args.image, labels={"clawswe.run": "bench-purge"}, mem_limit=None,
                       pids_limit=None, network="none") as ws:
            t = time.monotonic()
            ws.copy_in(stream, "/tmp")
            ws.exec("rm -rf /testbed && git init -q -b main /testbed && cd /testbed && "
                    "git fast-import --quiet < /tmp/history.fi && rm /tmp/history.fi", check=True)
            base = ws.exec(["bash", "-c", AFTER_IMPORT], check=True).stdout.strip().splitlines()[-1]
            build_s = time.monotonic() - t
            before = repo_stats(ws)
            t = time.monotonic()
            prepare(ws, base, gitignore=True)  # includes the check
            purge_s = time.monotonic() - t
            t = time.monotonic()
            check_purged(ws, base)
            check_s = time.monotonic() - t
            after = repo_stats(ws)
    result = {
        "commits": args.commits, "tags": args.tags, "base_commit_index": base_index,
        "generate_stream_s": round(gen_s, 1), "import_s": round(build_s, 1),
        "purge_with_check_s": round(purge_s, 1), "check_alone_s": round(check_s, 2),
        "target_s": 90, "before": before, "after": after,
        "machine": f"{os.cpu_count()} cores", "python": sys.version.split()[0],
    }
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
