"""What an agent's container reaches under each `--network` value (issue 31 §3), in real WildClawBench runs.

The probe harness (tests/fake_harnesses.py:NetProbeHarness) looks from inside its task container at: the internet
(`pip download six`: the package indexes stand in for it here), a service of this host (at the network's host
address and at this host's own address), a sibling container on the same network (another agent), a service on a
private-range and one on a link-local address, and the model gateway. The two addresses belong to test hosts this
test makes itself (network namespaces joined to the host by veth pairs); no test traffic goes anywhere else.

    network          internet  host service  sibling  private host  link-local host  gateway
    internet (default) yes       no            no       no            no               yes
    locked             no        no            no       no            no               yes
    open               yes       yes           yes      yes           yes              yes

Needs root, iptables and `ip netns` (as CI has)."""
from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import time
from contextlib import contextmanager
from pathlib import Path

import pytest

from pytest_clawswe.engine.network import hostguard
from pytest_clawswe.engine.network.locked import local_address_towards

SUITE = Path(__file__).parent / "data" / "wildclaw-netablate"
TASK = "01_Productivity_Flow_task_1_netprobe"
HARNESS = str(Path(__file__).parent / "fake_harnesses.py") + ":NetProbeHarness"

MATRIX = {  # what each --network value reaches (None: the benchmark's default, internet)
    None: {"internet": "reached", "host_service": "blocked", "host_address": "blocked", "sibling": "blocked",
           "private_host": "blocked", "link_local_host": "blocked", "gateway": "reached"},
    "locked": {"internet": "blocked", "host_service": "blocked", "host_address": "blocked", "sibling": "blocked",
               "private_host": "blocked", "link_local_host": "blocked", "gateway": "reached"},
    "open": {"internet": "reached", "host_service": "reached", "host_address": "reached", "sibling": "reached",
             "private_host": "reached", "link_local_host": "reached", "gateway": "reached"},
}


def _ip(*args: str, netns: str | None = None) -> None:
    cmd = ["ip", *(["netns", "exec", netns, "ip"] if netns else []), *args]
    subprocess.run(cmd, check=True, capture_output=True)


