"""The agent container as a hostile agent sees it (issue 12: cases 4 and 11, and the bounded host reads)."""
import json
import tracemalloc
from pathlib import Path

import pytest

from pytest_clawswe.engine.network import hostguard
from pytest_clawswe.engine.sandbox.docker_workspace import DROPPED_CAPABILITIES, Workspace
from pytest_clawswe.engine.workspace import MAX_EXEC_OUTPUT
from pytest_clawswe.labels import LABEL_RUN
from pytest_clawswe.engine.network.locked import create_locked_network
from pytest_clawswe.engine.workspace import BaseWorkspace

pytestmark = pytest.mark.docker
ROOT = Path(__file__).resolve().parent.parent
HARNESSES = ROOT / "tests" / "container_harnesses.py"


@pytest.mark.parametrize("reason", ["stop", "error", "timeout"])
def test_no_agent_process_outlives_the_agent_phase_whatever_the_finish_reason(pytester, python_demo, tmp_path,
                                                                               reason):
    run_dir = tmp_path / "run"
    result = pytester.runpytest_subprocess(
        f"--harness={HARNESSES}:Linger", "--dataset", "demo", "--instance-ids", python_demo.instance_id,
        "--run-dir", str(run_dir), "--harness-option", f"reason={reason}", "-p", "no:cacheprovider", timeout=900)
    folder = run_dir / "instances" / python_demo.instance_id
    meta = json.loads((folder / "metadata.json").read_text())
    # the writer was stopped before the adapter's last step let it write: no late file, and nothing of it ran on
    assert "late_" not in (folder / "patch.raw.diff").read_text()
    survivors = [line for line in (folder / "processes.txt").read_text().splitlines() if "late_" in line]
    assert survivors == []
    assert meta["outcome"] == "resolved", (meta, result.stdout.str()[-3000:])  # the gold patch is still graded
    assert meta["finish_reason"] == reason


REACH = r"""
import socket, sys
host, port = sys.argv[1], int(sys.argv[2])
try:
    socket.create_connection((host, port), timeout=3).close()
    print("reached")
except OSError as exc:
    print("blocked", type(exc).__name__)
"""
RAW = r"""
import socket
try:
    socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP)
    print("raw-socket")
except PermissionError:
    print("no-raw-socket")
"""
HTTP = r"""
import sys, urllib.request, urllib.error
try:
    urllib.request.urlopen(sys.argv[1] + "/v1/models", timeout=5)
    print("answered 200")
except urllib.error.HTTPError as exc:
    print("answered", exc.code)
except OSError as exc:
    print("silent", exc)
"""


def test_agents_of_one_run_cannot_reach_each_other_but_reach_the_gateway(docker_client, python_demo, tmp_path):
    from pytest_clawswe.gateway.control.run_gateway import start_for_run

    run_id = "t-icc"
    network = f"clawswe-{run_id}"
    labels = {LABEL_RUN: run_id}
    create_locked_network(docker_client, network, labels)
    gateway = agents = None
    try:
        gateway = start_for_run(tmp_path / "gateway", docker_client, network)
        assert hostguard.guard(docker_client, network, int(gateway.url.rsplit(":", 1)[1].split("/")[0]),
                               run_id) is None
        agents = [Workspace(docker_client, python_demo.image, labels=labels, network=network).start()
                  for _ in range(2)]
        a, b = agents
        b_ip = docker_client.containers.get(b.container.id).attrs["NetworkSettings"]["Networks"][network]["IPAddress"]
        b.container.exec_run(["python3", "-m", "http.server", "8000", "--bind", "0.0.0.0"], detach=True)
        wait = ("for i in $(seq 50); do python3 - 127.0.0.1 8000 <<'E' | grep -q reached && exit 0; sleep 0.1; "
                f"done; exit 1\n{REACH}\nE")
        assert b.exec(["sh", "-c", wait]).exit_code == 0
        assert b.exec(["python3", "-c", REACH, b_ip, "8000"]).stdout.startswith("reached")  # it listens
        seen = a.exec(["python3", "-c", REACH, b_ip, "8000"]).stdout
        assert seen.startswith("blocked"), seen  # ... but not for the other agent
        assert a.exec(["python3", "-c", RAW]).stdout.strip() == "no-raw-socket"
        ping = a.exec("command -v ping >/dev/null && ping -c1 -W2 " + b_ip)
        assert ping.exit_code != 0  # no ping binary, or no raw socket / no route for it
        assert a.exec(["python3", "-c", HTTP, gateway.url]).stdout.startswith("answered")
        caps = docker_client.api.inspect_container(a.container.id)["HostConfig"]["CapDrop"]
        assert set(DROPPED_CAPABILITIES) <= set(caps)
    finally:
        for ws in agents or []:
            ws.remove()
        if gateway is not None:
            gateway.stop()
        hostguard.unguard(run_id)
        for net in docker_client.networks.list(names=[network]):
            net.remove()


