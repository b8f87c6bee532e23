"""One pod per benchmark item: the Kubernetes implementation of engine/workspace.py (docs/scale-out.md).

Commands run through the API's exec (pod_exec.py); files go in as a tar stream through exec (as `kubectl cp`
does) and come out through the stopper container (pod_spec.py), which reads the sandbox's files under
/proc/<its keep-alive>/root with its own tools: an agent that deleted its shell, tar or coreutils still has
its files read back, as Docker's archive API reads them. kill_all runs the same fork-free kill pass as the
Docker helper, from the stopper, which shares the pod's process namespace; Kubernetes cannot freeze a pod, so
the pass repeats until nothing is left (a fork bomb is cut by the node's pids limit). The scheduler picks the
node; `node` names it once the pod runs.
"""
from __future__ import annotations

import secrets
import shlex
import threading
import time
from pathlib import Path
from typing import Any

from pytest_clawswe.engine.kube import pod_exec
from pytest_clawswe.engine.kube.cluster import ApiError, dns_label
from pytest_clawswe.engine.kube.pod_files import PodFiles
from pytest_clawswe.engine.kube.pod_spec import SANDBOX, STOPPER, pod_body
from pytest_clawswe.engine.kube.pod_status import wait_running
from pytest_clawswe.engine.workspace import MAX_EXEC_OUTPUT, BaseWorkspace, ExecResult
from pytest_clawswe.errors import InfraError
from pytest_clawswe.labels import LABEL_INSTANCE, LABEL_ROLE, owner_label

DROPPED_CAPABILITIES = ("NET_RAW", "MKNOD", "AUDIT_WRITE", "SETFCAP", "SETPCAP")  # as docker_workspace's
KILL_DEADLINE_S = 10.0
NETWORK_WAIT_S = 20.0  # a new pod reaches the gateway within this (its network policy applied)
LOCK_WAIT_S = 30.0
RO_ROOT = "/clawswe-ro"  # where the stopper mounts the read-only folders it fills  # a pod whose network was locked is locked within this (the cluster applies the policy)

# The containers' main processes: those whose parent is outside the pod's process namespace (ppid 0: started by
# the runtime), each with its cgroup (its first line names the container). Read right after the pod starts,
# before any other exec (an exec's process has ppid 0 too; this shell is left out).
_MAINS = r"""
for d in /proc/[0-9]*; do
  p=${d#/proc/}
  case "$p" in 1|"$$") continue ;; esac
  read -r line < "$d/stat" 2>/dev/null || continue
  set -- ${line##*) }
  [ "$2" = 0 ] || continue
  read -r cg < "$d/cgroup" 2>/dev/null && echo "$p $cg"
done
"""

# Shell builtins only in a pass (no fork): every process but PID 1 (pause), the keep-alives, this shell and the
# processes of the pod's companion containers (their cgroups after "--") is sent SIGKILL, until none is left (a
# zombie counts until it is reaped). Exit 0: clean; 1: survivors at the end.
_KILLER = r"""
tries=$1; shift
keep=" 1 $$ "; spare=
while [ $# -gt 0 ] && [ "$1" != -- ]; do keep="$keep$1 "; shift; done
[ $# -gt 0 ] && shift
for c in "$@"; do spare="$spare|$c|"; done
pass() {
  left=0
  for d in /proc/[0-9]*; do
    p=${d#/proc/}
    case "$keep" in *" $p "*) continue ;; esac
    if [ -n "$spare" ]; then
      cg=; read -r cg < "$d/cgroup" 2>/dev/null
      case "$spare" in *"|$cg|"*) continue ;; esac
    fi
    kill -9 "$p" 2>/dev/null && left=1
  done
  return $left
}
while :; do
  pass && exit 0
  tries=$((tries - 1)); [ "$tries" -gt 0 ] || exit 1
  sleep 0.05
done
"""

