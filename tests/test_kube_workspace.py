"""The pod sandbox on the test cluster (scripts/kube-cluster.sh): the workspace contract tests/test_workspace.py
holds the Docker sandbox to, on a pod: exec with its deadline, caps, files in and out, the kill of every agent
process, the disk count, the node, and an agent that deleted its own tools."""
from __future__ import annotations

import time

import pytest
from kube_cluster import kube_cluster_fixture, pod_processes  # noqa: F401  (the kube_cluster fixture)
from polling import wait_until

from pytest_clawswe.labels import LABEL_INSTANCE, LABEL_ROLE, LABEL_RUN

pytestmark = [pytest.mark.docker, pytest.mark.kubernetes]
IMAGE = "debian:bookworm-slim"


@pytest.fixture(scope="module")
def site(kube_cluster, docker_client):
    from pytest_clawswe.engine.kube import namespace
    from pytest_clawswe.engine.kube.images import ImagePublisher
    from pytest_clawswe.engine.kube.site import PodSite
    from pytest_clawswe.engine.images.registry import ImageRegistry

    cluster = kube_cluster.cluster()
    run_id = f"test-ws-{int(time.time())}"
    ns = namespace.namespace_for(run_id)
    namespace.ensure(cluster, ns, run_id)
    try:
        yield PodSite(cluster, ns, ImagePublisher(docker_client, ImageRegistry(kube_cluster.registry)))
    finally:
        namespace.delete(cluster, ns, wait_s=60)


def sandbox(site, name="ws"):
    return site.workspace_factory()(IMAGE, labels={LABEL_RUN: "test-ws", LABEL_INSTANCE: name,
                                                   LABEL_ROLE: "agent"}, mem_limit="512m", network="none")


def comms(ws) -> list[str]:
    """The command names of every process in the pod."""
    return pod_processes(ws.site.cluster, ws.site.namespace, ws.name)


def test_commands_files_and_the_node(site, kube_cluster, tmp_path):
    with sandbox(site) as ws:
        assert ws.node in kube_cluster.nodes and ws.address(None) == ws.ip != ""
        done = ws.exec("echo out; echo err >&2; exit 3")
        assert (done.exit_code, done.stdout, done.stderr) == (3, "out\n", "err\n")
        assert ws.exec(["pwd"], workdir="/tmp").stdout == "/tmp\n"
        assert ws.exec("echo $A-$B", env={"A": "1", "B": "two words"}).stdout == "1-two words\n"
        assert ws.exec(["no-such-command"]).exit_code == 127
        capped = ws.exec("head -c 300000 /dev/zero | tr '\\0' x; echo END", max_output=1000)
        assert capped.truncated and capped.stdout.endswith("END\n") and len(capped.stdout) == 1000

        data = bytes(range(256)) * 100
        ws.write_file("/work/deep/bin.dat", data, mode=0o600)
        assert ws.read_file("/work/deep/bin.dat") == data
        assert ws.exec(["stat", "-c", "%a %U", "/work/deep/bin.dat"]).stdout == "600 root\n"
        assert ws.read_file("/work/deep/bin.dat", max_bytes=10) == data[-10:]
        assert ws.read_file("/work/deep") is None and ws.read_file("/nope") is None

        src = tmp_path / "tree"
        (src / "sub").mkdir(parents=True)
        (src / "a.txt").write_text("A")
        (src / "sub" / "b.txt").write_text("B")
        ws.copy_in(src, "/work/in")
        assert ws.exec(["cat", "/work/in/tree/a.txt", "/work/in/tree/sub/b.txt"]).stdout == "AB"
        assert ws.copy_out("/work/in/tree", tmp_path / "out")
        assert (tmp_path / "out" / "tree" / "sub" / "b.txt").read_text() == "B"
        assert not ws.copy_out("/work/none", tmp_path / "none")
        ws.exec("head -c 4000 /dev/urandom > /work/big; ln -s /etc/passwd /work/link")
        assert ws.copy_out("/work", tmp_path / "capped", max_bytes=2000)
        assert "big" in (tmp_path / "capped" / "COPY_TRUNCATED.txt").read_text()
        assert not (tmp_path / "capped" / "work" / "link").exists()  # no links out
    assert not site.cluster.exists("core", "read_namespaced_pod", ws.name, site.namespace) or \
        site.cluster.call("core", "read_namespaced_pod", ws.name, site.namespace)["metadata"].get("deletionTimestamp")


