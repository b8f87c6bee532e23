"""What an agent can reach and read from inside its container during a real run (issue: egress lock)."""
import json
import socket

import pytest

from pytest_clawswe.engine.network import hostguard

pytestmark = pytest.mark.docker
SECRET = "sk-or-REAL-KEY-MUST-NOT-LEAK"


@pytest.fixture
def host_service():
    """A service on this host listening on every address, as databases and SSH daemons do."""
    with socket.create_server(("0.0.0.0", 0)) as server:
        yield server.getsockname()[1]


def probe(pytester, rootpath, instance, tmp_path, host_port, *extra):
    run_dir = tmp_path / "probe"
    result = pytester.runpytest_subprocess(
        f"--harness={rootpath}/tests/fake_harnesses.py:ProbeHarness", "--model", "scripted/noop",
        "--dataset", "demo", "--instance-ids", instance.instance_id, "--run-dir", str(run_dir),
        "--harness-option", f"host_port={host_port}", "-p", "no:cacheprovider", *extra, timeout=600)
    assert "host firewall" not in result.stdout.str() + result.stderr.str()  # the lock was complete
    text = (run_dir / "instances" / instance.instance_id / "probe.txt").read_text()
    return dict(line.split("=", 1) for line in text.splitlines() if "=" in line), run_dir


def test_a_locked_agent_reaches_the_gateway_and_nothing_else(pytester, python_demo, tmp_path, monkeypatch,
                                                            host_service, docker_client):
    monkeypatch.setenv("OPENROUTER_API_KEY", SECRET)
    seen, run_dir = probe(pytester, pytester._request.config.rootpath, python_demo, tmp_path, host_service)
    assert seen["gateway"] == "reached"
    assert {seen[k] for k in ("host_service", "mirror", "pypi", "github", "ip", "dns")} == {"blocked"}, seen
    # the run's firewall rules went with its network
    run_id = json.loads((run_dir / "run.json").read_text())["run_id"]
    assert hostguard.rules(run_id) == []
    assert docker_client.networks.list(names=[f"clawswe-{run_id}"]) == []
    assert seen["env_has_key"] == "0"
    assert seen["gold_seen"] == "0" and seen["test_name_seen"] == "0", seen
    commits, ancestors = seen["commits"].split(" ancestors=")
    assert commits == ancestors  # no future history
    leaked = [p for p in run_dir.rglob("*") if p.is_file() and SECRET in p.read_text(errors="replace")]
    assert leaked == []


def test_network_open_is_an_explicit_choice(pytester, python_demo, tmp_path, host_service):
    seen, run_dir = probe(pytester, pytester._request.config.rootpath, python_demo, tmp_path, host_service,
                          "--network", "open")
    assert seen["gateway"] == seen["mirror"] == seen["host_service"] == "reached"
    assert json.loads((run_dir / "run.json").read_text())["harness"] == "probe"


def test_clean_removes_the_firewall_rules_a_killed_run_left(docker_client):
    from pytest_clawswe.labels import LABEL_OWNER, LABEL_RUN
    from pytest_clawswe.run.clean import clean

    run_id = "t-guard"
    net = docker_client.networks.create(f"clawswe-{run_id}", internal=True,
                                        labels={LABEL_RUN: run_id, LABEL_OWNER: "nohost:1"})  # owner gone
    try:
        assert hostguard.guard(docker_client, net.name, 9, run_id) is None
        assert hostguard.guard(docker_client, net.name, 9, run_id) is None  # again (a resume): still one set
        found = hostguard.rules(run_id)
        assert len(found) == 2 and all(hostguard.bridge_of(docker_client, net.name) in r for r in found)
        assert clean(docker_client, run_id, progress=lambda m: None) == 3  # the network and its two rules
        assert hostguard.rules(run_id) == []
    finally:
        hostguard.unguard(run_id)
        for n in docker_client.networks.list(names=[net.name]):
            n.remove()
