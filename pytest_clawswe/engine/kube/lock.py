"""The locked network on a cluster: the run's NetworkPolicies, and the probe that proves the cluster enforces them.

Every pod of a run carries its network in a label (pod_spec.LABEL_NETWORK):
- `locked` (agents, WildClawBench's graders): egress to the gateway's address and port only; no ingress, so no
  pod reaches another (Docker's locked network: internal, no traffic between containers);
- `none` (the evaluation pods, as Docker's network_disabled): no egress, no ingress;
- `open` (`--network open`): no policy.
No DNS rule: agents get the gateway's address, not a name. A policy is a declaration; whether the cluster enforces
it is the CNI's (Calico and Cilium do, the bridge plugin does not), so before any item a probe pod on every
ready node, labelled as an agent, tries the gateway (must answer, and must see the pod's own address: tokens
are bound to it), a listener this process opens beside the gateway on another port, and the API server (neither
may answer). A cluster where a probe reaches more is refused in one sentence, unless --network open.
"""
from __future__ import annotations

import socket
import threading
from concurrent.futures import ThreadPoolExecutor

from pytest_clawswe.engine.kube import pod_exec
from pytest_clawswe.engine.kube.cluster import ApiError, dns_label
from pytest_clawswe.engine.kube.pod_spec import LABEL_NETWORK, pod_body
from pytest_clawswe.engine.kube.pod_status import wait_running
from pytest_clawswe.errors import InfraError, UserError
from pytest_clawswe.labels import LABEL_ROLE, LABEL_RUN
from pytest_clawswe.model import NOOP, Model

POLICY_LOCKED, POLICY_NONE, POLICY_INTERNET = "clawswe-locked", "clawswe-none", "clawswe-internet"
PROBE_TIMEOUT_S = 3


def policies(gateway_ip: str, gateway_port: int, hosts: tuple[str, ...] | list[str] = (), resolvers: tuple[str, ...] | list[str] = ()) -> list[dict]:
    """`internet` (--network internet, engine/network/internet.py on Docker): the gateway, DNS to `resolvers`, and every
    public address but `hosts` (this machine's and the nodes': "not this host"); the gateway's rule first, since
    an enforcer may refuse the excepted ranges before it reads the rules that follow."""
    from pytest_clawswe.engine.network.internet import BLOCKED_V4

    def policy(name: str, network: str, egress: list[dict]) -> dict:
        return {"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy", "metadata": {"name": name},
                "spec": {"podSelector": {"matchLabels": {LABEL_NETWORK: network}},
                         "policyTypes": ["Ingress", "Egress"], "ingress": [], "egress": egress}}

    gateway = [{"to": [{"ipBlock": {"cidr": f"{gateway_ip}/32"}}], "ports": [{"protocol": "TCP", "port": gateway_port}]}]
    dns = [{"to": [{"ipBlock": {"cidr": f"{r}/32"}} for r in resolvers],
            "ports": [{"protocol": "UDP", "port": 53}, {"protocol": "TCP", "port": 53}]}] if resolvers else []
    public = [{"to": [{"ipBlock": {"cidr": "0.0.0.0/0", "except": [*BLOCKED_V4, *(f"{h}/32" for h in hosts)]}}]}]
    return [policy(POLICY_LOCKED, "locked", gateway), policy(POLICY_NONE, "none", []),
            policy(POLICY_INTERNET, "internet", gateway + dns + public)]


def apply_policies(cluster, namespace: str, gateway_ip: str, gateway_port: int, hosts: tuple[str, ...] | list[str] = (),
                   resolvers: tuple[str, ...] | list[str] = ()) -> None:
    """Create or replace the run's policies in its namespace."""
    for body in policies(gateway_ip, gateway_port, hosts, resolvers):
        name = body["metadata"]["name"]
        try:
            cluster.call("networking", "create_namespaced_network_policy", namespace, body)
        except ApiError as exc:
            if exc.status != 409:
                raise
            cluster.call("networking", "replace_namespaced_network_policy", name, namespace, body)