class PodWorkspace(PodFiles, BaseWorkspace):
    """A running pod for one item. Use as a context manager: the pod is deleted on every path."""

    def __init__(self, site, image: str, *, labels: dict[str, str], name: str | None = None,
                 mem_limit: str | None = "8g", pids_limit: int | None = 300, network: str | None = None,
                 volumes_from: list[str] | None = None, environment: dict[str, str] | None = None,
                 extra_hosts: dict[str, str] | None = None, cap_drop: tuple[str, ...] = DROPPED_CAPABILITIES,
                 read_only: dict[str, str] | None = None):
        self.site = site  # the run's cluster side: cluster, namespace, images (engine/kube/site.py)
        self.image = image
        self.labels = {**labels, **owner_label()}
        self.network = network
        self.pids_limit = pids_limit  # the node's podPidsLimit holds it (pod_spec.py)
        self.name = name or _pod_name(labels)
        self._args: dict[str, Any] = dict(mem_limit=mem_limit, environment=environment, extra_hosts=extra_hosts,
                                          cap_drop=cap_drop)
        self._volumes_from = volumes_from or []
        # host folder -> path in the sandbox, read-only (Docker binds it): an emptyDir the sandbox mounts read-only,
        # filled after the start through the stopper, which mounts it writable
        self._read_only = dict(read_only or {})
        self.node = ""  # the node the scheduler chose, once running
        self.ip = ""
        self.created = False
        self._sandbox_pid = ""  # the keep-alives, as the pod's process namespace numbers them
        self._keep: list[str] = []
        self._spare: list[str] = []  # the companions' cgroups: the kill pass leaves their processes alone
        # containers beside the sandbox that share its network (WildClawBench's services): added before start()
        self.companions: list[dict] = []
        self._companion_volumes: list[dict] = []

    # -- life cycle ----------------------------------------------------------------------------------
    def add_companion(self, container: dict, volumes: tuple[dict, ...] = ()) -> None:
        """A container beside the sandbox, sharing the pod's network (localhost) but not its files; its processes
        are out of the agent's reach: the sandbox loses KILL (its own processes are its user's: it still kills
        those) and the companion runs as another user, whose files under /proc the agent cannot open."""
        if self.created:
            raise InfraError("a companion container is added before the pod starts")
        self.companions.append(container)
        self._companion_volumes += list(volumes)
        if "KILL" not in self._args["cap_drop"]:
            self._args["cap_drop"] = (*self._args["cap_drop"], "KILL")

    def start(self) -> "PodWorkspace":
        site = self.site
        body = pod_body(self.name, site.image_ref(self.image), labels=self.labels, network=self.network,
                        network_mode=site.network_mode,
                        bundles=site.bundle_volumes(self._volumes_from), extra_containers=self.companions,
                        **self._args)
        body["spec"]["volumes"] += self._companion_volumes
        containers = {c["name"]: c for c in body["spec"]["containers"]}
        for i, dest in enumerate(self._read_only.values()):
            body["spec"]["volumes"].append({"name": f"ro-{i}", "emptyDir": {}})
            containers[SANDBOX]["volumeMounts"].append({"name": f"ro-{i}", "mountPath": dest, "readOnly": True})
            containers[STOPPER].setdefault("volumeMounts", []).append({"name": f"ro-{i}", "mountPath": f"{RO_ROOT}/{i}"})
        try:
            site.cluster.call("core", "create_namespaced_pod", site.namespace, body)
            self.created = True
            status = wait_running(site.cluster, site.namespace, self.name,
                                  [SANDBOX, STOPPER, *(c["name"] for c in self.companions)])
            self.node = status["node"]
            self.ip = status["ip"]
            self._find_keepalives(status["containers"])
            self._fill_read_only()
            self._wait_for_network()
        except BaseException:
            self.remove()
            raise
        return self

    def remove(self) -> None:
        if not self.created:
            return
        self.created = False
        try:
            self.site.cluster.call("core", "delete_namespaced_pod", self.name, self.site.namespace,
                                   grace_period_seconds=0, _request_timeout=30)
        except (InfraError, OSError):
            pass  # gone, or the API is: the run's sweep deletes its namespace

    def running(self) -> bool:
        try:
            pod = self.site.cluster.call("core", "read_namespaced_pod", self.name, self.site.namespace)
        except ApiError as exc:
            if exc.status == 404:
                return False
            raise
        states = {c["name"]: c.get("state") or {} for c in (pod.get("status") or {}).get("containerStatuses") or []}
        return (pod.get("status") or {}).get("phase") == "Running" and "running" in states.get(SANDBOX, {})

    def _fill_read_only(self) -> None:
        import io
        import tarfile

        for i, host in enumerate(self._read_only):
            buf = io.BytesIO()
            with tarfile.open(fileobj=buf, mode="w") as tar:
                for path in sorted(Path(host).rglob("*")):
                    tar.add(str(path), arcname=str(path.relative_to(host)), recursive=False)
            self.put_archive(f"{RO_ROOT}/{i}", buf.getvalue(), container=STOPPER)

    def exec_detached(self, argv: list[str], workdir: str = "/") -> None:
        """Start argv in the sandbox and return at once (it holds none of the exec's streams)."""
        cmd = f"cd {shlex.quote(workdir)} && {shlex.join(argv)} </dev/null >/dev/null 2>&1 &"
        done = self.exec_in(SANDBOX, ["sh", "-c", cmd], cap=4096)
        if done.code != 0:
            raise InfraError(f"could not start {argv[0]} in pod {self.name} (exit {done.code})")

    def _wait_for_network(self) -> None:
        """A pod with a network is handed on once it reaches the run's gateway: the cluster applies a new pod's
        network policy a moment after it starts (before that, a policy-enforcing network may drop its traffic)."""
        from pytest_clawswe.engine.kube.pod_spec import network_label

        if self.site.gateway is None or network_label(self.network, self.site.network_mode) == "none":
            return
        host, port = self.site.gateway
        script = (f'for _ in $(seq {int(NETWORK_WAIT_S / 0.2)}); do timeout 1 bash -c "exec 3<>/dev/tcp/{host}/{port}" '
                  '2>/dev/null && exit 0; sleep 0.2; done; exit 1')
        done = self.exec_in(STOPPER, ["sh", "-c", script], cap=4096)
        if done.code == 1:
            raise InfraError(f"pod {self.name} did not reach the model gateway at {host}:{port} within "
                             f"{NETWORK_WAIT_S:.0f} s of its start")

    def _find_keepalives(self, container_ids: dict[str, str]) -> None:
        """Which main process is which container's: its cgroup names the container's id."""
        stream = pod_exec.run(self.site.cluster, self.site.namespace, self.name, STOPPER, ["sh", "-c", _MAINS],
                              cap=65536)
        found: dict[str, tuple[str, str]] = {}  # container -> (pid, cgroup)
        for line in stream.out.value().decode().splitlines():
            pid, _, cgroup = line.partition(" ")
            for name, cid in container_ids.items():
                if cid and cid in cgroup:
                    found[name] = (pid, cgroup)
        if SANDBOX not in found or STOPPER not in found:
            raise InfraError(f"pod {self.name}: its containers' main processes were not found "
                             f"({stream.out.value()[-300:]!r})")
        self._sandbox_pid = found[SANDBOX][0]
        self._keep = [found[SANDBOX][0], found[STOPPER][0]]
        self._spare = [found[c["name"]][1] for c in self.companions if c["name"] in found]

    # -- exec ----------------------------------------------------------------------------------------
    def exec(self, cmd: str | list[str], *, workdir: str = "/", env: dict | None = None, user: str = "root",
             check: bool = False, timeout: float | None = None, max_output: int = MAX_EXEC_OUTPUT) -> ExecResult:
        """Run a command in the sandbox; with a timeout, every process in the pod is killed at the deadline."""
        if user not in ("root", "", "0", "0:0", None):
            raise InfraError(f"a command as user {user!r} in a pod: the exec API runs as the container's user only",
                             retryable=False)
        argv = ["bash", "-c", cmd] if isinstance(cmd, str) else list(cmd)
        # the exec API has no working folder or environment: coreutils' env sets both, then runs argv itself
        full = ["env", "-C", workdir, *[f"{k}={v}" for k, v in (env or {}).items()], *argv]
        start = time.monotonic()
        cluster, ns = self.site.cluster, self.site.namespace
        if timeout is None:
            stream = pod_exec.run(cluster, ns, self.name, SANDBOX, full, max_output)
            result = ExecResult(stream.code, stream.out.value().decode("utf-8", "replace"), time.monotonic() - start,
                                stream.err.value().decode("utf-8", "replace"),
                                stream.out.truncated or stream.err.truncated)
        else:
            stream = pod_exec.open_exec(cluster, ns, self.name, SANDBOX, full, max_output, merge=True)
            pumped = threading.Thread(target=pod_exec.pump, args=(stream,), name="clawswe-pod-exec", daemon=True)
            pumped.start()
            if not stream.ended.wait(max(0.0, timeout)):
                self.kill_all()
                if not stream.ended.wait(2):  # a process outside the pod's view holds the stream: what came is kept
                    stream.ws.close()
                stream.code = None
            elif stream.code is None:
                raise InfraError(f"exec in pod {self.name} failed: {stream.failure}")
            result = ExecResult(stream.code, stream.out.value().decode("utf-8", "replace"), time.monotonic() - start,
                                truncated=stream.out.truncated)
        if check and result.exit_code != 0:
            raise InfraError(f"command failed in pod {self.name} (exit {result.exit_code}): {' '.join(argv)[:200]}\n"
                             f"{result.output[-2000:]}")
        return result

    def kill_all(self) -> None:
        """SIGKILL every process of the pod but its keep-alives, from the stopper (nothing of the sandbox is
        used); when the agent ended the stopper, from the sandbox itself. InfraError if some survive."""
        argv = ["sh", "-c", _KILLER, "sh", str(int(KILL_DEADLINE_S / 0.05)), *self._keep, "--", *self._spare]
        for container in (STOPPER, SANDBOX):
            try:
                stream = pod_exec.run(self.site.cluster, self.site.namespace, self.name, container, argv, 65536)
            except InfraError:
                continue
            if stream.code == 0:
                return
            if stream.code == 1:
                raise InfraError(f"processes in pod {self.name} survived SIGKILL for {KILL_DEADLINE_S:.0f} s")
        if self.running():
            raise InfraError(f"could not stop the processes of pod {self.name}: neither of its containers ran the "
                             "kill pass")

    def exec_in(self, container: str, argv: list[str], stdin=None, cap: int = MAX_EXEC_OUTPUT,
                merge: bool = True) -> pod_exec.Stream:
        """Run argv to its end in one of the pod's containers (stdout and stderr merged unless `merge` is False);
        InfraError when the stream was cut."""
        return pod_exec.run(self.site.cluster, self.site.namespace, self.name, container, argv, cap, stdin=stdin,
                            merge=merge)

    def set_network(self, network: str | None) -> None:
        """Put the running pod on another of the run's networks (its label: lock.py's policies), and wait until a
        connection to the API server from inside the pod fails when the new network is locked or none."""
        from pytest_clawswe.engine.kube.pod_spec import LABEL_NETWORK, network_label

        self.network = network
        label = network_label(network, self.site.network_mode)
        self.site.cluster.call("core", "patch_namespaced_pod", self.name, self.site.namespace,
                               {"metadata": {"labels": {LABEL_NETWORK: label}}})
        if label == "open":
            return
        from urllib.parse import urlsplit

        api = urlsplit(self.site.cluster.server)
        probe = f"timeout 2 bash -c 'exec 3<>/dev/tcp/{api.hostname}/{api.port or 443}' 2>/dev/null"
        deadline = time.monotonic() + LOCK_WAIT_S
        while self.exec_in(STOPPER, ["sh", "-c", probe]).code == 0:
            if time.monotonic() > deadline:
                raise InfraError(f"pod {self.name} still reaches the API server {LOCK_WAIT_S:.0f} s after its "
                                 "network was locked")
            time.sleep(0.2)

    # -- the rest ----------------------------------------------------------------------------------
    def disk_used(self) -> int:
        """Bytes the sandbox wrote on top of its image: its writable layer as the node's kubelet counts it
        (the node's summary, refreshed by the runtime every few seconds)."""
        return self.site.disk_used(self.node, self.name, SANDBOX)

    def address(self, network: str | None) -> str:
        return self.ip


def _pod_name(labels: dict[str, str]) -> str:
    role = labels.get(LABEL_ROLE, "item")
    who = labels.get(LABEL_INSTANCE, "")
    return dns_label(f"cw-{role}-{who}"[:50]).rstrip("-") + "-" + secrets.token_hex(3)
