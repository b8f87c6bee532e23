"""`--registry HOST:PORT`: images reach every engine of a run through a registry instead of save | load.

An image an item needs on an engine that lacks it is made (built or pulled) once on the run's first engine,
pushed to the registry as HOST:PORT/<its name>, and pulled from there by the engine that needs it, which then
names it as the run knows it (the registry's name is dropped again). Push and pull are the engines' own: each
engine must trust the registry (TLS with its CA in /etc/docker/certs.d/HOST:PORT/ca.crt on that engine's
host, read at every pull without a restart, or the engine's `insecure-registries`; a 127.0.0.0/8 registry is
trusted by default). The same path serves a cluster: a kubelet pulls HOST:PORT/<name> (docs/scale-out.md).

Pushed once: before a push, the registry's manifest digest (asked through the source engine) is compared with
the digests the source image already carries for that name; a match means the registry holds this very image.
"""
from __future__ import annotations

import re
from collections.abc import Callable

import docker.errors

from pytest_clawswe.errors import InfraError

ADDRESS = re.compile(r"^[A-Za-z0-9.-]+(:\d{1,5})?$|^\[[0-9a-fA-F:]+\](:\d{1,5})?$")


def check_address(address: str) -> str:
    """HOST[:PORT] as given to --registry, or ValueError with the sentence to show."""
    address = address.strip().removeprefix("https://").removeprefix("http://").rstrip("/")
    if not ADDRESS.match(address):
        raise ValueError(f"--registry {address!r}: give the registry as HOST:PORT, e.g. 10.0.0.5:5000")
    return address


def split(tag: str) -> tuple[str, str]:
    """(repository, tag) of a name; a colon in the last path part only is a tag."""
    repository, _, version = tag.rpartition(":")
    if not repository or "/" in version:
        return tag, "latest"
    return repository, version


class ImageRegistry:
    """One registry all engines of a run reach under the same address."""

    def __init__(self, address: str, progress: Callable[[str], None] = print):
        self.address = address
        self.progress = progress

    def name_of(self, tag: str) -> str:
        repository, version = split(tag)
        return f"{self.address}/{repository}:{version}"

    def holds(self, client, tag: str) -> bool:
        """Whether the registry holds the image `tag` of `client` (the same image, not just the name)."""
        remote = self.name_of(tag)
        try:
            digest = client.images.get_registry_data(remote).id
            local = client.images.get(tag)
        except (docker.errors.NotFound, docker.errors.APIError):
            return False
        return f"{split(remote)[0]}@{digest}" in (local.attrs.get("RepoDigests") or [])

    def publish(self, client, tag: str) -> bool:
        """Push `tag` from the engine `client` unless the registry holds it already; True when pushed.

        The registry's name stays on the source image: it carries the digest that says "pushed" next time
        (engine/images/cache_level.py removes it with the image)."""
        if self.holds(client, tag):
            return False
        remote = self.name_of(tag)
        repository, version = split(remote)
        self.progress(f"pushing {tag} to {self.address}")
        try:
            client.images.get(tag).tag(repository, version)
            for event in client.api.push(repository, tag=version, stream=True, decode=True):
                if "error" in event:
                    raise InfraError(f"pushing {tag} to the registry {self.address} failed: "
                                     f"{event['error'].strip()}", retryable=False)
        except docker.errors.APIError as exc:
            raise InfraError(f"pushing {tag} to the registry {self.address} failed: {exc.explanation or exc}",
                             retryable=False) from None
        return True

    def fetch(self, client, tag: str) -> bool:
        """Pull `tag` from the registry into the engine `client` under its own name; False when the registry
        does not have it (an engine that cannot reach or trust the registry is an InfraError)."""
        remote = self.name_of(tag)
        repository, version = split(remote)
        try:
            client.images.get_registry_data(remote)
        except docker.errors.NotFound:
            return False
        except docker.errors.APIError as exc:
            if "manifest unknown" in str(exc) or "not found" in str(exc).lower():
                return False
            raise InfraError(f"the engine {client.api.base_url} cannot use the registry {self.address} "
                             f"({exc.explanation or exc}); let it trust the registry (its CA in "
                             f"/etc/docker/certs.d/{self.address}/ca.crt, or insecure-registries)",
                             retryable=False) from None
        self.progress(f"pulling {tag} from {self.address} into {client.api.base_url}")
        try:
            for event in client.api.pull(repository, tag=version, stream=True, decode=True):
                if "error" in event:
                    raise InfraError(f"pulling {tag} from the registry {self.address} failed: "
                                     f"{event['error'].strip()}", retryable=False)
            image = client.images.get(remote)
            own, own_version = split(tag)
            image.tag(own, own_version)
            client.images.remove(remote)  # the run's name holds the image; the registry's name would linger
        except docker.errors.APIError as exc:
            raise InfraError(f"pulling {tag} from the registry {self.address} failed: {exc.explanation or exc}",
                             retryable=False) from None
        return True

    def transfer(self, source, target, tag: str) -> str:
        """`tag` (present on `source`) onto `target`: from the registry when it holds it, else pushed from
        `source` first. Returns how: "registry" (pulled) or "pushed" (pushed, then pulled)."""
        if self.holds(source, tag) and self.fetch(target, tag):
            return "registry"
        self.publish(source, tag)
        if not self.fetch(target, tag):
            raise InfraError(f"the registry {self.address} does not show {tag} right after it was pushed",
                             retryable=False)
        return "pushed"