# $1 gateway host, $2 its port, $3 the canary's port, $4 API host, $5 API port, $6 the probe's token, $7 the
# network (locked, none, open). bash's /dev/tcp: the probe image needs bash and coreutils' timeout, nothing else.
# A pod's rules take a moment to be applied after it starts (a policy-enforcing CNI's, or the test cluster's):
# a pod that reaches the gateway has them all; one with no network is tried three times over three seconds.
PROBE = r"""
t() { timeout %d bash -c "exec 3<>/dev/tcp/$1/$2" 2>/dev/null && echo open || echo closed; }
if [ "$7" != none ]; then
  for _ in $(seq 100); do [ "$(t "$1" "$2")" = open ] && break; sleep 0.2; done
  echo "gateway $(t "$1" "$2")"; echo "canary $(t "$1" "$3")"; echo "api $(t "$4" "$5")"
else
  gateway=closed canary=closed api=closed
  for _ in 1 2 3; do
    [ "$(t "$1" "$2")" = open ] && gateway=open; [ "$(t "$1" "$3")" = open ] && canary=open
    [ "$(t "$4" "$5")" = open ] && api=open; sleep 1
  done
  echo "gateway $gateway"; echo "canary $canary"; echo "api $api"
fi
models=$(timeout %d bash -c 'exec 3<>/dev/tcp/$0/$1; printf "GET /v1/models HTTP/1.0\r\nHost: gateway\r\nAuthorization: Bearer %%s\r\n\r\n" "$2" >&3; cat <&3' "$1" "$2" "$6" 2>/dev/null | tail -n 1)
case "$models" in *'"first_id":"clawswe"'*) echo "address other" ;; *'"first_id"'*) echo "address own" ;; *) echo "address none" ;; esac
""" % (PROBE_TIMEOUT_S, PROBE_TIMEOUT_S)


class Canary:
    """A TCP listener beside the gateway (same address, another port) that no locked pod may reach."""

    def __init__(self, host: str):
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.bind((host, 0))
        self.sock.listen(16)
        self.port = self.sock.getsockname()[1]
        self._stop = threading.Event()
        threading.Thread(target=self._accept, daemon=True, name="clawswe-canary").start()

    def _accept(self) -> None:
        self.sock.settimeout(0.2)
        while not self._stop.is_set():
            try:
                conn, _ = self.sock.accept()
                conn.close()
            except OSError:
                continue

    def close(self) -> None:
        self._stop.set()
        self.sock.close()


def probe(cluster, namespace: str, run_id: str, image: str, gateway_host: str, gateway_port: int,
          gateway, model: Model, network: str = "locked") -> dict[str, dict[str, str]]:
    """Run the probe on every ready node as a pod of the run's `network` (locked, none, open); `gateway`: the run's
    GatewayClient (None: the run calls no model). Returns {node: {"gateway": open|closed, "canary": ..., "api": ...,
    "address": own|other|none}}. Raises UserError when the network does not hold (a locked or none pod reached
    more than the gateway) or the gateway is not reached from the pod's own address; InfraError when a probe pod
    cannot run."""
    from urllib.parse import urlsplit

    nodes = ready_nodes(cluster)
    if not nodes:
        raise UserError(f"the Kubernetes cluster of context {cluster.context} has no ready node")
    api = urlsplit(cluster.server)
    canary = Canary(gateway_host)
    try:
        with ThreadPoolExecutor(max_workers=len(nodes)) as pool:
            found = dict(zip(nodes, pool.map(lambda n: _probe_node(cluster, namespace, run_id, image, n, (
                gateway_host, gateway_port, canary.port, api.hostname, api.port or 443), gateway, model, network),
                nodes)))
    finally:
        canary.close()
    for node, seen in found.items():
        if gateway is not None and seen.get("gateway") != "open":
            raise UserError(f"a pod on node {node} cannot reach the model gateway at {gateway_host}:{gateway_port}; "
                            "let the cluster's pods reach this machine at that address")
        if gateway is not None and seen.get("address") != "own":
            raise UserError(f"the gateway sees requests of pods on node {node} from another address than the pod's "
                            "(the cluster masquerades pod traffic to this machine): exclude this machine's address "
                            f"{gateway_host} from the CNI's masquerading (e.g. ip-masq-agent's nonMasqueradeCIDRs)")
        if network != "open":
            leaked = [what for what in ("canary", "api") if seen.get(what) != "closed"]
            if leaked:
                what = {"canary": f"this machine's port {canary.port} beside the gateway",
                        "api": "the Kubernetes API server"}
                raise UserError(f"the cluster does not enforce the run's NetworkPolicy: a locked probe pod on node "
                                f"{node} reached {' and '.join(what[w] for w in leaked)}; use a CNI that enforces "
                                "NetworkPolicy (Calico, Cilium) or give --network open")
    if network == "none" and any(seen.get("gateway") == "open" for seen in found.values()):
        raise UserError("the cluster does not enforce the run's NetworkPolicy: a probe pod without network reached "
                        "this machine's gateway address; use a CNI that enforces NetworkPolicy or give --network open")
    return found


