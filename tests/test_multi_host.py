"""One run over several Docker engines (issue 17 §1): the option, the worker-to-engine assignment, the up-front
check, and real runs over this machine's engine plus a second engine in a network namespace reached over
TCP+TLS (tests/second_engine.py)."""
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import pytest
from polling import wait_until
from run_containers import run_containers, run_objects
from second_engine import second_engine_fixture  # noqa: F401  (the second_engine fixture)

from pytest_clawswe.engine import hosts
from pytest_clawswe.labels import LABEL_RUN

ROOT = Path(__file__).resolve().parent.parent
FAKES = ROOT / "tests" / "fake_harnesses.py"
LOCAL = "unix:///var/run/docker.sock"


class _Options:
    def __init__(self, **values):
        self.values = values

    def getoption(self, name, default=None):
        return self.values.get(name, default)


# -- options and assignment (no Docker) --------------------------------------------------------------------
def test_no_docker_host_is_the_environments_engine():
    assert hosts.hosts(_Options(docker_host=[])) == [hosts.Host(None)]


def test_hosts_keep_their_order_and_tcp_hosts_get_the_tls_folder(tmp_path):
    found = hosts.hosts(_Options(docker_host=[LOCAL, "tcp://10.0.0.2:2376", "ssh://me@gpu-a"],
                                   docker_tls_dir=str(tmp_path)))
    assert [h.url for h in found] == [LOCAL, "tcp://10.0.0.2:2376", "ssh://me@gpu-a"]
    assert [h.tls_dir for h in found] == [None, str(tmp_path), None]


@pytest.mark.parametrize("bad, says", [("http://x:2375", "give unix://"), ("gpu-a", "give unix://"),
                                       (LOCAL + " " + LOCAL, "give unix://")])
def test_a_malformed_host_is_one_sentence(bad, says):
    with pytest.raises(pytest.UsageError, match=says):
        hosts.hosts(_Options(docker_host=[bad]))


def test_a_host_given_twice_is_refused():
    with pytest.raises(pytest.UsageError, match="given twice"):
        hosts.hosts(_Options(docker_host=[LOCAL, LOCAL]))


def test_workers_take_the_hosts_round_robin():
    got = []
    for n in range(5):
        node = SimpleNamespace(gateway=SimpleNamespace(id=f"gw{n}"), workerinput={"workerid": f"gw{n}"})
        hosts.assign(node, 2)
        got.append(hosts.worker_index(SimpleNamespace(workerinput=node.workerinput), 2))
    assert got == [0, 1, 0, 1, 0]
    assert hosts.worker_index(SimpleNamespace(), 2) == 0  # the controller or a run without xdist


def test_an_unreachable_host_stops_the_run_before_anything_is_written(pytester, tmp_path):
    run_dir = tmp_path / "run"
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--dataset", "demo", "--harness", "oracle",
                                           "--docker-host", "tcp://127.0.0.1:9", "--docker-tls-dir", str(tmp_path),
                                           "--run-dir", str(run_dir))
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*nothing answers at tcp://127.0.0.1:9*"])
    assert not run_dir.exists()


def test_a_host_that_answers_without_certificates_stops_the_run_before_anything_is_written(pytester, tmp_path):
    import socket

    run_dir = tmp_path / "run"
    with socket.socket() as listening:  # something answers there: then the missing certificates are the news
        listening.bind(("127.0.0.1", 0))
        listening.listen()
        port = listening.getsockname()[1]
        result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--dataset", "demo", "--harness", "oracle",
                                               "--docker-host", f"tcp://127.0.0.1:{port}", "--docker-tls-dir",
                                               str(tmp_path), "--run-dir", str(run_dir))
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*lacks ca.pem, cert.pem, key.pem*"])
    assert not run_dir.exists()


def test_wildclaw_with_a_model_on_another_machines_engine_is_one_sentence(pytester, tmp_path):
    run_dir = tmp_path / "run"
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--benchmark", "wildclaw", "--dataset", "demo",
                                           "--harness",
                                           "claude-code", "--model", "scripted/gold", "--docker-host",
                                           "tcp://127.0.0.1:9", "--run-dir", str(run_dir),
                                           "--network", "locked")  # the host's firewall is beside the point
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--benchmark wildclaw with a model-calling harness runs on this machine's engine*"])
    assert not run_dir.exists()


