import time

import pytest
from run_containers import run_containers

from pytest_clawswe.engine.sandbox.docker_workspace import DiskWatch, Workspace
from pytest_clawswe.engine.workspace import MAX_EXEC_OUTPUT
from pytest_clawswe.errors import InfraError
from pytest_clawswe.labels import LABEL_OWNER, LABEL_RUN
from pytest_clawswe.run.clean import clean

pytestmark = pytest.mark.docker

LIST = "for p in /proc/[0-9]*; do tr '\\0' ' ' < $p/cmdline 2>/dev/null; echo; done"


def test_deadline_kills_every_process_the_command_started(docker_client, python_demo):
    with Workspace(docker_client, python_demo.image, labels={LABEL_RUN: "t-ws"}) as ws:
        start = time.monotonic()
        result = ws.exec("echo started; sleep 1001 & (setsid sleep 1002 &); sleep 1003", timeout=2)
        assert result.timed_out and "started" in result.output
        assert time.monotonic() - start < 15
        left = ws.exec(["sh", "-c", LIST]).stdout
        assert "sleep 100" not in left
        assert "sleep infinity" in left  # the container itself lives on for patch collection
        assert ws.exec("echo alive").stdout.strip() == "alive"


def test_exec_keeps_stdout_apart_from_stderr_and_reports_exit_codes(docker_client, python_demo):
    with Workspace(docker_client, python_demo.image, labels={LABEL_RUN: "t-ws"}) as ws:
        r = ws.exec("echo out; echo err >&2; exit 3")
        assert (r.exit_code, r.stdout, r.stderr) == (3, "out\n", "err\n")
        with pytest.raises(InfraError, match="exit 3"):
            ws.exec("exit 3", check=True)
        r = ws.exec("echo quick", timeout=30)
        assert (r.exit_code, r.stdout) == (0, "quick\n")


def test_an_agent_that_prints_without_end_costs_the_host_only_the_tail(docker_client, python_demo):
    with Workspace(docker_client, python_demo.image, labels={LABEL_RUN: "t-ws"}) as ws:
        r = ws.exec("head -c 30000000 /dev/zero | tr '\\0' x; echo END", timeout=60)
        assert r.exit_code == 0 and len(r.output) == MAX_EXEC_OUTPUT and r.output.endswith("xEND\n") and r.truncated


def test_disk_watch_stops_a_container_that_writes_past_its_limit(docker_client, python_demo):
    with Workspace(docker_client, python_demo.image, labels={LABEL_RUN: "t-ws"}) as ws:
        assert ws.disk_used() < 50 * 2**20
        with DiskWatch(ws, 100 * 2**20, interval=0.5) as watch:
            start = time.monotonic()
            # at most 960 MiB, then it idles: a watch that fails costs the host no more
            r = ws.exec("for i in $(seq 60); do head -c 16777216 /dev/zero > /tmp/f$i; sleep 0.1; done; sleep 120",
                        timeout=120)
        assert watch.tripped_at and watch.tripped_at > 100 * 2**20
        assert r.exit_code != 0 and time.monotonic() - start < 30  # stopped by the watch, not the deadline
        assert ws.disk_used() < 400 * 2**20  # overshoot: what it wrote in about one interval
        assert ws.exec("echo alive").stdout.strip() == "alive"  # the container lives on for the patch
        with DiskWatch(ws, None) as off:  # no limit: no thread, nothing stopped
            assert ws.exec("sleep 1", timeout=10).exit_code == 0
        assert off.tripped_at is None


