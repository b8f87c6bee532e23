"""A local registry for tests: Debian's docker-registry, started here on a free port with TLS (a CA made here),
trusted by the engines through /etc/docker/certs.d/HOST:PORT/ca.crt (read at every push and pull: no engine
restart, and both the main engine and the second engine, which shares this machine's /etc, read it).

Import the factory (`from local_registry import start_registry`) and call it with the address to listen on.
"""
from __future__ import annotations

import os
import random
import shutil
import signal
import socket
import subprocess
from contextlib import contextmanager
from pathlib import Path

import pytest
from polling import wait_until

CERTS_D = Path("/etc/docker/certs.d")


def _free_port(address: str) -> int:
    for _ in range(50):
        port = random.randint(15000, 19999)
        with socket.socket() as probe:
            try:
                probe.bind((address, port))
                return port
            except OSError:
                continue
    raise RuntimeError(f"no free port on {address}")


def _certs(folder: Path, address: str) -> None:
    def openssl(*args):
        subprocess.run(["openssl", *args], cwd=folder, check=True, capture_output=True)

    openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", "/CN=clawswe test registry CA",
            "-keyout", "ca-key.pem", "-out", "ca.pem")
    openssl("req", "-newkey", "rsa:2048", "-nodes", "-subj", f"/CN={address}", "-keyout", "key.pem",
            "-out", "server.csr")
    (folder / "server.ext").write_text(f"subjectAltName=IP:{address}\nextendedKeyUsage=serverAuth\n")
    openssl("x509", "-req", "-in", "server.csr", "-CA", "ca.pem", "-CAkey", "ca-key.pem", "-CAcreateserial",
            "-days", "2", "-extfile", "server.ext", "-out", "cert.pem")


@contextmanager
def start_registry(address: str, folder: Path):
    """A registry on address:<free port>, its storage in `folder`; yields 'address:port'."""
    if os.geteuid() != 0 or not shutil.which("docker-registry") or not shutil.which("openssl"):
        pytest.fail("the local registry needs root, openssl and Debian's docker-registry (apt-get install "
                    "docker-registry)")
    folder.mkdir(parents=True, exist_ok=True)
    port = _free_port(address)
    name = f"{address}:{port}"
    _certs(folder, address)
    (folder / "config.yml").write_text(f"""version: 0.1
log: {{level: warn, accesslog: {{disabled: true}}}}
storage: {{filesystem: {{rootdirectory: {folder / 'data'}}}, delete: {{enabled: true}}}}
http: {{addr: "{name}", tls: {{certificate: {folder / 'cert.pem'}, key: {folder / 'key.pem'}}}}}
""")
    trust = CERTS_D / name
    trust.mkdir(parents=True, exist_ok=True)
    shutil.copy(folder / "ca.pem", trust / "ca.crt")
    log = open(folder / "registry.log", "w")
    proc = subprocess.Popen(["docker-registry", "serve", str(folder / "config.yml")], stdout=log,
                            stderr=subprocess.STDOUT, start_new_session=True)
    try:
        def listening() -> bool:
            assert proc.poll() is None, (folder / "registry.log").read_text()
            with socket.socket() as probe:
                return probe.connect_ex((address, port)) == 0

        wait_until(listening, 20, f"the registry listens on {name}", interval=0.2)
        yield name
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()
        shutil.rmtree(trust, ignore_errors=True)
