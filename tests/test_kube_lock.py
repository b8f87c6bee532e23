"""The locked network on the test cluster: the run's NetworkPolicies, enforced (scripts/kube-netpol.py on each
node), proven by the probe pods a run starts with; a pod of another sandbox is out of reach; and a cluster that
does not enforce the policies is refused in one sentence."""
from __future__ import annotations

import time
from urllib.parse import urlsplit

import pytest
from kube_cluster import kube_cluster_fixture  # noqa: F401  (the kube_cluster fixture)

from pytest_clawswe.engine.kube import lock, namespace
from pytest_clawswe.errors import UserError
from pytest_clawswe.labels import LABEL_INSTANCE, LABEL_ROLE, LABEL_RUN
from pytest_clawswe.model import Model

pytestmark = [pytest.mark.docker, pytest.mark.kubernetes]
IMAGE = "debian:bookworm-slim"
LISTEN = ("perl -MIO::Socket::INET -e '$s = IO::Socket::INET->new(LocalPort => 8080, Listen => 5, ReuseAddr => 1) "
          "or die; while ($c = $s->accept) { print $c \"hi\\n\"; close $c }' >/dev/null 2>&1 &")


@pytest.fixture(scope="module")
def run(kube_cluster, docker_client, tmp_path_factory):
    """A run's namespace, its gateway where the nodes reach this machine, and the policies."""
    from pytest_clawswe.gateway.control.process import GatewayProcess
    from pytest_clawswe.run.kube_run import KubeRun

    cluster = kube_cluster.cluster()
    run_id = f"test-lock-{int(time.time())}"
    cfg = type("Cfg", (), {"run_id": run_id, "registry": kube_cluster.registry})()
    kube = KubeRun(cluster, cfg)
    host = kube.gateway_host(lock.ready_nodes(cluster))
    namespace.ensure(cluster, kube.namespace, run_id)
    gateway = GatewayProcess.start(tmp_path_factory.mktemp("gateway"), host=host)
    port = urlsplit(gateway.url).port
    site = kube.site(docker_client)
    try:
        lock.apply_policies(cluster, kube.namespace, host, port)
        yield {"cluster": cluster, "ns": kube.namespace, "run_id": run_id, "host": host, "port": port,
               "gateway": gateway, "image": site.image_ref(IMAGE), "site": site}
    finally:
        gateway.stop()
        namespace.delete(cluster, kube.namespace, wait_s=60)


def test_a_locked_pod_reaches_the_gateway_and_nothing_else(run, kube_cluster):
    seen = lock.probe(run["cluster"], run["ns"], run["run_id"], run["image"], run["host"], run["port"],
                      run["gateway"].client(), Model.parse("scripted/gold"), network="locked")
    assert sorted(seen) == sorted(kube_cluster.nodes)  # one probe per node
    for node, found in seen.items():
        assert found == {"gateway": "open", "canary": "closed", "api": "closed", "address": "own"}, node


def test_pods_of_the_run_do_not_reach_each_other(run, kube_cluster):
    make = run["site"].workspace_factory()

    def pod(name, network):
        return make(IMAGE, labels={LABEL_RUN: run["run_id"], LABEL_INSTANCE: name, LABEL_ROLE: "agent"},
                    mem_limit="256m", network=network)

    reach = "timeout 3 bash -c 'exec 3<>/dev/tcp/{ip}/8080 && head -1 <&3' 2>/dev/null || echo closed"
    with pod("listener", None) as listener, pod("locked", "clawswe-x") as locked, pod("open", None) as other:
        listener.exec(LISTEN)
        time.sleep(1)
        assert other.exec(reach.format(ip=listener.ip)).stdout.strip() == "hi"  # the listener answers an open pod
        assert locked.exec(reach.format(ip=listener.ip)).stdout.strip() == "closed"  # a locked one reaches nothing
        locked.exec(LISTEN)
        time.sleep(1)
        assert other.exec(reach.format(ip=locked.ip)).stdout.strip() == "closed"  # and nothing reaches it
        # the lock holds whichever node each pod is on (the scheduler's choice): both nodes took part
        assert {listener.node, locked.node, other.node} <= set(kube_cluster.nodes)


def test_a_cluster_that_does_not_enforce_the_policies_is_refused(run):
    for name in (lock.POLICY_LOCKED, lock.POLICY_NONE):
        run["cluster"].call("networking", "delete_namespaced_network_policy", name, run["ns"])
    try:
        time.sleep(2)  # the enforcer reads the policies every half second
        with pytest.raises(UserError, match="does not enforce the run's NetworkPolicy"):
            lock.probe(run["cluster"], run["ns"], run["run_id"], run["image"], run["host"], run["port"],
                       run["gateway"].client(), Model.parse("scripted/gold"), network="locked")
    finally:
        lock.apply_policies(run["cluster"], run["ns"], run["host"], run["port"])


def test_a_pod_moved_onto_the_locked_network_reaches_only_the_gateway(run):
    """WildClawBench's warmup runs on the open network, then the pod's network is locked (wildclaw/task/container.py lock_network):
    the agent starts only once the lock holds."""
    make = run["site"].workspace_factory()
    labels = {LABEL_RUN: run["run_id"], LABEL_ROLE: "agent"}
    reach = "timeout 3 bash -c 'exec 3<>/dev/tcp/{ip}/{port} && echo open' 2>/dev/null || echo closed"
    with make(IMAGE, labels={**labels, LABEL_INSTANCE: "listener2"}, mem_limit="256m", network=None) as listener, \
            make(IMAGE, labels={**labels, LABEL_INSTANCE: "warm"}, mem_limit="256m", network="bridge") as warm:
        listener.exec(LISTEN)
        time.sleep(1)
        assert warm.exec(reach.format(ip=listener.ip, port=8080)).stdout.strip() == "open"  # the warmup's network
        warm.set_network("clawswe-x")
        assert warm.exec(reach.format(ip=listener.ip, port=8080)).stdout.strip() == "closed"
        assert warm.exec(reach.format(ip=run["host"], port=run["port"])).stdout.strip() == "open"  # the gateway