def ready_nodes(cluster) -> list[str]:
    nodes = cluster.call("core", "list_node").get("items") or []
    ready = []
    for node in nodes:
        conditions = {c["type"]: c["status"] for c in (node.get("status") or {}).get("conditions") or []}
        if conditions.get("Ready") == "True" and not (node.get("spec") or {}).get("unschedulable"):
            ready.append(node["metadata"]["name"])
    return sorted(ready)


def _probe_node(cluster, namespace: str, run_id: str, image: str, node: str, targets: tuple, gateway,
                model: Model, network: str) -> dict[str, str]:
    name = dns_label(f"cw-probe-{node}")
    as_option = {"open": None, "none": "none"}.get(network, "run")  # pod_spec.network_label's input
    body = pod_body(name, image, labels={LABEL_RUN: run_id, LABEL_ROLE: "probe"}, network=as_option,
                    network_mode=network,
                    mem_limit="64m", environment=None, extra_hosts=None, cap_drop=("ALL",), bundles=[], stopper=False)
    body["spec"]["nodeName"] = node  # the probe is of every node, not the scheduler's pick
    try:
        cluster.call("core", "delete_namespaced_pod", name, namespace, grace_period_seconds=0)
    except ApiError:
        pass
    _create_when_gone(cluster, namespace, body)
    token = ""
    try:
        status = wait_running(cluster, namespace, name, ["sandbox"], timeout=300)
        if gateway is not None:  # a token bound to the probe's address: the gateway must see that address
            scripted = None  # (the probe only lists the models: a scripted run's token plays nothing)
            if model.is_scripted:
                model, scripted = Model.scripted(NOOP), {"mode": NOOP, "gold_patch": "", "workdir": "/"}
            token = gateway.register("_probe", model.spec, scripted=scripted, address=status["ip"])
        gw_host, gw_port, canary_port, api_host, api_port = targets
        argv = ["bash", "-c", PROBE, "probe", gw_host, str(gw_port), str(canary_port), api_host, str(api_port),
                token or "none", network]
        stream = pod_exec.run(cluster, namespace, name, "sandbox", argv, 65536)
        lines = stream.out.value().decode(errors="replace").split("\n")
        seen = dict(line.split(" ", 1) for line in lines if " " in line)
        if gateway is None:
            seen["address"] = "own"  # no gateway to ask (a run without a model): nothing is bound
        return seen
    finally:
        if token:
            try:
                gateway.unregister(token)
            except Exception:  # noqa: BLE001
                pass
        try:
            cluster.call("core", "delete_namespaced_pod", name, namespace, grace_period_seconds=0)
        except (ApiError, InfraError):
            pass


def _create_when_gone(cluster, namespace: str, body: dict, tries: int = 60) -> None:
    import time

    for _ in range(tries):
        try:
            cluster.call("core", "create_namespaced_pod", namespace, body)
            return
        except ApiError as exc:
            if exc.status != 409:  # a probe pod of an earlier start, still going
                raise
        time.sleep(0.5)
    raise InfraError(f"the probe pod {body['metadata']['name']} of an earlier start is still there")