@contextmanager
def made_host(name: str, host_side: str, address: str):
    """A network namespace with a TCP service at `address` (a /24 on its end of a veth pair, `host_side` on ours);
    yields 'address:port'."""
    ns, outer, inner = f"cw-{name}", f"cwh-{name}", f"cwn-{name}"
    server = None
    try:
        subprocess.run(["ip", "netns", "add", ns], check=True, capture_output=True)
        _ip("link", "add", outer, "type", "veth", "peer", "name", inner)
        _ip("link", "set", inner, "netns", ns)
        _ip("addr", "add", f"{host_side}/24", "dev", outer)
        _ip("link", "set", outer, "up")
        _ip("addr", "add", f"{address}/24", "dev", inner, netns=ns)
        _ip("link", "set", inner, "up", netns=ns)
        _ip("link", "set", "lo", "up", netns=ns)
        server = subprocess.Popen(["ip", "netns", "exec", ns, "python3", "-c",
                                   "import socket,sys;s=socket.create_server((sys.argv[1],8080));"
                                   "[s.accept()[0].close() for _ in iter(int,1)]", address],
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        for _ in range(50):  # it listens once the probe from the host (a test-made address) connects
            try:
                socket.create_connection((address, 8080), timeout=1).close()
                break
            except OSError:
                time.sleep(0.1)
        yield f"{address}:8080"
    finally:
        if server is not None:
            server.kill()
            server.wait()
        subprocess.run(["ip", "link", "del", outer], capture_output=True)
        subprocess.run(["ip", "netns", "del", ns], capture_output=True)


@pytest.fixture
def test_hosts():
    """A private-range and a link-local test host, made here (per process: two test runs do not collide)."""
    if os.geteuid() != 0 or not shutil.which("iptables") or not shutil.which("ip"):
        pytest.skip("needs root, iptables and ip netns")
    n = os.getpid() % 200 + 20
    with made_host(f"p{os.getpid()}", f"10.213.{n}.1", f"10.213.{n}.2") as private, \
            made_host(f"l{os.getpid()}", f"169.254.{n}.1", f"169.254.{n}.2") as link_local:
        yield private, link_local


@pytest.fixture
def host_service():
    """A service on this host listening on every address, as databases and SSH daemons do."""
    with socket.create_server(("0.0.0.0", 0)) as server:
        yield server.getsockname()[1]


def probe(pytester, run_dir: Path, host_port: int, private: str, link_local: str, *network: str) -> dict:
    # this host's own address (the one its traffic to the package index leaves from; a UDP connect sends nothing)
    host_addr = local_address_towards(socket.gethostbyname("pypi.org"))
    result = pytester.runpytest_subprocess(
        "-p", "no:cacheprovider", "--benchmark", "wildclaw", "--dataset", str(SUITE), "-k", "netprobe",
        "--harness", HARNESS, "--model", "scripted/noop", "--judge-model", "scripted", "--run-dir", str(run_dir),
        "--harness-option", f"host_port={host_port}", "--harness-option", f"host_addr={host_addr}",
        "--harness-option", f"private={private}", "--harness-option", f"link_local={link_local}", *network,
        timeout=900)
    output = result.stdout.str() + result.stderr.str()
    assert "host firewall" not in output, output[-3000:]  # every lock in place
    text = (run_dir / "tasks" / TASK / "netprobe.txt").read_text()
    return dict(line.split("=", 1) for line in text.splitlines() if "=" in line)


@pytest.mark.docker
@pytest.mark.parametrize("network", [None, "locked", "open"], ids=["default-internet", "locked", "open"])
def test_what_an_agent_reaches_under_each_network(pytester, tmp_path, docker_client, test_hosts, host_service,
                                                  network):
    private, link_local = test_hosts
    run_dir = tmp_path / "run"
    seen = probe(pytester, run_dir, host_service, private, link_local, *(["--network", network] if network else []))
    assert {k: seen[k] for k in MATRIX[network]} == MATRIX[network], seen
    info = json.loads((run_dir / "run.json").read_text())
    assert info["network"] == (network or "internet")
    if network != "open":
        assert seen["ipv6_off"] == "1"  # no IPv6 either, to go around the rules
    # the run's rules and network went with it
    assert hostguard.rules(info["run_id"]) == [] and hostguard.rules(info["run_id"], "ip6tables") == []
    assert docker_client.networks.list(names=[f"clawswe-{info['run_id']}"]) == []


# -- without Docker -----------------------------------------------------------------------------------------------
class _Chains:
    """iptables as a dict of chains: `-I CHAIN N rule...` inserts at N (1-based), `-S [CHAIN]` lists."""

    def __init__(self):
        self.chains: dict[str, list[list[str]]] = {"INPUT": [], "FORWARD": [], "DOCKER-USER": []}
        self.between = None  # run once, right after the first insert: another run's rules landing there

    def __call__(self, *args):
        if args[0] == "-I":
            self.chains[args[1]].insert(int(args[2]) - 1, list(args[3:]))
            if self.between is not None:
                between, self.between = self.between, None
                between()
        elif args[0] == "-S":
            names = [args[1]] if len(args) > 1 else list(self.chains)
            if any(n not in self.chains for n in names):
                return subprocess.CompletedProcess(args, 1, "", "No chain/target/match by that name.")
            out = "\n".join(" ".join(["-A", n, *r]) for n in names for r in self.chains[n])
            return subprocess.CompletedProcess(args, 0, out, "")
        elif args[0] == "-D":
            self.chains[args[1]].remove(list(args[2:]))
        return subprocess.CompletedProcess(args, 0, "", "")

    def verdict(self, chain: str, bridge: str, dest: str, port: int = 80, proto: str = "tcp") -> str:
        import ipaddress

        for rule in self.chains[chain]:
            if rule[rule.index("-i") + 1] != bridge:
                continue
            if "-d" in rule and ipaddress.ip_address(dest) not in ipaddress.ip_network(rule[rule.index("-d") + 1]):
                continue
            if "-p" in rule and rule[rule.index("-p") + 1] != proto:
                continue
            if "--dport" in rule and rule[rule.index("--dport") + 1] != str(port):
                continue
            return rule[-1]
        return "ACCEPT (no rule)"


def test_two_runs_guarding_at_once_keep_their_dns_exception_above_their_refusals(monkeypatch):
    from pytest_clawswe.engine.network import internet

    chains = _Chains()
    monkeypatch.setattr(hostguard, "_iptables", chains)
    monkeypatch.setattr(hostguard, "_ip6tables", lambda *a: subprocess.CompletedProcess(a, 0, "", ""))
    # (shutil is one module: no ip6tables here)
    monkeypatch.setattr(hostguard.shutil, "which", lambda name: None if name == "ip6tables" else f"/usr/sbin/{name}")
    monkeypatch.setattr(hostguard, "bridge_of", lambda client, network: f"br-{network}")
    monkeypatch.setattr(internet, "resolvers", lambda: ["10.255.255.53", "203.0.113.53"])
    chains.between = lambda: internet.guard_internet(None, "b", 9002, "run-b")  # run B lands inside run A's
    assert internet.guard_internet(None, "a", 9001, "run-a") is None
    for bridge, port in (("br-a", 9001), ("br-b", 9002)):
        assert chains.verdict("INPUT", bridge, "172.18.0.1", port) == "ACCEPT"  # the gateway
        assert chains.verdict("INPUT", bridge, "172.18.0.1", 22) == "REJECT"  # every other host service
        assert chains.verdict("DOCKER-USER", bridge, "10.255.255.53", 53, "udp") == "ACCEPT"  # the host's resolver
        assert chains.verdict("DOCKER-USER", bridge, "10.255.255.53", 80) == "REJECT"  # only its DNS
        for private in ("10.1.2.3", "172.17.0.5", "192.168.1.1", "100.64.0.1", "169.254.169.254", "127.0.0.1"):
            assert chains.verdict("DOCKER-USER", bridge, private, 443) == "REJECT", private
        assert chains.verdict("DOCKER-USER", bridge, "203.0.113.80", 443) == "ACCEPT (no rule)"  # the internet
    assert not any("203.0.113.53" in " ".join(r) for r in chains.chains["DOCKER-USER"])  # public: no rule needed
    assert hostguard.unguard("run-a") == len(hostguard.rules("run-b")) > 0  # each run removes exactly its own
    assert chains.verdict("DOCKER-USER", "br-a", "10.1.2.3") == "ACCEPT (no rule)"
    assert chains.verdict("DOCKER-USER", "br-b", "10.1.2.3") == "REJECT"


def test_the_internet_default_without_iptables_is_one_sentence_and_nothing_runs(tmp_path):
    import sys

    # this process's Python and no sbin: iptables cannot be found, as on a machine without it
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}:/usr/bin:/bin"}
    r = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--benchmark", "wildclaw",
                        "--dataset", str(SUITE), "--harness", "claude-code", "--model", "scripted/gold",
                        "--run-dir", str(tmp_path / "run")], cwd=tmp_path, capture_output=True, text=True,
                       env=env, timeout=300)
    assert r.returncode == pytest.ExitCode.USAGE_ERROR, r.stdout[-2000:] + r.stderr[-2000:]
    lines = [line for line in r.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "the default --network internet" in lines[0] and "--network open" in lines[0]
    assert "--network locked" in lines[0] and "iptables" in lines[0]
    assert not (tmp_path / "run").exists()


@pytest.mark.docker
def test_clean_removes_the_internet_rules_a_killed_run_left(docker_client):
    if os.geteuid() != 0 or not shutil.which("iptables"):
        pytest.skip("needs root and iptables")
    from pytest_clawswe.labels import LABEL_OWNER, LABEL_RUN
    from pytest_clawswe.engine.network.internet import create_internet_network, guard_internet
    from pytest_clawswe.run.clean import clean

    run_id = f"t-inet-{os.getpid()}"
    name = f"clawswe-{run_id}"
    create_internet_network(docker_client, name, {LABEL_RUN: run_id})
    net = docker_client.networks.get(name)
    try:
        assert guard_internet(docker_client, name, 9, run_id) is None
        assert guard_internet(docker_client, name, 9, run_id) is None  # again (a resume): still one set
        v4, v6 = hostguard.rules(run_id), hostguard.rules(run_id, "ip6tables")
        chains = {r[1] for r in v4}
        assert "INPUT" in chains and ({"DOCKER-USER", "FORWARD"} & chains), v4
        assert all(hostguard.bridge_of(docker_client, name) in r for r in v4 + v6)
        assert net.attrs["Labels"][LABEL_OWNER]  # owned by this live process: a sweep that spares the live ...
        net.remove()  # ... keeps it; a killed run's network is gone or removed: its rules are orphans now
        assert clean(docker_client, run_id, progress=lambda m: None) == len(v4) + len(v6)
        assert hostguard.rules(run_id) == [] and hostguard.rules(run_id, "ip6tables") == []
    finally:
        hostguard.unguard(run_id)
        for n in docker_client.networks.list(names=[name]):
            n.remove()


def test_the_resolvers_let_through_are_those_docker_forwards_to(tmp_path, monkeypatch):
    from pytest_clawswe.engine.network import internet

    stub, upstream = tmp_path / "resolv.conf", tmp_path / "upstream.conf"
    stub.write_text("nameserver 127.0.0.53\noptions edns0\n")  # systemd-resolved's stub: Docker reads the other file
    upstream.write_text("# from DHCP\nnameserver 10.0.0.2\nnameserver fd00::1\nnameserver 8.8.8.8\n")
    monkeypatch.setattr(internet, "RESOLV_FILES", (str(stub), str(upstream)))
    assert internet.resolvers() == ["10.0.0.2", "8.8.8.8"]
    rules = internet.egress_rules("br-x", "clawswe:r", internet.resolvers())
    accepts = [r for r in rules if r[-1] == "ACCEPT"]
    assert [r[r.index("-d") + 1] for r in accepts] == ["10.0.0.2/32", "10.0.0.2/32"]  # udp and tcp; 8.8.8.8 is public
    assert rules.index(accepts[0]) > max(i for i, r in enumerate(rules) if r[-1] == "REJECT")  # inserted last: on top
    stub.write_text("nameserver 192.168.1.1\n")
    assert internet.resolvers() == ["192.168.1.1"]
