#!/usr/bin/env python3
"""NetworkPolicy for the test cluster's nodes (scripts/kube-cluster.sh): the bridge CNI enforces none.

One process per node, in that node's network namespace (where no pod can change a rule): every half second it
reads the cluster's pods and NetworkPolicies (networking.k8s.io/v1) and writes, with one iptables-restore, the
rules that enforce the policies selecting this node's pods:

  CLAWSWE-NETPOL          from FORWARD and INPUT for traffic from or to this node's pod range
    ESTABLISHED,RELATED   accepted (answers; connections made before a policy changed)
    from a local pod   -> CLAWSWE-NETPOL-OUT: the pod's egress rules, then REJECT when a policy isolates it
    to a local pod     -> CLAWSWE-NETPOL-IN:  the pod's ingress rules, likewise
  a pod this process has not seen yet (no address in its last read) reaches nothing and is reached by nothing:
  fail closed, until the next read (at most ~0.5 s after the pod has its address).

What a policy may say: podSelector (matchLabels, matchExpressions), policyTypes, ingress/egress rules with
`ipBlock` (cidr, except), `podSelector` and `namespaceSelector` peers, and numbered ports (TCP/UDP/SCTP). A
named port matches nothing (stricter, never looser). Traffic from the node itself to its pods (the kubelet) is
not filtered, as in the common CNIs. Only Python's standard library: it runs beside the cluster, not in it.

  kube-netpol.py --api URL --ca FILE --token-file FILE --node NAME --pod-cidr CIDR
  kube-netpol.py --remove          removes the chains and jumps from this network namespace
"""
from __future__ import annotations

import argparse
import ipaddress
import json
import ssl
import subprocess
import sys
import time
import urllib.request

CHAIN, OUT, IN = "CLAWSWE-NETPOL", "CLAWSWE-NETPOL-OUT", "CLAWSWE-NETPOL-IN"
COMMENT = "clawswe-kube-netpol"


def get(api: str, path: str, token: str, context: ssl.SSLContext) -> dict:
    request = urllib.request.Request(api + path, headers={"Authorization": f"Bearer {token}"})
    with urllib.request.urlopen(request, context=context, timeout=10) as answer:
        return json.load(answer)


def matches(selector: dict | None, labels: dict) -> bool:
    """A LabelSelector; an empty one selects everything, a missing one (None) nothing."""
    if selector is None:
        return False
    for key, value in (selector.get("matchLabels") or {}).items():
        if labels.get(key) != value:
            return False
    for expr in selector.get("matchExpressions") or []:
        key, op, values = expr.get("key"), expr.get("operator"), expr.get("values") or []
        if op == "In" and labels.get(key) not in values:
            return False
        if op == "NotIn" and key in labels and labels[key] in values:
            return False
        if op == "Exists" and key not in labels:
            return False
        if op == "DoesNotExist" and key in labels:
            return False
        if op not in ("In", "NotIn", "Exists", "DoesNotExist"):
            return False
    return True


def peer_sources(peer: dict, policy_ns: str, pods: list[dict], namespaces: dict[str, dict]) -> list[tuple[str, list[str]]]:
    """(cidr, excepted cidrs) for one `from`/`to` peer."""
    if "ipBlock" in peer:
        block = peer["ipBlock"]
        return [(block["cidr"], block.get("except") or [])]
    found = []
    for pod in pods:
        ns = pod["metadata"]["namespace"]
        if "namespaceSelector" in peer:
            if not matches(peer["namespaceSelector"], namespaces.get(ns, {})):
                continue
        elif ns != policy_ns:
            continue
        if "podSelector" in peer and not matches(peer["podSelector"], pod["metadata"].get("labels") or {}):
            continue
        found.append((f"{pod['status']['podIP']}/32", []))
    return found


def rule_lines(chain: str, own: str, direction: str, rule: dict, policy_ns: str, pods, namespaces) -> list[str]:
    """RETURN lines for what one ingress/egress rule allows the pod at `own` (then the next check runs)."""
    key = "to" if direction == "egress" else "from"
    mine, other = ("-s", "-d") if direction == "egress" else ("-d", "-s")
    peers = rule.get(key)
    blocks: list[tuple[str | None, list[str]]] = [(None, [])] if not peers else \
        [b for peer in peers for b in peer_sources(peer, policy_ns, pods, namespaces)]
    ports = rule.get("ports") or [None]
    lines = []
    for cidr, excepted in blocks:
        for port in ports:
            match = f"{mine} {own}/32"
            if cidr is not None:
                match += f" {other} {cidr}"
            if port is not None:
                number = port.get("port")
                if number is not None and not isinstance(number, int):
                    continue  # a named port: this enforcer resolves none, so it allows nothing
                match += f" -p {(port.get('protocol') or 'TCP').lower()}"
                if number is not None:
                    end = port.get("endPort")
                    match += f" --dport {number}" + (f":{end}" if end else "")
            # one rule cannot say "in this range but not those": the excepted ranges are refused first
            # (stricter than the API when another rule allows them: never looser)
            for ex in excepted:
                lines.append(f"-A {chain} {mine} {own}/32 {other} {ex} -j REJECT")
            lines.append(f"-A {chain} {match} -j RETURN")
    return lines