def test_a_host_that_does_not_answer_is_named(tmp_path):
    with pytest.raises(pytest.UsageError, match=r"engine at unix:///nonexistent/docker.sock cannot be used"):
        hosts.check([hosts.Host("unix:///nonexistent/docker.sock")], timeout=5)


# -- real engines ------------------------------------------------------------------------------------------
def bench(run_dir, ids, *extra, env=None, harness="oracle"):
    cmd = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--dataset", "demo", "--run-dir", str(run_dir),
           f"--harness={harness}", *extra]
    if ids:
        cmd += ["--instance-ids", ",".join(ids)]
    return subprocess.Popen(cmd, cwd=run_dir.parent, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            env={**os.environ, **(env or {})})


def two_hosts(engine):
    # DIR as --opt=DIR: pytest takes a separate argument that names an existing folder for a rootdir candidate
    return ["--docker-host", LOCAL, "--docker-host", engine.url, f"--docker-tls-dir={engine.tls_dir}"]


def results(run_dir):
    out = {}
    for meta in (run_dir / "instances").glob("*/metadata.json"):
        if not meta.parent.name.startswith("."):
            data = json.loads(meta.read_text())
            out[meta.parent.name] = data
    return out


@pytest.mark.docker
def test_demo_set_over_two_engines_equals_one_engine(second_engine, docker_client, demo_instances, demo_images,
                                                     tmp_path):
    one, two = tmp_path / "one", tmp_path / "two"
    proc = bench(one, [], "-n", "2", "--docker-host", LOCAL)
    out = proc.communicate(timeout=1800)[0]
    assert proc.returncode == 0, out
    proc = bench(two, [], "-n", "2", *two_hosts(second_engine))
    out = proc.communicate(timeout=1800)[0]
    assert proc.returncode == 0, out

    first, second = results(one), results(two)
    assert sorted(first) == sorted(i.instance_id for i in demo_instances)
    assert {k: (v["outcome"], v["resolved"]) for k, v in second.items()} == \
        {k: (v["outcome"], v["resolved"]) for k, v in first.items()}
    assert {v["docker_host"] for v in first.values()} == {LOCAL}
    assert {v["docker_host"] for v in second.values()} == {LOCAL, second_engine.url}  # both engines ran items
    # one run folder, here: every instance's prediction once
    lines = (two / "predictions.jsonl").read_text().splitlines()
    assert sorted(json.loads(line)["instance_id"] for line in lines) == sorted(first)
    for client in (docker_client, second_engine.client()):
        assert run_objects(client, one) == [] and run_objects(client, two) == []


def _dockerd_pid() -> int:
    return int(Path("/run/clawswe-e2/dockerd.pid").read_text())


@pytest.mark.docker
def test_an_engine_lost_mid_run_makes_its_items_errors_and_resume_finishes_them(second_engine, docker_client,
                                                                                demo_instances, demo_images,
                                                                                tmp_path):
    ids = [i.instance_id for i in demo_instances if i.language in ("Python", "Go", "Ruby")]
    run_dir = tmp_path / "run"
    engine2 = second_engine.client()
    proc = bench(run_dir, ids, "-n", "2", *two_hosts(second_engine), harness=f"{FAKES}:SlowOracleHarness",
                 env={"CLAWSWE_TEST_SLEEP": "20"})
    wait_until(lambda: engine2.containers.list(filters={"label": "clawswe.role=agent"}), 900,
               "an agent container runs on the second engine", interval=0.5, proc=proc)
    os.kill(_dockerd_pid(), signal.SIGKILL)  # the engine this test started dies
    out = proc.communicate(timeout=1800)[0]
    assert proc.returncode == pytest.ExitCode.TESTS_FAILED, out
    got = results(run_dir)
    by_host = {h: {k for k, v in got.items() if v["docker_host"] == h} for h in (LOCAL, second_engine.url)}
    assert by_host[LOCAL] and all(got[k]["outcome"] == "resolved" for k in by_host[LOCAL]), out  # the others go on
    lost = set(ids) - by_host[LOCAL]
    assert lost and all(got.get(k, {}).get("outcome", "error") == "error" for k in lost), out
    assert run_objects(docker_client, run_dir) == []

    # the engine comes back (same data: its images stay); the resume runs what it lost
    script = ROOT / "scripts" / "second-engine.sh"
    for step, env in (("down", {"CLAWSWE_E2_KEEP_DATA": "1"}), ("up", {})):
        done = subprocess.run([str(script), step], capture_output=True, text=True, env={**os.environ, **env})
        assert done.returncode == 0, f"second-engine.sh {step}: {done.stderr}"
    proc = bench(run_dir, ids, "-n", "2", *two_hosts(second_engine), "--resume", str(run_dir),
                 harness=f"{FAKES}:SlowOracleHarness", env={"CLAWSWE_TEST_SLEEP": "1"})
    out = proc.communicate(timeout=1800)[0]
    assert proc.returncode == 0, out
    got = results(run_dir)
    assert {k: v["outcome"] for k, v in got.items()} == {i: "resolved" for i in ids}
    for client in (docker_client, second_engine.client()):
        assert run_objects(client, run_dir) == []


