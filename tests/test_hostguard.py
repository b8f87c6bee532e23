"""The host firewall rules of two runs that start at once (CI runs tests two at a time): each run's ACCEPT of
the gateway port must stay above its own REJECT, however the other run's inserts land between its own. With
ACCEPT inserted at 1 and REJECT at 2, a run starting in between put this run's REJECT first: its agents met
"connection refused" at the gateway (test_harness_node's claude-code run, in CI). The chain is a plain list
here (pure logic); tests/test_isolation.py and test_container.py check the rules in the real iptables."""
import subprocess

from pytest_clawswe.engine.network import hostguard


class _Chain:
    """INPUT as iptables keeps it: `-I INPUT N rule...` inserts at N (1-based), `-S INPUT` lists."""

    def __init__(self):
        self.rules: list[list[str]] = []
        self.between = None  # run once, right after the first insert: another run's guard() landing there

    def __call__(self, *args):
        if args[0] == "-I":
            self.rules.insert(int(args[2]) - 1, list(args[3:]))
            if self.between is not None:
                between, self.between = self.between, None
                between()
        elif args[0] == "-S":
            out = "\n".join(" ".join(["-A", "INPUT", *r]) for r in self.rules)
            return subprocess.CompletedProcess(args, 0, out, "")
        elif args[0] == "-D":
            self.rules.remove(list(args[2:]))
        return subprocess.CompletedProcess(args, 0, "", "")

    def verdict(self, bridge: str, port: int) -> str:
        """What the first matching rule does to a TCP packet from `bridge` to `port`."""
        for rule in self.rules:
            if rule[rule.index("-i") + 1] != bridge:
                continue
            if "--dport" in rule and rule[rule.index("--dport") + 1] != str(port):
                continue
            return rule[-1]
        return "ACCEPT (no rule)"


def only_iptables(monkeypatch):
    # iptables is the list above; ip6tables is "not installed", so that unguard() never lists the host's real
    # ip6tables (nor fails on a machine without it: the fast subset needs neither)
    monkeypatch.setattr(hostguard.shutil, "which", lambda name: "/usr/sbin/iptables" if name == "iptables" else None)


def test_two_runs_guarding_at_once_each_keep_their_gateway_port_open(monkeypatch):
    chain = _Chain()
    monkeypatch.setattr(hostguard, "_iptables", chain)
    only_iptables(monkeypatch)
    monkeypatch.setattr(hostguard, "bridge_of", lambda client, network: f"br-{network}")
    chain.between = lambda: hostguard.guard(None, "b", 9002, "run-b")  # run B lands inside run A's guard
    assert hostguard.guard(None, "a", 9001, "run-a") is None
    assert len(chain.rules) == 4
    assert chain.verdict("br-a", 9001) == "ACCEPT" and chain.verdict("br-b", 9002) == "ACCEPT"
    assert chain.verdict("br-a", 22) == "REJECT" and chain.verdict("br-b", 9001) == "REJECT"


def test_a_run_removes_exactly_its_own_rules(monkeypatch):
    chain = _Chain()
    monkeypatch.setattr(hostguard, "_iptables", chain)
    only_iptables(monkeypatch)
    monkeypatch.setattr(hostguard, "bridge_of", lambda client, network: f"br-{network}")
    hostguard.guard(None, "a", 9001, "run-a")
    hostguard.guard(None, "b", 9002, "run-b")
    assert hostguard.unguard("run-a") == 2
    assert chain.verdict("br-b", 9002) == "ACCEPT" and chain.verdict("br-a", 22) == "ACCEPT (no rule)"
    assert len(hostguard.rules("run-b")) == 2 and hostguard.rules("run-a") == []
