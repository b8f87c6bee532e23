"""A run's namespace on the cluster: everything of the run lives in it, and deleting it leaves nothing behind.

`clawswe-<run id>`, labelled with the run id (and annotated with the run id and the owning process, host:pid,
as the Docker objects are labelled). A resumed run finds it by the run id and sweeps the pods a killed attempt
left; the end of the run deletes it; `clawswe clean --kubernetes` deletes those of runs whose owner is gone.
"""
from __future__ import annotations

import time

from pytest_clawswe.engine.kube.cluster import ApiError, dns_label, label_value
from pytest_clawswe.errors import InfraError
from pytest_clawswe.labels import LABEL_INSTANCE, LABEL_OWNER, LABEL_RUN, owner_alive, owner_label

TERMINATING_WAIT_S = 180.0  # a namespace deleted by an earlier attempt is gone within this


def namespace_for(run_id: str) -> str:
    return dns_label(f"clawswe-{run_id}")


def ensure(cluster, namespace: str, run_id: str, progress=lambda line: None) -> None:
    """The run's namespace, ready for pods (its default service account made); the pods an earlier, killed
    attempt left in it are deleted."""
    body = {"apiVersion": "v1", "kind": "Namespace",
            "metadata": {"name": namespace, "labels": {LABEL_RUN: label_value(run_id)},
                         "annotations": {LABEL_RUN: run_id, **owner_label()}}}
    deadline = time.monotonic() + TERMINATING_WAIT_S
    said = False
    while True:
        try:
            cluster.call("core", "create_namespace", body)
            break
        except ApiError as exc:
            if exc.status != 409:
                raise
        try:
            found = cluster.call("core", "read_namespace", namespace)
        except ApiError as exc:
            if exc.status == 404:
                continue  # deleted between the two calls
            raise
        if (found.get("status") or {}).get("phase") != "Terminating":
            # an earlier attempt's (a resume): this process owns it now; what its pods were doing is over
            cluster.call("core", "patch_namespace", namespace, {"metadata": {"annotations": owner_label()}})
            delete_pods(cluster, namespace, run_id)
            break
        if not said:
            progress(f"waiting for the namespace {namespace} of an earlier attempt to be deleted")
            said = True
        if time.monotonic() > deadline:
            raise InfraError(f"the namespace {namespace} of an earlier attempt was still being deleted after "
                             f"{TERMINATING_WAIT_S:.0f} s", retryable=False)
        time.sleep(1)
    _wait_service_account(cluster, namespace)


def _wait_service_account(cluster, namespace: str, timeout: float = 60) -> None:
    """Pods are refused until the namespace's default service account exists (the controller makes it)."""
    deadline = time.monotonic() + timeout
    while not cluster.exists("core", "read_namespaced_service_account", "default", namespace):
        if time.monotonic() > deadline:
            raise InfraError(f"the namespace {namespace} got no default service account in {timeout:.0f} s "
                             "(is the cluster's controller manager running?)", retryable=False)
        time.sleep(0.2)


def delete_pods(cluster, namespace: str, run_id: str) -> None:
    try:
        cluster.call("core", "delete_collection_namespaced_pod", namespace,
                     label_selector=f"{LABEL_RUN}={label_value(run_id)}", grace_period_seconds=0)
    except ApiError as exc:
        if exc.status != 404:
            raise


def item_pods(cluster, namespace: str, run_id: str, item_id: str, delete: bool = False) -> int | None:
    """How many pods one item of the run has; with `delete`, deleted at once (no grace: what their execs wait on then
    returns). None when the cluster could not say."""
    selector = f"{LABEL_RUN}={label_value(run_id)},{LABEL_INSTANCE}={label_value(item_id)}"
    try:
        pods = (cluster.call("core", "list_namespaced_pod", namespace, label_selector=selector,
                             _request_timeout=30) or {}).get("items") or []
    except (ApiError, InfraError):
        return None
    for pod in pods if delete else ():
        try:
            cluster.call("core", "delete_namespaced_pod", pod["metadata"]["name"], namespace, grace_period_seconds=0,
                         _request_timeout=30)
        except (ApiError, InfraError):
            pass  # gone already; the run's namespace goes at its end
    return len(pods)


def delete(cluster, namespace: str, wait_s: float = 0) -> bool:
    """Delete the namespace and all in it; with wait_s, wait until it is gone. True when it is (or was) gone."""
    try:
        cluster.call("core", "delete_namespace", namespace, grace_period_seconds=0, propagation_policy="Background")
    except ApiError as exc:
        if exc.status != 404:
            raise
        return True
    deadline = time.monotonic() + wait_s
    while wait_s:
        if not cluster.exists("core", "read_namespace", namespace):
            return True
        if time.monotonic() > deadline:
            return False
        time.sleep(0.5)
    return False


def run_namespaces(cluster, run_id: str | None = None) -> list[dict]:
    selector = f"{LABEL_RUN}={label_value(run_id)}" if run_id else LABEL_RUN
    return cluster.call("core", "list_namespace", label_selector=selector).get("items") or []


def clean(cluster, run_id: str | None = None, dry_run: bool = False, include_live: bool = False,
          progress=print) -> int:
    """Delete the namespaces of runs (None: every run) whose owning process is gone (include_live: all)."""
    removed = 0
    for ns in run_namespaces(cluster, run_id):
        meta = ns.get("metadata") or {}
        annotations = meta.get("annotations") or {}
        if not include_live and owner_alive({LABEL_OWNER: annotations.get(LABEL_OWNER, "")}):
            continue  # a run in progress on this machine owns it
        if (ns.get("status") or {}).get("phase") == "Terminating":
            continue
        progress(f"{'would delete' if dry_run else 'deleting'} namespace {meta['name']} "
                 f"(run {annotations.get(LABEL_RUN, '?')})")
        if not dry_run:
            delete(cluster, meta["name"])
        removed += 1
    return removed