def test_files_round_trip_and_limits_apply(docker_client, python_demo, tmp_path):
    with Workspace(docker_client, python_demo.image, labels={LABEL_RUN: "t-ws"}, mem_limit="256m",
                   pids_limit=50) as ws:
        ws.write_file("/work/a/b.txt", "hello\n")
        assert ws.read_file("/work/a/b.txt") == b"hello\n"
        assert ws.read_file("/nope") is None
        assert ws.copy_out("/work/a", tmp_path) and (tmp_path / "a" / "b.txt").read_text() == "hello\n"
        attrs = docker_client.containers.get(ws.container.id).attrs["HostConfig"]
        assert attrs["Memory"] == 256 * 1024 * 1024 and attrs["PidsLimit"] == 50
        # a fork bomb stops at the pid limit instead of taking the machine down
        ws.container.exec_run(["sh", "-c", "for i in $(seq 200); do sleep 60 & done; wait"], detach=True)
        peak, deadline = 0, time.monotonic() + 4
        while time.monotonic() < deadline:
            pids = docker_client.api.stats(ws.container.id, stream=False, one_shot=True)["pids_stats"]
            peak = max(peak, pids["current"])
        assert pids["limit"] == 50 and 45 <= peak <= 50  # it ran into the limit and no further
        ws.kill_all()
        assert ws.exec("echo still-here").stdout.strip() == "still-here"


def test_container_is_removed_on_error_and_clean_spares_live_owners(docker_client, python_demo):
    ws = Workspace(docker_client, python_demo.image, labels={LABEL_RUN: "t-clean"})
    with pytest.raises(RuntimeError):
        with ws:
            cid = ws.container.id
            raise RuntimeError("boom")
    assert not docker_client.containers.list(all=True, filters={"id": cid})
    # one container owned by this (live) process, one whose owner is gone
    live = Workspace(docker_client, python_demo.image, labels={LABEL_RUN: "t-clean"}).start()
    dead = docker_client.containers.run(python_demo.image, ["sleep", "infinity"], detach=True,
                                        labels={LABEL_RUN: "t-clean", LABEL_OWNER: "nohost:1"})
    try:
        assert clean(docker_client, "t-clean", progress=lambda m: None) == 1
        remaining = {c.id for c in run_containers(docker_client, "t-clean")}
        assert remaining == {live.container.id}
        assert clean(docker_client, "t-clean", include_live=True, progress=lambda m: None) == 1
    finally:
        live.remove()
        try:
            dead.remove(force=True)
        except Exception:
            pass


# --- an agent that attacks its own container (no shell left, a fork bomb): stopped from outside -------------
BASE = "debian:bookworm-slim"  # built by scripts/docker-up.sh; nothing to build here


def _processes(docker_client, ws) -> list[str]:
    """The container's command lines, read by a helper sharing its pid namespace (the container may have no
    shell of its own left)."""
    out = docker_client.containers.run(BASE, ["sh", "-c", LIST], pid_mode=f"container:{ws.container.id}",
                                       network_mode="none", remove=True, labels={LABEL_RUN: "t-ws"})
    return [line for line in out.decode().splitlines() if line.strip() and LIST[:20] not in line]


def test_a_container_wiped_by_its_agent_is_still_stopped_and_its_output_kept(docker_client):
    with Workspace(docker_client, BASE, labels={LABEL_RUN: "t-ws"}) as ws:
        # a process left running, then the whole filesystem deleted: no sh, no coreutils, no /tmp
        r = ws.exec("(setsid sleep 1001 &); echo before; rm -rf --no-preserve-root / 2>/dev/null; echo after",
                    timeout=60)
        assert ws.exec(["sh", "-c", "true"]).exit_code != 0  # the shell is gone indeed
        assert "before" in r.output and "after" in r.output  # read without anything inside the container
        assert "sleep 1001" in "\n".join(_processes(docker_client, ws))
        ws.kill_all()  # must not need the container's sh
        left = _processes(docker_client, ws)
        assert "sleep 1001" not in "\n".join(left) and any("sleep infinity" in line for line in left), left
        # a deadline still ends a command whose container has no shell
        r = ws.exec(["/proc/self/exe"], timeout=5)
        assert r.exit_code is not None or r.timed_out


def test_a_fork_bomb_within_the_pids_limit_is_stopped(docker_client):
    with Workspace(docker_client, BASE, labels={LABEL_RUN: "t-ws"}, pids_limit=60) as ws:
        start = time.monotonic()
        r = ws.exec("echo started; bomb() { bomb | bomb & }; bomb; sleep 1000", timeout=5)
        assert r.timed_out and "started" in r.output
        ws.kill_all()
        assert time.monotonic() - start < 30
        left = _processes(docker_client, ws)
        assert len(left) <= 2 and any("sleep infinity" in line for line in left), left
        assert ws.exec("echo alive").stdout.strip() == "alive"


