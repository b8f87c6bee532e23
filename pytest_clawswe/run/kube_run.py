"""A run on a Kubernetes cluster (`--kubernetes [CONTEXT]`; docs/scale-out.md): the run's side of it.

The pytest machine keeps what it has on the Docker path: the run folder, the model gateway and its ledger, and
this machine's Docker engine, where every image is made (built, pulled, prepared) before it is pushed to the
registry the nodes pull from (`--registry`, required). What runs on the cluster is the items' sandboxes: the
agents' pods, the evaluations' and the graders' pods, all in the run's namespace (engine/kube/namespace.py),
scheduled by the cluster. The controller, before any item: checks the cluster (a ready node), makes the
namespace, starts the gateway where the nodes reach this machine, declares the locked network as
NetworkPolicies and proves with a probe pod on every node that the cluster enforces them
(engine/kube/lock.py). At the end, the namespace is deleted: nothing of the run is left in the cluster.
"""
from __future__ import annotations

import pytest

from pytest_clawswe.errors import InfraError, UserError
from pytest_clawswe.model import Model

PROBE_IMAGE = "debian:bookworm-slim"  # bash and timeout: what the lock probe needs


def from_config(config: pytest.Config, cfg) -> "KubeRun | None":
    """The run's cluster (None without --kubernetes); a setting that cannot work is a pytest.UsageError."""
    context = config.getoption("kubernetes", None)
    if context is None:
        return None
    if config.getoption("docker_host", None):
        raise pytest.UsageError("--kubernetes runs the sandboxes on the cluster and makes images on this machine's "
                                "Docker engine; drop --docker-host")
    if not cfg.registry:
        raise pytest.UsageError("--kubernetes needs --registry HOST:PORT: a registry this machine's Docker engine "
                                "pushes to and the cluster's nodes pull from")
    from pytest_clawswe.engine.kube.cluster import Cluster

    try:
        return KubeRun(Cluster(context or None), cfg)
    except UserError as exc:
        raise pytest.UsageError(str(exc)) from None


class KubeRun:
    def __init__(self, cluster, cfg):
        from pytest_clawswe.engine.kube.namespace import namespace_for

        self.cluster, self.cfg = cluster, cfg
        self.namespace = namespace_for(cfg.run_id)
        self.probed: dict = {}  # node -> what its probe reached (run start)

    @property
    def name(self) -> str:
        return self.cluster.name

    def check(self) -> list[str]:
        """The ready nodes; a cluster that does not answer or has none is a pytest.UsageError."""
        from pytest_clawswe.engine.kube.lock import ready_nodes

        try:
            nodes = ready_nodes(self.cluster)
        except InfraError as exc:
            raise pytest.UsageError(f"--kubernetes {self.cluster.context}: {exc}") from None
        if not nodes:
            raise pytest.UsageError(f"--kubernetes {self.cluster.context}: the cluster has no ready node")
        return nodes

    def gateway_host(self, nodes: list[str]) -> str:
        """This machine's address on the route to the cluster's first node: where its pods reach the gateway."""
        from pytest_clawswe.engine.network.locked import local_address_towards

        node = self.cluster.call("core", "read_node", nodes[0])
        addresses = {a["type"]: a["address"] for a in (node.get("status") or {}).get("addresses") or []}
        address = addresses.get("InternalIP") or addresses.get("ExternalIP")
        if not address:
            raise pytest.UsageError(f"the node {nodes[0]} has no address this machine could reach")
        return local_address_towards(address)

    def start(self, docker_client, needs_model: bool, progress, model: Model | None = None):
        """Namespace, gateway (returned; None without a model), NetworkPolicies and their probe. Raises
        pytest.UsageError with one sentence when the cluster cannot run the run."""
        from pytest_clawswe.engine.kube import lock, namespace
        from pytest_clawswe.engine.kube.pod_spec import network_label

        cfg = self.cfg
        model = model or cfg.model  # the gateway's model (a regrade's: its judge's)
        nodes = self.check()
        host = self.gateway_host(nodes)
        gateway = None
        try:
            namespace.ensure(self.cluster, self.namespace, cfg.run_id, progress)
            port = 1  # no gateway: the locked policy allows nothing that listens
            if needs_model:
                from pytest_clawswe.gateway.control.process import GatewayProcess
                from urllib.parse import urlsplit

                gateway = GatewayProcess.start(cfg.run_dir / "gateway", host=host)
                port = urlsplit(gateway.url).port or 80
            hosts = sorted(set(_local_addresses()) | set(self.node_addresses()))
            from pytest_clawswe.engine.network.internet import resolvers

            lock.apply_policies(self.cluster, self.namespace, host, port, hosts=hosts, resolvers=resolvers())
            mode = network_label(cfg.network, cfg.network_mode)
            image = self.site(docker_client, progress).image_ref(PROBE_IMAGE)
            self.probed = lock.probe(self.cluster, self.namespace, cfg.run_id, image, host, port,
                                     gateway.client() if gateway is not None else None, model,
                                     network=mode)
        except (UserError, ValueError) as exc:
            self._undo(gateway)
            raise pytest.UsageError(str(exc)) from None
        except InfraError as exc:
            self._undo(gateway)
            raise pytest.UsageError(f"--kubernetes {self.cluster.context}: {exc}") from None
        except BaseException:
            self._undo(gateway)
            raise
        return gateway

    def _undo(self, gateway) -> None:
        if gateway is not None:
            gateway.stop()
        self.sweep(end=True)

    def site(self, docker_client, progress=lambda line: None):
        """What this process's pods share (engine/kube/site.py)."""
        from pytest_clawswe.engine.kube.images import ImagePublisher
        from pytest_clawswe.engine.kube.site import PodSite
        from pytest_clawswe.engine.images.registry import ImageRegistry

        site = PodSite(self.cluster, self.namespace, ImagePublisher(docker_client, ImageRegistry(self.cfg.registry, progress),
                                                                    progress))
        site.network_mode = getattr(self.cfg, "network_mode", "locked")
        return site

    def node_addresses(self) -> list[str]:
        nodes = self.cluster.call("core", "list_node").get("items") or []
        return [a["address"] for n in nodes for a in (n.get("status") or {}).get("addresses") or []
                if a.get("type") in ("InternalIP", "ExternalIP")]

    def sweep(self, end: bool, progress=None) -> None:
        """end: delete the run's namespace (waits a while, so nothing is left when the run says it is done);
        else the pods an earlier attempt left."""
        from pytest_clawswe.engine.kube import namespace

        try:
            if end:
                if not namespace.delete(self.cluster, self.namespace, wait_s=60) and progress:
                    progress(f"the namespace {self.namespace} is still being deleted; `clawswe clean --kubernetes "
                             f"{self.cluster.context}` finds it if it stays")
            else:
                namespace.delete_pods(self.cluster, self.namespace, self.cfg.run_id)
        except InfraError as exc:
            if progress:
                progress(f"could not clean the run's namespace {self.namespace} ({exc}); run `clawswe clean "
                         f"--kubernetes {self.cluster.context} --run-id {self.cfg.run_id}`")


def _local_addresses() -> list[str]:
    """This machine's IPv4 addresses (`ip -4 -o addr`): a pod on the internet network reaches none of them."""
    import subprocess

    try:
        out = subprocess.run(["ip", "-4", "-o", "addr", "show"], capture_output=True, text=True, timeout=10).stdout
    except (OSError, subprocess.TimeoutExpired):
        return []
    return [fields[3].split("/")[0] for fields in (line.split() for line in out.splitlines()) if len(fields) > 3]
