"""A second Docker engine as a separate test host: scripts/second-engine.sh behind a session fixture.

Import the fixture into a test module (`from second_engine import second_engine_fixture`). An engine that is up
already (started by hand with the script) is used and left running; one the fixture started, it removes.
"""
from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "second-engine.sh"
URL = "tcp://10.250.8.2:2376"
TLS_DIR = "/var/lib/clawswe-engine2/tls"
HOST_SIDE = "10.250.8.1"  # this machine's address as the engine's containers reach it


@dataclass
class SecondEngine:
    url: str
    tls_dir: str
    host_side_addr: str

    def client(self):
        from pytest_clawswe.engine.docker.client import docker_client

        return docker_client(base_url=self.url, tls_dir=self.tls_dir)


def _answers() -> bool:
    from pytest_clawswe.engine.docker.client import docker_client
    from pytest_clawswe.errors import InfraError

    try:
        docker_client(timeout=5, base_url=URL, tls_dir=TLS_DIR)
        return True
    except InfraError:
        return False


@pytest.fixture(scope="session", name="second_engine")
def second_engine_fixture():
    if os.geteuid() != 0 or not all(shutil.which(t) for t in ("ip", "dockerd", "openssl", "nsenter")):
        pytest.fail("the second test engine needs root with ip, dockerd, openssl and nsenter")
    started = False
    if not _answers():
        done = subprocess.run([str(SCRIPT), "up"], capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, f"scripts/second-engine.sh up failed:\n{done.stderr}"
        started = True
    try:
        yield SecondEngine(URL, TLS_DIR, HOST_SIDE)
    finally:
        if started:
            subprocess.run([str(SCRIPT), "down"], capture_output=True, text=True, timeout=300)