def test_the_deadline_and_kill_all_leave_only_the_keep_alives(site):
    with sandbox(site, "kill") as ws:
        keep = comms(ws)
        assert keep.count("sleep") == 2 and "pause" in keep  # the sandbox's and the stopper's keep-alives
        ws.exec("sleep 600 >/dev/null 2>&1 & sleep 601 >/dev/null 2>&1 &")
        assert comms(ws).count("sleep") == 4  # the agent's outlive its command
        timed = ws.exec("sleep 602 & exec sleep 603", timeout=2)
        assert timed.timed_out and timed.seconds < 30
        assert comms(ws) == keep  # the deadline killed everything the agent started, earlier commands' too
        ws.exec("sleep 604 >/dev/null 2>&1 &")
        ws.kill_all()
        assert comms(ws) == keep
        assert ws.running()


def test_an_agent_without_tools_still_has_its_files_read_and_processes_killed(site, tmp_path):
    with sandbox(site, "notools") as ws:
        ws.write_file("/work/result.txt", "kept")
        ws.exec("sleep 700 >/dev/null 2>&1 &")
        ws.exec("rm -rf /bin/* /usr/bin/* /usr/sbin/* /sbin/* 2>/dev/null; true")
        assert ws.exec(["sh", "-c", "true"]).exit_code == 127  # its own shell is gone
        assert ws.read_file("/work/result.txt") == b"kept"
        assert ws.copy_out("/work", tmp_path / "out") and (tmp_path / "out" / "work" / "result.txt").read_text() == "kept"
        ws.kill_all()
        assert comms(ws).count("sleep") == 2


def test_disk_used_counts_what_the_sandbox_wrote(site):
    with sandbox(site, "disk") as ws:
        before = ws.disk_used()
        ws.exec("head -c 30000000 /dev/urandom > /big")
        wait_until(lambda: ws.disk_used() >= before + 25_000_000, 120, "the node counted the 25 MB written",
                   interval=2)  # the runtime counts the layer every few seconds


def test_what_the_sandbox_changed_and_a_read_only_folder(site, tmp_path):
    """engine/sandbox/world.py's view of a pod (its changes, its mounts) and Docker's read_only binds (WildClawBench's
    exec/ at /app): the folder is there, read-only, and not the sandbox's own files."""
    src = tmp_path / "exec"
    (src / "sub").mkdir(parents=True)
    (src / "sub" / "in.txt").write_text("given")
    make = site.workspace_factory()
    with make(IMAGE, labels={LABEL_RUN: "test-ws", LABEL_INSTANCE: "world", LABEL_ROLE: "agent"}, mem_limit="512m",
              network="none", read_only={str(src): "/app"}) as ws:
        assert ws.exec(["cat", "/app/sub/in.txt"]).stdout == "given"
        assert ws.exec("echo x > /app/new 2>/dev/null").exit_code != 0  # read-only
        assert "/app" in ws.mounts()
        ws.exec("mkdir -p /root/made && echo 1 > /root/made/a && rm /etc/issue && echo y >> /etc/debian_version")
        found = dict(ws.changes())
        assert found.get("/root/made") == "added" and found.get("/root/made/a") == "added"
        assert found.get("/etc/issue") == "deleted" and found.get("/etc/debian_version") == "changed"
        assert "/app/sub/in.txt" not in found  # a mount's files are not the sandbox's
        from pytest_clawswe.engine.sandbox import world

        manifest = world.capture(ws, tmp_path / "world")
        assert {"path": "/root/made", "kind": "added"} in manifest["copied"]
        assert (tmp_path / "world" / "files" / "root" / "made" / "a").read_text() == "1\n"
