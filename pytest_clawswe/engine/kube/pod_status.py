"""Whether a pod runs, and why not: the wait after a pod is created (pod_workspace.py, docker_shim.py, lock.py).

A pod that cannot start is an InfraError naming why, as soon as that is known: an image the registry does not
have, a container that could not be made or ended, no node that fits it for UNSCHEDULABLE_S, or a node that went
away after the scheduler chose it (NotReady). The deadline covers image pulls on a cold node.
"""
from __future__ import annotations

import time

from pytest_clawswe.engine.kube.cluster import ApiError
from pytest_clawswe.engine.kube.pod_spec import SANDBOX, STOPPER
from pytest_clawswe.errors import InfraError

START_TIMEOUT_S = 900.0  # scheduling and image pulls (an instance image is gigabytes on a cold node)
UNSCHEDULABLE_S = 300.0  # no node fits the pod for this long: an infrastructure error
NODE_CHECK_S = 5.0  # how often a pod that does not start yet has its node's readiness checked


def wait_running(cluster, namespace: str, name: str, containers: list[str], timeout: float = START_TIMEOUT_S) -> dict:
    """Wait until the pod's `containers` run; {"node", "ip"}. InfraError when it cannot: no node fits it for
    UNSCHEDULABLE_S, an image that cannot be pulled, a container that ended, or the deadline."""
    start = time.monotonic()
    delay = 0.05
    unschedulable_since = None
    node_checked = start
    while True:
        pod = cluster.call("core", "read_namespaced_pod", name, namespace)
        status = pod.get("status") or {}
        phase = status.get("phase")
        states = {c["name"]: c.get("state") or {} for c in status.get("containerStatuses") or []}
        if phase == "Running" and all("running" in states.get(c, {}) for c in containers):
            ids = {c["name"]: (c.get("containerID") or "").split("://")[-1]
                   for c in status.get("containerStatuses") or []}
            return {"node": (pod.get("spec") or {}).get("nodeName") or "", "ip": status.get("podIP") or "",
                    "containers": ids}
        why = _why_not_starting(pod)
        if why:
            raise InfraError(f"pod {name} cannot start: {why}", retryable=not why.startswith("image"))
        scheduled = {c["type"]: c for c in status.get("conditions") or []}.get("PodScheduled") or {}
        if scheduled.get("status") == "False" and scheduled.get("reason") == "Unschedulable":
            unschedulable_since = unschedulable_since or time.monotonic()
            if time.monotonic() - unschedulable_since > UNSCHEDULABLE_S:
                raise InfraError(f"no node of the cluster can take pod {name}: {scheduled.get('message', '')}")
        node = (pod.get("spec") or {}).get("nodeName")
        if node and time.monotonic() - node_checked > NODE_CHECK_S:  # placed on a node that went away meanwhile
            node_checked = time.monotonic()
            if not node_ready(cluster, node):
                raise InfraError(f"pod {name} cannot start: its node {node} is not ready")
        if time.monotonic() - start > timeout:
            raise InfraError(f"pod {name} did not start within {timeout:.0f} s (phase {phase})")
        time.sleep(delay)
        delay = min(delay * 1.5, 0.5)


def node_ready(cluster, node: str) -> bool:
    try:
        found = cluster.call("core", "read_node", node)
    except ApiError as exc:
        if exc.status == 404:
            return False
        raise
    return any(c["type"] == "Ready" and c["status"] == "True" for c in (found.get("status") or {}).get("conditions") or [])


_FATAL_WAITING = {"ErrImagePull": "image", "ImagePullBackOff": "image", "InvalidImageName": "image",
                  "ErrImageNeverPull": "image", "CreateContainerConfigError": "container",
                  "CreateContainerError": "container", "RunContainerError": "container"}


# a pod the kubelet evicted for a resource the node is short of: what the user can do about it
_PRESSURE_HINT = {"DiskPressure": "; the node is short of disk space: free some there (unused images, old runs)",
                  "MemoryPressure": "; the node is short of memory: run fewer items at once (-n)",
                  "PIDPressure": "; the node is short of process ids: run fewer items at once (-n)"}


def _pressure(message: str) -> str:
    return next((kind for kind in _PRESSURE_HINT if kind in message), "")


def _why_not_starting(pod: dict) -> str:
    status = pod.get("status") or {}
    if status.get("phase") in ("Failed", "Succeeded"):
        why = f"it ended ({status.get('reason') or status.get('phase')}: {status.get('message', '').strip()})"
        return why + _PRESSURE_HINT.get(_pressure(status.get("message", "")), "")
    for entry in (status.get("initContainerStatuses") or []) + (status.get("containerStatuses") or []):
        state = entry.get("state") or {}
        waiting, ended = state.get("waiting") or {}, state.get("terminated") or {}
        kind = _FATAL_WAITING.get(waiting.get("reason", ""))
        if kind == "image" and waiting.get("reason") == "ErrImagePull" and "not found" not in \
                waiting.get("message", "").lower():
            continue  # a pull that failed once: the kubelet retries it (back-off ends it)
        if kind:
            return f"{kind} {entry.get('image', '')}: {waiting.get('reason')}: {waiting.get('message', '')}"[:500]
        if ended and (entry["name"] in (SANDBOX, STOPPER) or ended.get("exitCode")):
            return (f"its container {entry['name']} ended ({ended.get('reason')}, exit {ended.get('exitCode')}: "
                    f"{ended.get('message', '')})")[:500]
    return ""