@pytest.mark.docker
def test_clawswe_clean_cleans_the_engine_it_is_given(second_engine, docker_client):
    engine2 = second_engine.client()
    if not engine2.images.list(name="debian:bookworm-slim"):
        hosts.copy_image(docker_client, engine2, "debian:bookworm-slim", progress=lambda m: None)
    run_id = f"h8-clean-{os.getpid()}"
    engine2.containers.create("debian:bookworm-slim", ["true"], labels={LABEL_RUN: run_id})
    engine2.networks.create(f"clawswe-{run_id}", internal=True, labels={LABEL_RUN: run_id})
    # the firewall rules a killed run left on that engine's host (relay.py)
    from pytest_clawswe.engine.network import hostguard
    from pytest_clawswe.gateway.control import relay

    image = relay.ensure_relay_image(docker_client, [engine2], progress=lambda m: None)
    assert hostguard.remote_guard(engine2, image, f"clawswe-{run_id}", 20001, run_id) is None
    assert len(_rules(run_id, E2_NS)) == 2
    done = subprocess.run([sys.executable, "-m", "pytest_clawswe.cli", "clean", "--run-id", run_id,
                           "--docker-host", second_engine.url, "--docker-tls-dir", second_engine.tls_dir],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "removed 4 leftover object(s)" in done.stdout  # the container, the network and the two rules
    assert _rules(run_id, E2_NS) == []
    assert run_objects(engine2, run_id, volumes=False) == []


# -- a model-calling harness on another machine's engine: the relay (pytest_clawswe/relay.py) -------------
E2_NS = "clawswe-e2"  # scripts/second-engine.sh's network namespace: the second engine's host
SCRIPTED = {"mode": "gold", "gold_patch": "--- a/x\n+++ b/x\n@@ -0,0 +1 @@\n+x\n", "workdir": "/testbed"}


def _post(url, token="", headers=None, path="/v1/chat/completions"):
    import urllib.error
    import urllib.request

    body = json.dumps({"model": "m", "messages": [{"role": "user", "content": "hello"}]}).encode()
    request = urllib.request.Request(url + path, body, {"Content-Type": "application/json", **(headers or {})})
    if token:
        request.add_header("Authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(request, timeout=30) as resp:
            return resp.status
    except urllib.error.HTTPError as exc:
        return exc.code


@pytest.mark.parametrize("workers", [1, 3])
def test_the_relay_listener_believes_an_agent_address_only_with_its_engines_secret(tmp_path, workers):
    from pytest_clawswe.gateway.control.process import GatewayProcess

    e2, e3 = "tcp://e2:2376", "tcp://e3:2376"
    with GatewayProcess.start(tmp_path / "gw", relay_hosts=["127.0.0.1"], workers=workers) as gateway:
        admin, relay_url = gateway.client(), gateway.relay_urls["127.0.0.1"]
        wait_until(lambda: admin.workers() >= workers, 30, f"{workers} workers joined", interval=0.1)  # after the leader
        assert admin.workers() == workers
        secret, secret3 = admin.add_relay(e2), admin.add_relay(e3)
        token = admin.register("remote", "scripted/gold", scripted=SCRIPTED, address="10.250.16.2", relay=e2)
        local = admin.register("local", "scripted/gold", scripted=SCRIPTED, address="127.0.0.1")

        def via(url, tok, agent, key):
            return _post(url, tok, {"X-Clawswe-Agent": agent, **({"X-Clawswe-Relay": key} if key else {})})

        # every call a fresh connection: with several workers the kernel spreads them, and each one must know
        # the relay listener, the relay's secret and the token
        assert [via(relay_url, token, "10.250.16.2", secret) for _ in range(8)] == [200] * 8
        assert via(relay_url, token, "10.250.16.3", secret) == 401  # another container on that engine
        assert via(relay_url, token, "10.250.16.2", secret3) == 401  # the same address on another engine
        assert via(relay_url, token, "10.250.16.2", "forged") == 401  # a guessed secret
        assert via(relay_url, token, "10.250.16.2", "") == 401  # the address header alone
        assert via(relay_url, local, "127.0.0.1", secret) == 401  # a relay never speaks for this machine's agents
        assert via(gateway.url, token, "10.250.16.2", secret) == 401  # the relay headers count on its listener only
        assert via(gateway.url, local, "10.9.9.9", "forged") == 200  # ...and are ignored on the run's own
        admin_call = _post(relay_url, headers={"Authorization": f"Bearer {gateway.admin_token}"},
                           path="/_admin/usage")
        assert admin_call == 401  # the admin API is not on the relay listener
        assert admin.usage(token).requests == 8 and admin.usage(local).requests == 1
    assert secret not in (tmp_path / "gw" / "gateway.log").read_text()


def _rules(run_id, netns=None):
    cmd = (["ip", "netns", "exec", netns] if netns else []) + ["iptables", "-w", "-S", "INPUT"]
    return [line for line in subprocess.run(cmd, capture_output=True, text=True, check=True).stdout.splitlines()
            if f"clawswe:{run_id}" in line]


def _probe(client, network, address, port):
    out = client.containers.run("debian:bookworm-slim", ["bash", "-c", f"timeout 5 bash -c 'exec 3<>/dev/tcp/"
                                f"{address}/{port}' 2>/dev/null && echo reached || echo blocked"],
                                network=network, remove=True)
    return out.decode().strip()


@pytest.fixture
def e2_host_service(second_engine, docker_client):
    """A service on the second engine's host listening on every address (as an SSH daemon or a database would)."""
    from pytest_clawswe.gateway.control import relay

    engine2 = second_engine.client()
    image = relay.ensure_relay_image(docker_client, [engine2], progress=lambda m: None)
    if not engine2.images.list(name="debian:bookworm-slim"):
        hosts.copy_image(docker_client, engine2, "debian:bookworm-slim", progress=lambda m: None)
    port = 28999
    conf = f"events {{}} pid /tmp/n.pid; http {{ access_log off; server {{ listen {port}; return 200 ok; }} }}"
    service = engine2.containers.run(image, ["sh", "-c", f"echo '{conf}' > /tmp/n.conf && nginx -c /tmp/n.conf "
                                     "-g 'daemon off;'"], network_mode="host", detach=True,
                                     labels={LABEL_RUN: f"h1-service-{os.getpid()}"})
    try:
        time.sleep(1)
        # the control: from the engine's default bridge, the service answers on the host's bridge address
        assert _probe(engine2, "bridge", "10.250.9.1", port) == "reached"
        yield port
    finally:
        service.remove(force=True)


@pytest.mark.docker
def test_a_model_calling_harness_runs_over_two_engines_on_the_locked_network(second_engine, docker_client,
                                                                            e2_host_service, demo_instances,
                                                                            demo_images, tmp_path):
    ids = [i.instance_id for i in demo_instances if i.language in ("Python", "Go")]
    run_dir = tmp_path / "run"
    proc = bench(run_dir, ids, "-n", "2", *two_hosts(second_engine), "--model", "scripted/gold",
                 "--harness-option", f"host_port={e2_host_service}", harness=f"{FAKES}:RelayProbeHarness")
    out = proc.communicate(timeout=1800)[0]
    assert proc.returncode == 0, out
    got = results(run_dir)
    assert {k: v["outcome"] for k, v in got.items()} == {i: "resolved" for i in ids}, out
    assert {v["docker_host"] for v in got.values()} == {LOCAL, second_engine.url}  # both engines ran items
    for instance_id, meta in got.items():
        probe = dict(line.split("=", 1) for line in (run_dir / "instances" / instance_id / "probe.txt")
                     .read_text().splitlines() if "=" in line)
        assert probe["own"] == "200" and probe["forged_headers"] == "200", probe  # the relay sets its own headers
        assert probe["sibling"] == "401", probe  # its token, used from another container on its network
        assert probe["outside"] == probe["mirror"] == "blocked", probe
        assert meta["usage"]["requests"] == 2, meta  # counted, wherever the agent ran; the refused call is not
        if meta["docker_host"] == second_engine.url:
            assert probe["host_service"] == "blocked", probe  # the remote host: only the relay's port
    run_id = json.loads((run_dir / "run.json").read_text())["run_id"]
    assert "X-Clawswe-Relay" not in out
    for client in (docker_client, second_engine.client()):
        assert run_objects(client, run_dir) == []
    assert _rules(run_id) == [] and _rules(run_id, E2_NS) == []


@pytest.mark.docker
@pytest.mark.harness
def test_claude_code_scripted_gold_resolves_on_both_engines(second_engine, docker_client, demo_instances,
                                                           demo_images, tmp_path):
    ids = [i.instance_id for i in demo_instances if i.language in ("Python", "Go")]
    run_dir = tmp_path / "run"
    proc = bench(run_dir, ids, "-n", "2", *two_hosts(second_engine), "--model", "scripted/gold",
                 harness="claude-code")
    out = proc.communicate(timeout=1800)[0]
    assert proc.returncode == 0, out
    got = results(run_dir)
    assert {k: v["outcome"] for k, v in got.items()} == {i: "resolved" for i in ids}, out
    assert {v["docker_host"] for v in got.values()} == {LOCAL, second_engine.url}
    assert all(v["usage"]["requests"] >= 2 and v["usage"]["output_tokens"] > 0 for v in got.values()), got
    remote = next(k for k, v in got.items() if v["docker_host"] == second_engine.url)
    from pytest_clawswe.gateway.record.ledger import read_records

    records = read_records(run_dir / "gateway", remote)  # every gateway worker's ledger file
    assert records and all(r["stream"] and r["status"] == 200 for r in records)  # streamed through the relay
    run_id = json.loads((run_dir / "run.json").read_text())["run_id"]
    for client in (docker_client, second_engine.client()):
        assert run_objects(client, run_dir) == []
    assert _rules(run_id) == [] and _rules(run_id, E2_NS) == []


@pytest.mark.docker
def test_a_relay_whose_host_cannot_reach_the_gateway_is_found_before_any_item(second_engine, docker_client):
    from pytest_clawswe.errors import InfraError
    from pytest_clawswe.gateway.control import relay
    from pytest_clawswe.run.clean import clean

    engine2 = second_engine.client()
    image = relay.ensure_relay_image(docker_client, [engine2], progress=lambda m: None)
    run_id = f"h1-unreachable-{os.getpid()}"
    try:
        relay.start(engine2, image, run_id, "10.250.9.1", f"{second_engine.host_side_addr}:9", "secret")
        with pytest.raises(InfraError, match=r"cannot open a connection to this machine at 10\.250\.8\.1:9"):
            relay._check_reaches(engine2, run_id, f"{second_engine.host_side_addr}:9", second_engine.url)
    finally:
        clean(engine2, run_id, include_live=True, progress=lambda m: None, remote=True)
    assert run_containers(engine2, run_id) == []


@pytest.mark.docker
def test_network_open_on_another_engine_goes_through_its_relay_too(second_engine, docker_client, demo_instances,
                                                                   demo_images, tmp_path):
    ids = [i.instance_id for i in demo_instances if i.language in ("Python", "Go")]
    run_dir = tmp_path / "run"
    proc = bench(run_dir, ids, "-n", "2", *two_hosts(second_engine), "--model", "scripted/gold", "--network", "open",
                 harness=f"{FAKES}:RelayProbeHarness")
    out = proc.communicate(timeout=1800)[0]
    assert proc.returncode == 0, out
    got = results(run_dir)
    assert {v["docker_host"] for v in got.values()} == {LOCAL, second_engine.url}, out
    relays = json.loads((run_dir / "gateway" / "relays.json").read_text())
    assert list(relays) == [second_engine.url] and relays[second_engine.url].startswith("http://10.250.9.1:")
    for instance_id, meta in got.items():
        probe = (run_dir / "instances" / instance_id / "probe.txt").read_text()
        assert "own=200" in probe and "sibling=401" in probe, probe  # bound to its container on either engine
        assert meta["outcome"] == "resolved" and meta["usage"]["requests"] == 2, meta
    for client in (docker_client, second_engine.client()):
        assert run_objects(client, run_dir) == []