def test_every_host_read_of_agent_output_is_capped(docker_client, python_demo, tmp_path):
    with Workspace(docker_client, python_demo.image, labels={LABEL_RUN: "t-caps"}) as ws:
        assert isinstance(ws, BaseWorkspace)
        ws.exec("head -c 100000000 /dev/zero | tr '\\0' x > /tmp/stdout.txt; echo END >> /tmp/stdout.txt")
        tracemalloc.start()
        try:
            data = ws.read_file("/tmp/stdout.txt", max_bytes=4 * 2**20)
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
        assert len(data) == 4 * 2**20 and data.endswith(b"xEND\n")
        assert peak < 20 * 2**20  # the host never held the whole 100 MB
        assert ws.read_file("/tmp/small", max_bytes=10) is None
        ws.write_file("/tmp/small", "0123456789")
        assert ws.read_file("/tmp/small", max_bytes=10) == b"0123456789"
        assert ws.read_file("/tmp/small", max_bytes=4) == b"6789"
        assert ws.read_file("/tmp") is None  # not a file

        # an exec without a deadline: the tail, bounded, on each stream
        tracemalloc.start()
        try:
            r = ws.exec("head -c 40000000 /dev/zero | tr '\\0' y; echo END; echo err >&2")
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
        assert r.exit_code == 0 and r.truncated and len(r.stdout) == MAX_EXEC_OUTPUT and r.stdout.endswith("yEND\n")
        assert r.stderr == "err\n"
        assert peak < 6 * MAX_EXEC_OUTPUT

        # copying a folder out: files past the cap are left out and listed
        ws.exec("mkdir -p /tmp/out && for i in 1 2 3 4; do head -c 3000000 /dev/zero > /tmp/out/f$i; done")
        assert ws.copy_out("/tmp/out", tmp_path, max_bytes=7_000_000)
        copied = sorted(p.name for p in (tmp_path / "out").iterdir() if p.name.startswith("f"))
        assert len(copied) == 2
        assert sum(p.stat().st_size for p in (tmp_path / "out").glob("f*")) <= 7_000_000
        note = (tmp_path / "COPY_TRUNCATED.txt").read_text()
        assert note.count("out/f") == 2


def test_a_diff_too_big_to_read_back_is_no_patch_not_a_cut_one(docker_client, python_demo):
    from pytest_clawswe.swe.instance.patch import MAX_DIFF_BYTES, collect_patch

    with Workspace(docker_client, python_demo.image, labels={LABEL_RUN: "t-caps"}) as ws:
        base = ws.exec("git rev-parse HEAD", workdir="/testbed", check=True).stdout.strip()
        # two text files under the per-file limit, together over the diff cap
        ws.exec("for f in a b; do yes 'a line of generated text' | head -c 36000000 > /testbed/gen_$f.txt; done",
                check=True)
        patch = collect_patch(ws, base)
        assert patch.clean == "" and "larger than" in patch.dropped[0]
        assert 2 * 36000000 > MAX_DIFF_BYTES
        ws.exec("rm /testbed/gen_b.txt && echo 'x = 1' > /testbed/small.py", check=True)
        patch = collect_patch(ws, base)
        assert "small.py" in patch.clean and "gen_a.txt" in patch.clean  # one 36 MB file is read whole
