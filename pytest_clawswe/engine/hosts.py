"""The Docker engines of a run: `--docker-host URL` (repeatable), one per xdist worker.

pytest-xdist distributes the items over its workers; each worker uses one engine, chosen by its number
(gw0 -> the first host, gw1 -> the second, ... round robin), so there is no scheduler of our own. Without
--docker-host the run uses the environment's engine (DOCKER_HOST, the local socket), as before.
The controller checks every engine before the run writes anything, and sweeps each one at the end.
"""
from __future__ import annotations

import os
import re
import socket
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from pytest_clawswe.engine.docker.client import docker_client
from pytest_clawswe.errors import InfraError

SCHEMES = ("unix://", "tcp://", "ssh://")
WORKER_HOST = "clawswe_docker_host"  # workerinput key: the worker's host index


@dataclass(frozen=True)
class Host:
    url: str | None  # None: the environment's engine
    tls_dir: str | None = None

    @property
    def name(self) -> str:
        return self.url or "default"

    def client(self, timeout: int = 600):
        return docker_client(timeout=timeout, base_url=self.url, tls_dir=self.tls_dir)


def hosts(config: pytest.Config) -> list[Host]:
    """The run's engines, in the order given; a malformed one is a pytest.UsageError."""
    urls = config.getoption("docker_host", None) or []
    if not urls:
        return [Host(None)]
    tls_dir = config.getoption("docker_tls_dir", None) or os.environ.get("DOCKER_CERT_PATH") \
        or str(Path.home() / ".docker")
    found: list[Host] = []
    for url in urls:
        url = url.strip()
        if not url.startswith(SCHEMES) or not re.match(r"^[a-z]+://\S+$", url):
            raise pytest.UsageError(f"--docker-host {url!r}: give unix:///path/docker.sock, tcp://HOST:PORT "
                                    "or ssh://[USER@]HOST")
        if any(h.url == url for h in found):
            raise pytest.UsageError(f"--docker-host {url} is given twice; give each engine once")
        found.append(Host(url, tls_dir if url.startswith("tcp://") else None))
    return found


def check(run_hosts: list[Host], timeout: int = 30) -> list:
    """A live client per host, or a pytest.UsageError naming the first engine that cannot be used."""
    clients = []
    for host in run_hosts:
        try:
            clients.append(host.client(timeout=timeout))
        except InfraError as exc:
            raise pytest.UsageError(str(exc)) from None
    return clients


def worker_index(config: pytest.Config, n_hosts: int) -> int:
    """This process's host: the controller's choice for an xdist worker, else the first."""
    worker = getattr(config, "workerinput", None) or {}
    if WORKER_HOST in worker:
        return int(worker[WORKER_HOST]) % n_hosts
    return 0


def assign(node, n_hosts: int) -> None:
    """Controller: give an xdist worker its host (round robin over the worker number gwN)."""
    number = re.search(r"(\d+)$", getattr(node, "gateway", None) and node.gateway.id or "") \
        or re.search(r"(\d+)$", node.workerinput.get("workerid", ""))
    node.workerinput[WORKER_HOST] = (int(number.group(1)) if number else 0) % n_hosts


def registry(config: pytest.Config, progress=print):
    """The run's --registry as an ImageRegistry, or None; a malformed address is a pytest.UsageError."""
    from pytest_clawswe.engine.images.registry import ImageRegistry, check_address

    address = config.getoption("registry", None)
    if not address:
        return None
    try:
        return ImageRegistry(check_address(address), progress)
    except ValueError as exc:
        raise pytest.UsageError(str(exc)) from None


def transfer(source, target, tag: str, via=None, progress=print) -> str:
    """Put `tag` (on the engine `source`) onto `target` unless it has the same image: through the registry
    `via` when the run has one, else save | load. Returns how: "hit", "registry", "pushed" or "loaded"."""
    if same_image(source, target, tag):
        return "hit"
    if via is None:
        copy_image(source, target, tag, progress=progress)
        return "loaded"
    from pytest_clawswe.engine.images.build import _build_lock

    with _build_lock(f"registry-{tag}"):  # the workers of one engine: one push, one pull
        if same_image(source, target, tag):
            return "hit"
        return via.transfer(source, target, tag)


def copy_image(source, target, tag: str, progress=print) -> None:
    """Load an image into the engine `target` from the engine `source` (docker save | docker load).

    The images' own transfer format through the engine API: nothing else to run or reach, unlike a registry,
    and the target gets the image with its tag, labels and layers as the source has them."""
    progress(f"loading {tag} into {target.api.base_url} from {source.api.base_url}")
    target.images.load(source.api.get_image(tag, chunk_size=1 << 20))


def same_image(source, target, tag: str) -> bool:
    """Whether `target` has `tag` as the same image as `source` (a stale copy is loaded again)."""
    import docker.errors

    try:
        return target.images.get(tag).id == source.images.get(tag).id
    except docker.errors.ImageNotFound:
        return False


def effective_url(url: str | None) -> str:
    return url or os.environ.get("DOCKER_HOST", "") or "unix:///var/run/docker.sock"


def is_remote(url: str | None) -> bool:
    """Whether an engine's host may be another machine: its agents then reach the gateway through a relay."""
    return effective_url(url).startswith(("tcp://", "ssh://"))


def engine_address(url: str | None) -> str:
    """The engine host's IP address (tcp://HOST:PORT, ssh://[USER@]HOST[:PORT]; the name resolved here)."""
    host = urlsplit(effective_url(url)).hostname or ""
    try:
        return str(socket.getaddrinfo(host, None, socket.AF_INET, socket.SOCK_STREAM)[0][4][0])
    except (socket.gaierror, IndexError):
        raise InfraError(f"cannot resolve the Docker host {host!r} of {url}", retryable=False) from None
