"""The images a run's pods need, as the cluster's registry serves them.

A kubelet pulls; nothing can be loaded into a node. Every image an item needs is made on this machine's Docker
engine as on the Docker path (instance images built or pulled, prepared images committed), then pushed once to
the run's registry (`--registry`, engine/images/registry.py: pushed only when the registry does not hold that very
image), and the pod names it HOST:PORT/<name>. A harness bundle is a data-only image (FROM scratch): its pod
copies it with a copier image, Debian's slim image with the bundle's tree at the same path, made once per bundle
image here and pushed like the others (pod_spec.py's init container).
"""
from __future__ import annotations

import io
import re
import threading
from collections.abc import Callable

import docker.errors

from pytest_clawswe.engine.images.build import _build_lock
from pytest_clawswe.errors import InfraError

COPIER_BASE = "debian:bookworm-slim"  # has cp; made available by scripts/docker-up.sh
COPIER_REPO = "clawswe-kube-bundle"
BUNDLE_PATH_LABEL = "clawswe.bundle.path"  # the bundle image's label: where its tree is


class ImagePublisher:
    """Local images, pushed to the registry once each (per process: the image id it pushed is remembered)."""

    def __init__(self, client, registry, progress: Callable[[str], None] = lambda line: None):
        self.client, self.registry, self.progress = client, registry, progress
        self._pushed: dict[str, str] = {}  # tag -> the image id pushed under it
        self._lock = threading.Lock()

    def ref(self, tag: str) -> str:
        """The registry's name of the local image `tag`, pushed there if the registry does not hold it."""
        try:
            image_id = self.client.images.get(tag).id
        except docker.errors.ImageNotFound:
            raise InfraError(f"image {tag} is missing on this machine's engine; build or pull it first",
                             retryable=False) from None
        except docker.errors.DockerException as exc:
            raise InfraError(f"the Docker engine did not answer about {tag}: {exc}") from exc
        with self._lock:
            if self._pushed.get(tag) == image_id:
                return self.registry.name_of(tag)
        with _build_lock(f"registry-{tag}"):  # the run's workers on this machine: one push
            self.registry.publish(self.client, tag)
        with self._lock:
            self._pushed[tag] = image_id
        return self.registry.name_of(tag)

    def bundle(self, volumes_from: str) -> dict:
        """{name, image, path} for the pod of a bundle the Docker path lends with volumes_from: the copier image
        (in the registry) and the bundle's path."""
        data_container = volumes_from.split(":")[0]
        try:
            container = self.client.containers.get(data_container)
            tag = container.attrs["Config"]["Image"]
            bundle_image = self.client.images.get(tag)
        except docker.errors.DockerException as exc:
            raise InfraError(f"the bundle container {data_container} is missing on this machine's engine: {exc}",
                             retryable=False) from None
        path = (bundle_image.labels or {}).get(BUNDLE_PATH_LABEL)
        if not path:
            raise InfraError(f"the bundle image {tag} does not say where its tree is ({BUNDLE_PATH_LABEL})",
                             retryable=False)
        copier = f"{COPIER_REPO}/{re.sub(r'[^a-z0-9._-]+', '-', tag.split(':')[0].split('/')[-1].lower())}:" \
                 f"{bundle_image.id.split(':')[-1][:16]}"
        with _build_lock(copier):
            try:
                self.client.images.get(copier)
            except docker.errors.ImageNotFound:
                self.progress(f"making {copier}: the {tag} bundle for pods (once)")
                dockerfile = f"FROM {COPIER_BASE}\nCOPY --from={tag} {path} {path}\n"
                try:
                    self.client.images.build(fileobj=io.BytesIO(dockerfile.encode()), tag=copier, rm=True,
                                             labels={BUNDLE_PATH_LABEL: path})
                except docker.errors.DockerException as exc:
                    raise InfraError(f"could not make the bundle copier image {copier}: {exc}") from exc
        name = re.sub(r"[^a-z0-9-]+", "-", f"bundle-{tag.split('/')[-1]}".lower()).strip("-")[:63]
        return {"name": name, "image": self.ref(copier), "path": path}
