"""The one way to get a Docker client: a live engine, or an InfraError that says how to get one."""
from __future__ import annotations

import docker
import docker.errors

from .errors import InfraError


def docker_client(timeout: int = 600) -> docker.DockerClient:
    """A client whose engine answered a ping; `timeout`: seconds per API call."""
    try:
        client = docker.from_env(timeout=timeout)
        client.ping()
        return client
    except docker.errors.DockerException as exc:
        text = str(exc)
        if "Permission denied" in text:
            raise InfraError("no permission on the Docker socket; add your user to the docker group "
                             "or run as root", retryable=False) from exc
        raise InfraError("no Docker engine answers; start Docker (on a fresh Debian machine: "
                         "scripts/docker-up.sh) and run again", retryable=False) from exc
