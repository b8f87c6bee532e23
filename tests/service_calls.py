"""How tests reach the WildClawBench mock services: free ports for a ServicesThread on this machine, and HTTP from
inside an agent container that has nothing but bash (the slim image has no curl or python), started as the runner
starts one (tini, sleep, the run's locked network)."""
import contextlib
import socket

import docker.errors

from pytest_clawswe.engine.network.locked import create_locked_network
from pytest_clawswe.engine.sandbox.docker_workspace import Workspace
from pytest_clawswe.labels import LABEL_RUN
from pytest_clawswe.wildclaw.services.mock import PORTS

AGENT_IMAGE = "debian:bookworm-slim"

# `req METHOD PORT PATH [BODY]` prints "STATUS <code>"; LC_ALL=C makes ${#4} the body's length in bytes
AGENT_HTTP = r"""
export LC_ALL=C
req() {  # METHOD PORT PATH [BODY]
  exec 3<>/dev/tcp/127.0.0.1/$2 || { echo "STATUS 000"; return; }
  printf '%s %s HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: %s\r\nConnection: close\r\n\r\n%s' \
    "$1" "$3" "${#4}" "$4" >&3
  head -n1 <&3 | sed 's/^HTTP\/1.1 \([0-9]*\).*/STATUS \1/'
  exec 3<&-
}
"""


def free_ports() -> dict[str, int]:
    """A free port on 127.0.0.1 for each mock service."""
    socks = [socket.socket() for _ in PORTS]
    for s in socks:
        s.bind(("127.0.0.1", 0))
    ports = {name: s.getsockname()[1] for name, s in zip(PORTS, socks)}
    for s in socks:
        s.close()
    return ports


@contextlib.contextmanager
def agent_on_locked_network(docker_client, run_labels: dict):
    """An agent container started as the runner starts them, on the run's locked network (both removed after)."""
    network = f"clawswe-{run_labels[LABEL_RUN]}"
    create_locked_network(docker_client, network, run_labels)
    ws = Workspace(docker_client, AGENT_IMAGE, labels=run_labels, network=network)
    try:
        yield ws.start()
    finally:
        ws.remove()
        try:
            docker_client.networks.get(network).remove()
        except docker.errors.NotFound:
            pass  # swept already (the clean test)