def ruleset(node: str, pod_cidr: str, pods: list[dict], policies: list[dict], namespaces: dict[str, dict]) -> str:
    network = ipaddress.ip_network(pod_cidr)
    addressed = [p for p in pods if (p.get("status") or {}).get("podIP")
                 and not (p.get("spec") or {}).get("hostNetwork")]
    local = [p for p in addressed if p.get("spec", {}).get("nodeName") == node
             and ipaddress.ip_address(p["status"]["podIP"]) in network]
    out, inn = [], []
    for pod in local:
        ip, ns = pod["status"]["podIP"], pod["metadata"]["namespace"]
        labels = pod["metadata"].get("labels") or {}
        selecting = [pol for pol in policies if pol["metadata"]["namespace"] == ns
                     and matches(pol["spec"].get("podSelector", {}), labels)]
        for direction, lines, chain in (("egress", out, OUT), ("ingress", inn, IN)):
            isolating = [pol for pol in selecting if _isolates(pol["spec"], direction)]
            flag = "-s" if direction == "egress" else "-d"
            if not isolating:
                lines.append(f"-A {chain} {flag} {ip}/32 -j RETURN")
                continue
            for pol in isolating:
                for rule in pol["spec"].get(direction) or []:
                    lines += rule_lines(chain, ip, direction, rule, ns, addressed, namespaces)
            lines.append(f"-A {chain} {flag} {ip}/32 -p tcp -j REJECT --reject-with tcp-reset")
            lines.append(f"-A {chain} {flag} {ip}/32 -j REJECT")
    # a pod not seen yet: nothing in, nothing out
    out += [f"-A {OUT} -p tcp -j REJECT --reject-with tcp-reset", f"-A {OUT} -j REJECT"]
    inn += [f"-A {IN} -p tcp -j REJECT --reject-with tcp-reset", f"-A {IN} -j REJECT"]
    head = [f"-A {CHAIN} -m conntrack --ctstate ESTABLISHED,RELATED -j ACCEPT",
            f"-A {CHAIN} -s {pod_cidr} -j {OUT}",
            f"-A {CHAIN} -d {pod_cidr} -j {IN}"]
    return "\n".join(["*filter", f":{CHAIN} - [0:0]", f":{OUT} - [0:0]", f":{IN} - [0:0]",
                      *head, *out, *inn, "COMMIT", ""])


def _isolates(spec: dict, direction: str) -> bool:
    types = spec.get("policyTypes")
    if types is None:  # the API's default: Ingress, and Egress when the policy has egress rules
        types = ["Ingress"] + (["Egress"] if spec.get("egress") else [])
    return direction.capitalize() in types


def iptables(*args: str, check: bool = True) -> bool:
    return subprocess.run(["iptables", "-w", *args], capture_output=True, check=check).returncode == 0


def install_jumps(pod_cidr: str) -> None:
    for hook in ("FORWARD", "INPUT"):
        for flag in ("-s", "-d"):
            rule = [hook, flag, pod_cidr, "-m", "comment", "--comment", COMMENT, "-j", CHAIN]
            if not iptables("-C", *rule, check=False):
                iptables("-I", rule[0], "1", *rule[1:])


def remove() -> None:
    listing = subprocess.run(["iptables", "-w", "-S"], capture_output=True, text=True).stdout.splitlines()
    for line in listing:
        if f"--comment {COMMENT}" in line and line.startswith("-A "):
            iptables("-D", *line[3:].split(), check=False)
    for chain in (CHAIN, OUT, IN):
        iptables("-F", chain, check=False)
    for chain in (CHAIN, OUT, IN):
        iptables("-X", chain, check=False)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--api")
    parser.add_argument("--ca")
    parser.add_argument("--token-file")
    parser.add_argument("--node")
    parser.add_argument("--pod-cidr")
    parser.add_argument("--interval", type=float, default=0.5)
    parser.add_argument("--remove", action="store_true")
    args = parser.parse_args()
    if args.remove:
        remove()
        return 0
    token = open(args.token_file).read().strip()
    context = ssl.create_default_context(cafile=args.ca)
    # the chains exist before the jumps: empty ones first (fail closed from the start: nothing from a pod passes)
    subprocess.run(["iptables-restore", "-w", "--noflush"], check=True, text=True,
                   input=ruleset(args.node, args.pod_cidr, [], [], {}))
    install_jumps(args.pod_cidr)
    applied = ""
    while True:
        try:
            pods = get(args.api, "/api/v1/pods", token, context)["items"]
            policies = get(args.api, "/apis/networking.k8s.io/v1/networkpolicies", token, context)["items"]
            namespaces = {n["metadata"]["name"]: n["metadata"].get("labels") or {}
                          for n in get(args.api, "/api/v1/namespaces", token, context)["items"]}
        except OSError as exc:  # the API server is away: the rules stay as they are
            print(f"kube-netpol: cannot read the cluster ({exc}); rules unchanged", file=sys.stderr, flush=True)
            time.sleep(args.interval * 4)
            continue
        rules = ruleset(args.node, args.pod_cidr, pods, policies, namespaces)
        if rules != applied:
            done = subprocess.run(["iptables-restore", "-w", "--noflush"], input=rules, text=True,
                                  capture_output=True)
            if done.returncode == 0:
                applied = rules
            else:
                print(f"kube-netpol: iptables-restore failed: {done.stderr.strip()}", file=sys.stderr, flush=True)
        time.sleep(args.interval)


if __name__ == "__main__":
    sys.exit(main())
