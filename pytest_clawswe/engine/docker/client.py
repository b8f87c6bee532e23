"""The one way to get a Docker client: a live engine, or an InfraError that says how to get one."""
from __future__ import annotations

import os
from pathlib import Path

import docker
import docker.errors
import docker.tls
import requests

from pytest_clawswe.engine.docker import attach_stream
from pytest_clawswe.errors import InfraError


class _EngineAPI(docker.APIClient):
    def _retrieve_server_version(self):
        # requests lets REQUESTS_CA_BUNDLE replace the engine's own CA (psf/requests#3829); an engine
        # connection takes no proxy or CA from the environment
        self.trust_env = False
        return super()._retrieve_server_version()

    def _read_from_socket(self, response, stream, tty=True, demux=False):
        """An exec's (or attach's) output, read through the buffer its answer's headers were read through:
        docker-py reads beneath it and loses what it holds, the output's beginning (engine/docker/attach_stream.py)."""
        from docker.utils.socket import consume_socket_output, demux_adaptor

        reader = attach_stream.buffered_reader(response)
        if reader is None:
            return super()._read_from_socket(response, stream, tty=tty, demux=demux)
        # as docker-py waits: without a time limit (the command may be silent for long)
        self._disable_socket_timeout(self._get_raw_response_socket(response))
        frames = attach_stream.frames(reader, tty)
        chunks = (demux_adaptor(*frame) for frame in frames) if demux else (data for _, data in frames)
        if stream:
            return chunks
        try:
            return consume_socket_output(chunks, demux=demux)
        finally:
            response.close()


def tls_config(tls_dir: str | os.PathLike) -> docker.tls.TLSConfig:
    """Docker's DOCKER_CERT_PATH convention: ca.pem, cert.pem and key.pem in one folder."""
    folder = Path(tls_dir)
    missing = [n for n in ("ca.pem", "cert.pem", "key.pem") if not (folder / n).is_file()]
    if missing:
        raise InfraError(f"the TLS folder {folder} lacks {', '.join(missing)}; give the folder with ca.pem, "
                         "cert.pem and key.pem (as DOCKER_CERT_PATH)", retryable=False)
    return docker.tls.TLSConfig(client_cert=(str(folder / "cert.pem"), str(folder / "key.pem")),
                                ca_cert=str(folder / "ca.pem"), verify=True)


def _check_answers(base_url: str, timeout: float = 10) -> None:
    import socket
    from urllib.parse import urlsplit

    parts = urlsplit(base_url)
    try:
        with socket.create_connection((parts.hostname or "", parts.port or 2376), timeout=timeout):
            pass
    except OSError as exc:
        raise InfraError(f"nothing answers at {base_url} ({exc.strerror or type(exc).__name__}); check that the "
                         "Docker engine runs there and listens on that port, or drop that --docker-host",
                         retryable=False) from None
    except ValueError:  # a port out of range: the URL itself is wrong
        raise InfraError(f"{base_url} is not a usable address; give tcp://HOST:PORT", retryable=False) from None


def _from_env() -> dict:
    """The engine docker.from_env() would reach: DOCKER_HOST (and its TLS settings), else the current context."""
    from docker.context import ContextAPI

    params = docker.utils.kwargs_from_env()
    if "base_url" not in params:
        for key, value in ContextAPI.kwargs_from_context().items():
            params.setdefault(key, value)
    return params


def docker_client(timeout: int = 600, base_url: str | None = None,
                  tls_dir: str | os.PathLike | None = None) -> docker.DockerClient:
    """A client whose engine answered a ping; `timeout`: seconds per API call.

    `base_url`: unix://, tcp:// (TLS with the certificates in `tls_dir`) or ssh:// (the ssh client, with the
    user's ssh config and keys); None: the environment's engine (DOCKER_HOST, the local socket)."""
    try:
        client = docker.DockerClient.__new__(docker.DockerClient)  # DockerClient only holds its APIClient
        if base_url is None:
            client.api = _EngineAPI(timeout=timeout, **_from_env())
        else:
            if base_url.startswith("tcp://"):
                _check_answers(base_url)  # before the certificates: "nothing there" is the first thing to say
            tls = tls_config(tls_dir) if tls_dir and base_url.startswith("tcp://") else False
            client.api = _EngineAPI(base_url=base_url, tls=tls, timeout=timeout,
                                    use_ssh_client=base_url.startswith("ssh://"))
        client.ping()
        return client
    except (docker.errors.DockerException, requests.RequestException) as exc:
        text = str(exc)
        if "Permission denied" in text:
            raise InfraError("no permission on the Docker socket; add your user to the docker group "
                             "or run as root", retryable=False) from exc
        if base_url is not None:
            why = "TLS failed" if "SSL" in text else "it does not answer"
            raise InfraError(f"the Docker engine at {base_url} cannot be used ({why}); check that it runs and is "
                             "reachable from here, or drop that --docker-host", retryable=False) from exc
        raise InfraError("no Docker engine answers; start Docker (on a fresh Debian machine: "
                         "scripts/docker-up.sh) and run again", retryable=False) from exc
