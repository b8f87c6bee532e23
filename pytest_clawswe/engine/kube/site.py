"""What the pods of a run share in one pytest process: the cluster, the run's namespace, the images as the
registry serves them, and the nodes' own counts (disk). A runner makes its sandboxes with `workspace_factory`."""
from __future__ import annotations

import functools
import threading
import time

from pytest_clawswe.engine.kube.cluster import ApiError, Cluster
from pytest_clawswe.engine.kube.images import ImagePublisher
from pytest_clawswe.errors import InfraError

SUMMARY_TTL_S = 2.0  # a node's stats summary is read at most this often (every disk watch of the node shares it)


class PodSite:
    def __init__(self, cluster: Cluster, namespace: str, publisher: ImagePublisher):
        self.cluster, self.namespace, self.publisher = cluster, namespace, publisher
        self._summaries: dict[str, tuple[float, dict]] = {}
        self._bundles: dict[str, dict] = {}  # volumes_from entry -> its bundle's volume (one look-up per process)
        # (host, port) of the run's gateway: a pod with a network is handed on once it reaches it (its rules are in)
        self.gateway: tuple[str, int] | None = None
        self.network_mode = "locked"  # what the run's own network is: locked or internet (--network)
        self._lock = threading.Lock()

    def use_gateway(self, url: str) -> "PodSite":
        from urllib.parse import urlsplit

        parts = urlsplit(url)
        self.gateway = (parts.hostname or "", parts.port or 80)
        return self

    def workspace_factory(self):
        """What the runner calls as it would call the Docker Workspace: (image, **settings) -> a PodWorkspace."""
        from pytest_clawswe.engine.kube.pod_workspace import PodWorkspace

        return functools.partial(PodWorkspace, self)

    def docker_client(self, labels: dict[str, str] | None = None):
        """A docker-py client's face over this site's pods (docker_shim.py): SWE-bench's grading runs on it."""
        from pytest_clawswe.engine.kube.docker_shim import PodDockerClient

        return PodDockerClient(self, labels)

    def item_pods(self, run_id: str, item_id: str, delete: bool = False) -> int | None:
        """How many pods the item has (deleted with `delete`: a stage past its limit, run/item/phases.py); None when
        the cluster could not say."""
        from pytest_clawswe.engine.kube.namespace import item_pods

        return item_pods(self.cluster, self.namespace, run_id, item_id, delete)

    def image_ref(self, tag: str) -> str:
        return self.publisher.ref(tag)

    def bundle_volumes(self, volumes_from: list[str]) -> list[dict]:
        for entry in volumes_from:
            if entry not in self._bundles:
                self._bundles[entry] = self.publisher.bundle(entry)
        return [self._bundles[entry] for entry in volumes_from]

    def disk_used(self, node: str, pod: str, container: str) -> int:
        """The container's writable layer in bytes, from its node's stats summary (0 until the node counted it)."""
        with self._lock:
            at, summary = self._summaries.get(node, (0.0, {}))
        if time.monotonic() - at > SUMMARY_TTL_S:
            try:
                summary = self.cluster.call("core", "connect_get_node_proxy_with_path", node, "stats/summary")
            except ApiError as exc:
                raise InfraError(f"the node {node} did not give its stats: {exc}") from None
            with self._lock:
                self._summaries[node] = (time.monotonic(), summary)
        for entry in summary.get("pods") or []:
            ref = entry.get("podRef") or {}
            if ref.get("name") == pod and ref.get("namespace") == self.namespace:
                for c in entry.get("containers") or []:
                    if c.get("name") == container:
                        return int((c.get("rootfs") or {}).get("usedBytes") or 0)
        return 0
