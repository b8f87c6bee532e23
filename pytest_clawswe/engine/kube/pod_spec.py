"""What an item's pod is made of: the Docker sandbox's settings in a v1 Pod.

- the sandbox container: the image as the registry serves it, `sleep infinity` as its keep-alive (Docker's
  sandbox runs the same under tini; here the pod's pause process is PID 1 and reaps orphans), the same
  environment, memory limit, dropped capabilities and labels (as labels, and their full values as annotations);
  RuntimeDefault seccomp, as Docker's default profile; no service account token (an agent holds no credential
  for the API), no service links;
- the stopper container beside it: the same image, read-only, sharing the pod's process namespace
  (`shareProcessNamespace`): the kill of every agent process, and the reads of what the agent left, run there
  with tools the agent cannot have changed (its files are the image's, under a read-only root) (pod_workspace.py);
- harness bundles: an init container per bundle copies it into an emptyDir that the sandbox mounts read-only at
  the bundle's path (Docker lends the bundle's volume with volumes_from; images.py makes the copier image);
- the pids limit is the node's (the kubelet's podPidsLimit): Kubernetes has none per pod.
"""
from __future__ import annotations

import re

from pytest_clawswe.engine.kube.cluster import labels_and_annotations
from pytest_clawswe.labels import LABEL_ROLE, LABEL_RUN

SANDBOX, STOPPER = "sandbox", "stopper"
LABEL_NETWORK = "clawswe.network"  # locked | internet | open | none: which of the run's NetworkPolicies applies
# what the pod asks the scheduler for: Docker reserves nothing for a container either; the limits still hold
REQUESTS = {"memory": "256Mi", "cpu": "100m"}
STOPPER_RESOURCES = {"limits": {"memory": "64Mi"}, "requests": {"memory": "16Mi", "cpu": "10m"}}
# the stopper kills any process of the pod (KILL), reads any file of the sandbox through /proc/<pid>/root
# (DAC_*, and SYS_PTRACE when the sandbox runs as another user); nothing else
STOPPER_CAPS = ["KILL", "DAC_OVERRIDE", "DAC_READ_SEARCH", "SYS_PTRACE"]


def quantity(limit: str | int | None) -> str | None:
    """Docker's memory size (8g, 512m, bytes; binary units) as a Kubernetes quantity (8Gi, 512Mi)."""
    if limit is None or limit == "":
        return None
    if isinstance(limit, int):
        return str(limit)
    match = re.fullmatch(r"(\d+)([bkmgt]?)b?", str(limit).strip().lower())
    if not match:
        raise ValueError(f"memory limit {limit!r}: give it as Docker does, e.g. 8g or 512m")
    number, unit = match.groups()
    return number + {"": "", "b": "", "k": "Ki", "m": "Mi", "g": "Gi", "t": "Ti"}[unit]


def network_label(network: str | None, mode: str = "locked") -> str:
    """A sandbox's Docker network as the pod's network label: open (Docker's default bridge), none, or the run's
    own network, which is `mode` (--network locked or internet)."""
    if network is None or network == "bridge":
        return "open"
    return "none" if network == "none" else mode


def pod_body(name: str, image: str, *, labels: dict[str, str], network: str | None, network_mode: str = "locked",
             mem_limit: str | None, environment: dict[str, str] | None, extra_hosts: dict[str, str] | None,
             cap_drop: tuple[str, ...], bundles: list[dict], stopper: bool = True,
             command: list[str] | None = None, user: str | None = None, cap_add: tuple[str, ...] = (),
             extra_containers: list[dict] | None = None) -> dict:
    """The v1 Pod of one sandbox. `bundles`: [{name, image, path}] (a bundle's copier image and its path)."""
    k8s_labels, annotations = labels_and_annotations({**labels, LABEL_NETWORK: network_label(network, network_mode)})
    limits = {"memory": quantity(mem_limit)} if mem_limit else {}
    security: dict = {"capabilities": {k: v for k, v in (("drop", list(cap_drop)), ("add", list(cap_add))) if v}}
    if user not in (None, "", "root", "0", "0:0"):
        uid, _, gid = str(user).partition(":")
        if not uid.isdigit():
            raise ValueError(f"a pod runs as a numeric user; got {user!r}")
        security["runAsUser"] = int(uid)
        if gid.isdigit():
            security["runAsGroup"] = int(gid)
    sandbox = {
        "name": SANDBOX, "image": image, "command": command or ["sleep", "infinity"],
        "env": [{"name": k, "value": str(v)} for k, v in (environment or {}).items()],
        "resources": {"limits": limits, "requests": {k: v for k, v in REQUESTS.items()
                                                     if k != "memory" or not limits or _fits(v, limits["memory"])}},
        "securityContext": security,
        "volumeMounts": [{"name": b["name"], "mountPath": b["path"], "readOnly": True} for b in bundles],
    }
    containers = [sandbox]
    if stopper:
        containers.append({
            "name": STOPPER, "image": image, "command": ["sleep", "infinity"], "resources": STOPPER_RESOURCES,
            "securityContext": {"readOnlyRootFilesystem": True, "allowPrivilegeEscalation": False,
                                "capabilities": {"drop": ["ALL"], "add": STOPPER_CAPS}}})
    containers += extra_containers or []
    init = [{"name": f"bundle-{i}", "image": b["image"], "command": ["cp", "-a", f"{b['path']}/.", "/into/"],
             "resources": STOPPER_RESOURCES, "volumeMounts": [{"name": b["name"], "mountPath": "/into"}],
             "securityContext": {"allowPrivilegeEscalation": False}} for i, b in enumerate(bundles)]
    spec: dict = {
        "restartPolicy": "Never", "automountServiceAccountToken": False, "enableServiceLinks": False,
        "dnsPolicy": "Default",  # the node's resolver, as a Docker container has (no cluster DNS is assumed)
        "shareProcessNamespace": stopper, "terminationGracePeriodSeconds": 0,
        "securityContext": {"seccompProfile": {"type": "RuntimeDefault"}},
        "containers": containers, "volumes": [{"name": b["name"], "emptyDir": {}} for b in bundles],
    }
    if init:
        spec["initContainers"] = init
    run, role = labels.get(LABEL_RUN), labels.get(LABEL_ROLE)
    if run and role:  # a hint, not a rule: the run's sandboxes of one kind spread over the nodes (the scheduler
        # otherwise favours the node that has the image, and a run's items pile up there)
        spec["topologySpreadConstraints"] = [{
            "maxSkew": 1, "topologyKey": "kubernetes.io/hostname", "whenUnsatisfiable": "ScheduleAnyway",
            "labelSelector": {"matchLabels": {LABEL_RUN: k8s_labels[LABEL_RUN], LABEL_ROLE: k8s_labels[LABEL_ROLE]}}}]
    if extra_hosts:
        by_ip: dict[str, list[str]] = {}
        for host, ip in extra_hosts.items():
            by_ip.setdefault(ip, []).append(host)
        spec["hostAliases"] = [{"ip": ip, "hostnames": names} for ip, names in by_ip.items()]
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "labels": k8s_labels, "annotations": annotations}, "spec": spec}


def _fits(request: str, limit: str) -> bool:
    """Whether a memory request is at most the limit (a request above the limit is refused by the API)."""
    units = {"": 1, "Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40}

    def size(q: str) -> int:
        m = re.fullmatch(r"(\d+)(Ki|Mi|Gi|Ti)?", q)
        return int(m.group(1)) * units[m.group(2) or ""] if m else 0

    return size(request) <= size(limit)
