"""The internet network (`--network internet`): agents reach public addresses, as the released WildClawBench
runner's did on Docker's default network, but not this host, private or link-local addresses, nor each other.

The network is an ordinary Docker bridge (a route out, NAT, Docker's embedded DNS) with traffic between its
containers off and no IPv6. What its containers may not reach is refused by host firewall rules, where the
agent (root in its container, without NET_ADMIN) cannot change them:

- INPUT (hostguard.guard): the host's own addresses, every one of them, except the model gateway's port;
- DOCKER-USER (FORWARD when Docker keeps no such chain): the private, shared (CGNAT), link-local (metadata
  services), loopback, "this network", multicast and reserved IPv4 ranges, so no other machine of the host's
  networks, no cloud metadata address, no container of another network;
- DNS to the host's own resolvers where they sit in those ranges (Docker's resolver forwards the containers'
  queries from their network namespace): port 53 of those addresses only;
- ip6tables, where there is one: nothing from the bridge (the network has no IPv6; belt and braces).

Every rule names its bridge (`-i`) and its run in a comment, exactly like hostguard's, so the run's sweep and
`clawswe clean` remove them with the network; two runs' rules never match each other's packets. Each run
inserts its REJECTs at the top before its ACCEPTs (also at the top): its exceptions stay above its own
refusals however another run's inserts land between them.
"""
from __future__ import annotations

import ipaddress
import os
import shutil
import subprocess
from pathlib import Path

import docker.errors

from pytest_clawswe.engine.network import hostguard
from pytest_clawswe.engine.network.locked import NO_INTER_CONTAINER
from pytest_clawswe.errors import InfraError
from pytest_clawswe.labels import owner_label

# Addresses that are not the internet (RFC 1918 private, RFC 6598 shared, RFC 3927 link-local with the cloud
# metadata services, loopback, "this network", multicast, reserved): none of them is a package index or a web
# site, and each may be this host's neighbours, a metadata endpoint or another run's containers.
BLOCKED_V4 = ("10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "100.64.0.0/10", "169.254.0.0/16",
              "127.0.0.0/8", "0.0.0.0/8", "224.0.0.0/4", "240.0.0.0/4")
RESOLV_FILES = ("/etc/resolv.conf", "/run/systemd/resolve/resolv.conf")  # as Docker reads them


def why_not_possible() -> str | None:
    """Why this machine cannot hold the rules (one clause), or None."""
    if os.geteuid() != 0:
        return "not running as root"
    if shutil.which("iptables") is None:
        return "iptables is not installed"
    done = subprocess.run(["iptables", "-w", "-S", "INPUT"], capture_output=True, text=True)
    if done.returncode != 0:
        return (done.stderr.strip().splitlines() or [f"iptables exited {done.returncode}"])[-1]
    return None


def create_internet_network(client, name: str, labels: dict[str, str]) -> None:
    """A bridge with a route out, its containers apart from each other, IPv4 only."""
    try:
        net = client.networks.get(name)
    except docker.errors.NotFound:
        try:
            net = client.networks.create(name, driver="bridge", internal=False, enable_ipv6=False,
                                         options=NO_INTER_CONTAINER, labels={**labels, **owner_label()})
        except docker.errors.APIError as exc:
            if exc.status_code != 409:  # another process made it first
                raise InfraError(f"could not create the run's network {name}: {exc}") from exc
            net = client.networks.get(name)
    net.reload()
    if net.attrs.get("Internal") or net.attrs.get("EnableIPv6"):
        raise InfraError(f"the network {name} exists with other settings (internal or IPv6); remove it "
                         "(clawswe clean) and start again", retryable=False)


def resolvers() -> list[str]:
    """The IPv4 nameservers Docker's resolver forwards to from the containers (loopback ones it asks from the
    host itself, so they need no rule): the host's resolv.conf, or systemd-resolved's when that one only names
    its local stub."""
    for path in RESOLV_FILES:
        try:
            lines = Path(path).read_text().splitlines()
        except OSError:
            continue
        found = [parts[1] for parts in (line.split() for line in lines) if len(parts) > 1 and parts[0] == "nameserver"]
        v4 = [a for a in found if _is_v4(a)]
        if v4 and not all(ipaddress.ip_address(a).is_loopback for a in v4):
            return [a for a in v4 if not ipaddress.ip_address(a).is_loopback]
    return []


def _is_v4(text: str) -> bool:
    try:
        return ipaddress.ip_address(text).version == 4
    except ValueError:
        return False


def _blocked(address: str) -> bool:
    return any(ipaddress.ip_address(address) in ipaddress.ip_network(r) for r in BLOCKED_V4)


def egress_chain() -> str:
    """DOCKER-USER when Docker keeps it (FORWARD jumps there before Docker's own accepts), else FORWARD."""
    return "DOCKER-USER" if hostguard._iptables("-S", "DOCKER-USER").returncode == 0 else "FORWARD"


def egress_rules(bridge: str, tag: str, dns: list[str]) -> list[list[str]]:
    """The run's egress rules in the order they are inserted (each at the top): refusals, then exceptions."""
    head = ["-i", bridge, "-m", "comment", "--comment", tag]
    rules = [[*head, "-d", net, "-j", "REJECT"] for net in BLOCKED_V4]
    for address in (a for a in dns if _blocked(a)):
        rules += [[*head, "-d", f"{address}/32", "-p", proto, "--dport", "53", "-j", "ACCEPT"] for proto in ("udp", "tcp")]
    return rules


def guard_internet(client, network: str, port: int, run_id: str) -> str | None:
    """Put the run's rules in place (hostguard.guard for the host, then egress). None when done, else why not
    (every rule of the run removed again: never half a guard)."""
    why = hostguard.guard(client, network, port, run_id)  # removes what an earlier attempt of the run left
    if why:
        return why
    bridge, tag = hostguard.bridge_of(client, network), hostguard.COMMENT + run_id
    chain = egress_chain()
    for rule in egress_rules(bridge, tag, resolvers()):
        done = hostguard._iptables("-I", chain, "1", *rule)
        if done.returncode != 0:
            hostguard.unguard(run_id)
            return done.stderr.strip().splitlines()[-1] if done.stderr.strip() else f"exit {done.returncode}"
    if shutil.which("ip6tables") is not None:  # no IPv6 from the bridge at all, to the host or beyond
        for ipv6_chain in ("INPUT", "FORWARD"):
            hostguard._ip6tables("-I", ipv6_chain, "1", "-i", bridge, "-m", "comment", "--comment", tag, "-j", "REJECT")
    return None
