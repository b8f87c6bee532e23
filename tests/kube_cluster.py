"""The test cluster (scripts/kube-cluster.sh: two nodes, this machine and a network namespace of ours, a local
registry) behind a session fixture. Import it into a test module (`from kube_cluster import kube_cluster_fixture`).

A cluster that is up already (started by hand with the script) is used and left running; one the fixture
started, it stops. Tests that use it run one at a time in scripts/test.sh's cluster phase, beside the shared one
(conftest.test_phase), and are marked `kubernetes` (scripts/test.sh builds the binaries before the tests when one
is selected).
"""
from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "kube-cluster.sh"


@dataclass
class KubeCluster:
    kubeconfig: str
    context: str
    registry: str
    nodes: list[str]
    pod_cidrs: list[str]

    def env(self) -> dict[str, str]:
        return {**os.environ, "KUBECONFIG": self.kubeconfig}

    def cluster(self):
        """The engine's Cluster object for this cluster (KUBECONFIG set for this process)."""
        from pytest_clawswe.engine.kube.cluster import Cluster

        os.environ["KUBECONFIG"] = self.kubeconfig
        return Cluster(self.context)


def pod_processes(cluster, namespace: str, pod: str, what: str = "comm") -> list[str]:
    """Every process in the pod, read from its stopper container (it shares the sandbox's process namespace, and
    the agent cannot stop it): `what` is comm (the command's name) or cmdline (its arguments, space-joined)."""
    from pytest_clawswe.engine.kube import pod_exec

    script = (f'for d in /proc/[0-9]*; do [ "${{d#/proc/}}" = $$ ] || {{ tr "\\0" " " < "$d/{what}"; echo; }} '
              f'2>/dev/null; done')
    stream = pod_exec.run(cluster, namespace, pod, "stopper", ["sh", "-c", script], 65536)
    return sorted(line.strip() for line in stream.out.value().decode().splitlines() if line.strip())


STALE = 3  # `env`: started once, its processes gone (a restart): `down` clears what is left, then `up`


def _settings() -> tuple[int, dict[str, str] | None]:
    done = subprocess.run([str(SCRIPT), "env"], capture_output=True, text=True)
    if done.returncode != 0:
        return done.returncode, None
    return 0, dict(line.split("=", 1) for line in done.stdout.splitlines() if "=" in line)


@pytest.fixture(scope="session", name="kube_cluster")
def kube_cluster_fixture():
    if os.geteuid() != 0 or not all(shutil.which(t) for t in ("ip", "iptables", "openssl", "nsenter", "docker")):
        pytest.fail("the test cluster needs root with ip, iptables, openssl, nsenter and docker")
    started = False
    status, settings = _settings()
    if status == STALE:
        subprocess.run([str(SCRIPT), "down"], capture_output=True, text=True, timeout=600)
    if settings is None:
        done = subprocess.run([str(SCRIPT), "up"], capture_output=True, text=True, timeout=3600)
        assert done.returncode == 0, f"scripts/kube-cluster.sh up failed:\n{done.stderr[-3000:]}"
        started = True
        _, settings = _settings()
        assert settings is not None
    previous = os.environ.get("KUBECONFIG")
    os.environ["KUBECONFIG"] = settings["KUBECONFIG"]
    try:
        yield KubeCluster(settings["KUBECONFIG"], settings["context"], settings["registry"],
                          settings["nodes"].split(), settings["pod_cidrs"].split())
    finally:
        if previous is None:
            os.environ.pop("KUBECONFIG", None)
        else:
            os.environ["KUBECONFIG"] = previous
        if started:
            subprocess.run([str(SCRIPT), "down"], capture_output=True, text=True, timeout=600)
