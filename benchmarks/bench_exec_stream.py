"""Do exec answers lose their beginning under load? docker-py as shipped against the run's client (issue 32 §4).

    python benchmarks/bench_exec_stream.py [--threads 12] [--execs 30] [--size 262144] [--busy-threads 0]
    nice -n 19 python benchmarks/bench_exec_stream.py --threads 16 --execs 60 --size 65536 --busy-threads 4

Many execs at once with large outputs, in a few containers of one engine (the machine's other users load it
too): each prints a first line of its own, `--size` bytes, and a last line, and is read with exec_start(stream=True)
the way the workspace reads (one stream, and demultiplexed). An answer whose first line is missing lost its
beginning; one whose last line is missing lost its end. Both clients run the same execs, interleaved, in the
same process: docker-py's own APIClient (it reads the frames from the socket beneath http.client's buffer) and
the run's client (engine/docker/client.py: through that buffer, engine/docker/attach_stream.py).

The second line is the setting that reproduced it on the shared 2-core machine (load average ~30): this process
niced and its GIL busy, so it reads the engine's answer late while the engine starts the command on time.
Writes benchmarks/results/exec_stream.json. Needs Docker and debian:bookworm-slim.
"""
from __future__ import annotations

import argparse
import json
import os
import threading
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import docker
from pytest_clawswe.engine.docker.client import docker_client

RESULTS = Path(__file__).parent / "results" / "exec_stream.json"
IMAGE = "debian:bookworm-slim"


def one_exec(client, container_id: str, size: int, demux: bool) -> str:
    """'whole', 'lost_beginning', 'lost_end' or 'lost_both'."""
    tag = uuid.uuid4().hex[:12]
    script = f"printf 'BEGIN-{tag}\\n'; head -c {size} /dev/zero | tr '\\0' x; printf '\\nEND-{tag}\\n'"
    api = client.api
    exec_id = api.exec_create(container_id, ["sh", "-c", script])["Id"]
    if demux:
        out = b"".join(o for o, _ in api.exec_start(exec_id, stream=True, demux=True) if o)
    else:
        out = b"".join(api.exec_start(exec_id, stream=True))
    begins, ends = out.startswith(f"BEGIN-{tag}\n".encode()), out.endswith(f"END-{tag}\n".encode())
    return "whole" if begins and ends else "lost_end" if begins else "lost_beginning" if ends else "lost_both"


def _busy(stop: threading.Event) -> None:
    n = 0
    while not stop.is_set():
        n = (n * 31 + 7) % 1000003


def run_round(clients: dict, containers: list, threads: int, execs: int, size: int) -> dict:
    counts = {name: {"whole": 0, "lost_beginning": 0, "lost_end": 0, "lost_both": 0, "errors": 0}
              for name in clients}
    errors: dict[str, list[str]] = {name: [] for name in clients}  # the first few, as raised
    lock = threading.Lock()

    def worker(n: int) -> None:
        container = containers[n % len(containers)]
        for i in range(execs):
            name = list(clients)[(n + i) % len(clients)]  # interleaved: both clients meet the same load
            why = ""
            try:
                kind = one_exec(clients[name], container.id, size, demux=bool(i % 2))
            except (docker.errors.DockerException, OSError, ValueError) as exc:
                kind, why = "errors", f"{type(exc).__name__}: {str(exc)[:200]}"
            with lock:
                counts[name][kind] += 1
                if why and len(errors[name]) < 5:
                    errors[name].append(why)

    started = time.monotonic()
    with ThreadPoolExecutor(threads) as pool:
        list(pool.map(worker, range(threads)))
    return {"seconds": round(time.monotonic() - started, 1), "load_average": os.getloadavg(), "counts": counts,
            "errors": errors}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=12)
    parser.add_argument("--execs", type=int, default=30, help="execs per thread and round")
    parser.add_argument("--size", type=int, default=256 * 1024, help="bytes between the first and last line")
    parser.add_argument("--containers", type=int, default=3)
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--busy-threads", type=int, default=0,
                        help="threads of pure Python work in this process (a busy pytest worker: the GIL is contended)")
    args = parser.parse_args()
    stop = threading.Event()
    for _ in range(args.busy_threads):
        threading.Thread(target=_busy, args=(stop,), daemon=True).start()
    ours = docker_client()
    clients = {"docker-py as shipped": docker.from_env(timeout=600), "the run's client": ours}
    containers = [ours.containers.run(IMAGE, ["sleep", "infinity"], detach=True, init=True,
                                      labels={"clawswe.bench": "exec-stream"}) for _ in range(args.containers)]
    try:
        rounds = [run_round(clients, containers, args.threads, args.execs, args.size) for _ in range(args.rounds)]
    finally:
        stop.set()
        for container in containers:
            container.remove(force=True)
    totals = {name: {kind: sum(r["counts"][name][kind] for r in rounds) for kind in rounds[0]["counts"][name]}
              for name in clients}
    result = {"settings": {**vars(args), "niceness": os.nice(0)}, "docker_py": docker.__version__, "engine": ours.version()["Version"],
              "cpus": os.cpu_count(), "rounds": rounds, "totals": totals}
    RESULTS.parent.mkdir(exist_ok=True)
    RESULTS.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(totals, indent=2))


if __name__ == "__main__":
    main()
