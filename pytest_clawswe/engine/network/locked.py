"""The run's locked network and addresses on it: agents reach the host's address on the network (where the model gateway listens) and nothing else."""
from __future__ import annotations

import ipaddress
import socket

import docker
import docker.errors

from pytest_clawswe.errors import InfraError
from pytest_clawswe.labels import owner_label

# Agents of one run must not reach each other: no traffic between containers of the locked network. The
# host (where the model gateway listens, on the bridge's address) is reached through the host's INPUT chain,
# which this option does not touch.
NO_INTER_CONTAINER = {"com.docker.network.bridge.enable_icc": "false"}


def create_locked_network(client, name: str, labels: dict[str, str]) -> None:
    """An internal network: its containers reach the host's address on it (the model gateway listens
    there) but not each other, and no route leads out: no package mirror, no GitHub, no outside DNS."""
    try:
        client.networks.get(name)
    except docker.errors.NotFound:
        try:
            client.networks.create(name, driver="bridge", internal=True, options=NO_INTER_CONTAINER,
                                   labels={**labels, **owner_label()})
        except docker.errors.APIError as exc:
            if exc.status_code != 409:  # another process made it first
                raise InfraError(f"could not create the run's network {name}: {exc}") from exc


def network_host(client, network: str | None) -> str:
    """Where containers on `network` (None: Docker's default bridge) reach the host."""
    try:
        for entry in client.networks.get(network or "bridge").attrs["IPAM"]["Config"]:
            if entry.get("Gateway"):
                return entry["Gateway"]
            if entry.get("Subnet") and ":" not in entry["Subnet"]:
                # Docker 20.10 leaves the default bridge's gateway out; it is the subnet's first address
                return str(next(ipaddress.ip_network(entry["Subnet"]).hosts()))
    except Exception:
        pass
    return "127.0.0.1"  # a remote or rootless daemon: only host networking reaches this


def container_address(container, network: str | None) -> str:
    """The container's address on `network` (None: the default bridge): its gateway token works from
    there only. "" when it has none there (host networking): the token is then not bound."""
    try:
        container.reload()
        networks = container.attrs["NetworkSettings"]["Networks"]
        return (networks.get(network or "bridge") or {}).get("IPAddress") or ""
    except Exception:
        return ""


def local_address_towards(address: str) -> str:
    """This machine's address on the route to `address` (the kernel's choice; a UDP connect sends nothing)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        probe.connect((address, 9))
        return probe.getsockname()[0]


def bridge_address(client, network: str | None) -> str:
    """The host's address on `network` (None: the default bridge) of the engine `client`: where the relay listens."""

    address = network_host(client, network)
    if address == "127.0.0.1":
        raise InfraError(f"the network {network or 'bridge'} on {client.api.base_url} has no gateway address",
                         retryable=False)
    return address