def test_a_command_is_never_taken_for_timed_out_before_it_started(docker_client):
    """An attached exec start returns before the process runs (Running false, no exit code yet): that is not
    an end. Racy by nature: about 1 start in 30 was seen in that state here, so 60 tries."""
    with Workspace(docker_client, BASE, labels={LABEL_RUN: "t-ws"}) as ws:
        for _ in range(60):
            r = ws.exec("echo ok", timeout=60)
            assert (r.exit_code, r.output) == (0, "ok\n")


def test_copy_out_notes_links_without_following_them_and_rereads_a_cut_stream(docker_client, python_demo, tmp_path):
    """issue 32.4/32.5: the engine's archive is read framed at both ends (a stream whose first bytes are lost is
    read again, then an InfraError, never a smaller copy), and a symlink or hard link is noted with its target;
    the symlink is never made here (into gt/ it would hand the grader ground truth), the hard link is a copy."""
    with Workspace(docker_client, python_demo.image, labels={LABEL_RUN: "t-ws"}) as ws:
        ws.exec("mkdir -p /out/results && echo answer > /out/results/a.txt && ln /out/results/a.txt /out/results/b.txt"
                " && ln -s /tmp_workspace/gt/secret.txt /out/results/peek && echo last > /out/z.txt", check=True)
        report = ws.copy_out("/out", tmp_path / "whole")
        root = tmp_path / "whole" / "out"
        assert (root / "results" / "b.txt").read_text() == "answer\n" and (root / "z.txt").is_file()
        assert not (root / "results" / "peek").is_symlink() and not (root / "results" / "peek").exists()
        assert report.symlinks == [{"path": "out/results/peek", "target": "/tmp_workspace/gt/secret.txt"}]
        assert [(h["path"], h["restored"]) for h in report.hardlinks] in (
            [("out/results/b.txt", True)], [("out/results/a.txt", True)])  # the engine names either one first

        real = ws.container.get_archive
        cuts = []

        def cut_first_bytes(path, *args, **kwargs):  # the engine's stream, its first 100 bytes lost
            stream, stat = real(path, *args, **kwargs)
            if not cuts:
                cuts.append(True)
                data = b"".join(stream)
                return iter([data[100:]]), stat
            cuts.append(False)
            return stream, stat

        ws.container.get_archive = cut_first_bytes
        assert ws.copy_out("/out", tmp_path / "again") and (tmp_path / "again" / "out" / "z.txt").is_file()
        assert cuts == [True, False]  # read twice: the second answer was whole
        cuts.clear()
        ws.container.get_archive = lambda path, *a, **k: (iter([b"".join(real(path)[0])[100:]]), {})
        with pytest.raises(InfraError, match="came back cut twice"):
            ws.copy_out("/out", tmp_path / "cut")
        assert not (tmp_path / "cut" / "out").exists()


def test_a_single_file_past_the_cap_is_left_out_without_being_streamed(docker_client, python_demo, tmp_path):
    with Workspace(docker_client, python_demo.image, labels={LABEL_RUN: "t-ws"}) as ws:
        ws.exec("head -c 3000000 /dev/zero > /tmp/big.bin", check=True)
        streamed = []
        real = ws.container.get_archive

        def counted(path, *a, **k):
            stream, stat = real(path, *a, **k)
            return (streamed.append(chunk) or chunk for chunk in stream), stat

        ws.container.get_archive = counted
        report = ws.copy_out("/tmp/big.bin", tmp_path, max_bytes=1_000_000)
        assert report.left_out == ["big.bin"] and not streamed and not (tmp_path / "big.bin").exists()
        assert "big.bin" in (tmp_path / "COPY_TRUNCATED.txt").read_text()
        assert ws.copy_out("/tmp/big.bin", tmp_path, max_bytes=4_000_000).bytes == 3_000_000
