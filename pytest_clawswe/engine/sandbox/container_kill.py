"""Stop every process of a container from outside it: nothing the agent could have changed is relied on.

An agent may delete its container's shell (`rm -rf /`), fill its disk or use up its pids limit; a kill run
inside the container (an exec of `sh`) fails then, and the item would end as an infrastructure error. Here:

0. when the engine runs on this machine, the container's pids cgroup is read here: when it holds two tasks (tini
   and its one child, the keep-alive; threads count), nothing else runs and nothing that is left can fork:
   done, without freezing it (no exec of it is starting: see below);
1. the container is frozen (Docker's pause: the cgroup freezer), so no process can fork while it is killed;
   when the engine's list of the frozen container's processes (`docker top`: its cgroup's, read by the engine,
   nothing inside the container used) is tini and one child of it, nothing else runs and nothing can start
   one: the container is thawed and that is all (~50 ms; the usual case once a harness has ended well);
2. otherwise a helper container from the same image (its files untouched by the agent: the image is read-only
   under the container's writable layer) joins the container's pid namespace, but not its cgroup (its own pids
   limit, its own disk), and sends SIGKILL to every process but tini (PID 1) and the keep-alive process;
3. the container is thawed (and made sure of: an exec into a frozen container hangs in the kernel, and the
   engine with it), the killed processes die, tini reaps them, and the helper checks that nothing but those
   two is left (up to 10 s).
No exec of the container may be starting while it is frozen (_let_starting_execs_start): runc setting one up in
a frozen cgroup hangs in the kernel and the engine with it. That, not the short way of step 1, hung CI's
SIGKILL-then-SIGINT test twice (it hung the same with the short way withdrawn, and passed once this wait came).
"""
from __future__ import annotations

import time
from pathlib import Path

import docker.errors

from pytest_clawswe.errors import InfraError
from pytest_clawswe.labels import LABEL_ROLE

KILL_DEADLINE_S = 10.0

# Shell builtins only in the pass (no fork): prints "pass" after the first one, made while the container is
# frozen, then repeats until nothing but PID 1, the keep-alive process and the helper's own shell is left
# (a zombie counts until tini reaps it). Exit 0: clean; 1: something survived the deadline.
_KILLER = r"""
tries=$1
# The keep-alive process, spared: of PID 1's children the one that started first (start time in clock ticks,
# field 22 of /proc/PID/stat; what follows the command name's ")" starts at field 3). Found here, from
# outside, so nothing the agent could have changed in its container is used.
main=; first=
for d in /proc/[0-9]*; do
  p=${d#/proc/}; [ "$p" = "$$" ] && continue
  read -r line < "$d/stat" 2>/dev/null || continue
  set -- ${line##*) }
  [ "$2" = 1 ] || continue
  if [ -z "$first" ] || [ "${20}" -lt "$first" ]; then main=$p; first=${20}; fi
done
pass() {
  left=0
  for d in /proc/[0-9]*; do
    p=${d#/proc/}
    case "$p" in 1|"$main"|"$$") continue ;; esac
    kill -9 "$p" 2>/dev/null && left=1
  done
  return $left
}
pass; echo pass
while [ "$tries" -gt 0 ]; do
  pass && exit 0
  tries=$((tries - 1)); sleep 0.05
done
exit 1
"""


def kill_all(client, container, image: str, labels: dict[str, str]) -> None:
    """SIGKILL every process in `container` but tini and its keep-alive child; InfraError if some survive."""
    api = client.api
    state = _let_starting_execs_start(api, container.id)
    if state is not None and not state.get("Running", True):
        return  # it exited (its keep-alive was killed from outside): nothing runs in it
    if state is not None and not state.get("Paused") and _host_tasks(container.id, state.get("Pid")) == 2:
        return  # tini and the keep-alive, and nothing else: nothing to kill, nothing that can start one
    frozen = _freeze(api, container.id)
    if frozen is None:
        return  # it exited (its keep-alive was killed from outside), or is gone: nothing of it runs
    helper = None
    try:
        if frozen and _only_tini_and_keepalive(api, container.id, (state or {}).get("Pid")):
            return  # (thawed below) nothing of the agent's runs, and nothing that is left can fork
        try:
            helper = client.containers.create(
                image, ["sh", "-c", _KILLER, "sh", str(int(KILL_DEADLINE_S / 0.05))], entrypoint=[],
                user="root", working_dir="/", network_mode="none",
                pid_mode=f"container:{container.id}", labels={**labels, LABEL_ROLE: "stopper"})
            helper.start()
        except (docker.errors.DockerException, OSError) as exc:
            if helper is not None:  # made, not started: not left behind
                _remove(helper)
                helper = None
            if not _running(api, container.id):
                return  # it stopped meanwhile (its keep-alive was killed: tini exits): nothing runs in it
            raise InfraError(f"could not start the helper that stops the container's processes: {exc}") from exc
        deadline = time.monotonic() + KILL_DEADLINE_S
        while b"pass" not in helper.logs(stdout=True, stderr=False):  # the (frozen) container's first pass
            if time.monotonic() > deadline:
                raise InfraError("the helper that stops the container's processes did not run for 10 s")
            time.sleep(0.05)
    finally:
        thaw(api, container.id)
    if helper is None:
        return
    try:
        code = helper.wait(timeout=KILL_DEADLINE_S + 20)["StatusCode"]
    except Exception as exc:  # requests' timeout: the helper hangs
        raise InfraError(f"the helper that stops the container's processes did not end: {exc}") from exc
    finally:
        _remove(helper)
    if code != 0:
        raise InfraError(f"processes in the container survived SIGKILL for {KILL_DEADLINE_S:.0f} s")


def _freeze(api, container_id: str, tries: int = 3) -> bool | None:
    """Pause the container: True when frozen, None when it is not running (or gone), False when the freezer would
    not take it (runc's "unable to freeze": a fork storm at the pids limit under load, seen in test_wildclaw_hostile);
    then the helper kills without the freeze, pass after pass, until nothing is left (the pids limit bounds a bomb)."""
    for attempt in range(tries):
        try:
            api.pause(container_id)
            return True
        except docker.errors.NotFound:
            return None
        except docker.errors.APIError as exc:
            said = str(exc).lower()
            if "not running" in said:
                return None
            if "already paused" in said:
                return True
            if "unable to freeze" not in said:
                raise InfraError(f"could not freeze the container to stop its processes: {exc}") from exc
        time.sleep(0.2 * (attempt + 1))
    return False


def _remove(helper) -> None:
    try:
        helper.remove(force=True)
    except (docker.errors.DockerException, OSError):
        pass  # the run's sweep finds it by its labels


def _running(api, container_id: str) -> bool:
    try:
        return bool(api.inspect_container(container_id)["State"].get("Running"))
    except docker.errors.NotFound:
        return False
    except docker.errors.DockerException:
        return True  # not known: the caller says what failed


def _host_tasks(container_id: str, init_pid: int | None) -> int | None:
    """The tasks (processes and threads) in the container's pids cgroup, read on this machine when its engine runs
    here; None when it cannot be read so (another machine's engine: its main process is not the one /proc shows
    here, whose cgroup path then does not name the container; no pids controller). cgroup v1 and v2."""
    if not init_pid:
        return None
    try:
        lines = Path(f"/proc/{int(init_pid)}/cgroup").read_text().splitlines()
    except (OSError, ValueError):
        return None
    paths = dict(line.split(":", 2)[1:] for line in lines if line.count(":") >= 2)
    if "pids" in paths:
        where = Path("/sys/fs/cgroup/pids", paths["pids"].lstrip("/"))
    elif "" in paths and Path("/sys/fs/cgroup/cgroup.controllers").is_file():  # v2: one hierarchy
        where = Path("/sys/fs/cgroup", paths[""].lstrip("/"))
    else:
        return None
    if container_id not in str(where):
        return None
    try:
        return int((where / "pids.current").read_text())
    except (OSError, ValueError):
        return None


def _only_tini_and_keepalive(api, container_id: str, init: int | None = None) -> bool:
    """True when the (frozen) container runs two processes: tini (the container's main process, State.Pid) and
    one child of it. That child is the keep-alive: tini exits, and the container with it, once its child ends.
    A zombie is listed too (then False). Any doubt (the engine's `ps` failed, columns missing): False, and the
    helper decides. Read from the engine only: host pids, the container's cgroup, the host's `ps`."""
    try:
        init = init or api.inspect_container(container_id)["State"]["Pid"]  # (tini's pid: known before the freeze)
        top = api.top(container_id)
        titles = top["Titles"]
        pid_at, ppid_at = titles.index("PID"), titles.index("PPID")
        procs = [(int(p[pid_at]), int(p[ppid_at])) for p in top["Processes"] or []]
    except (docker.errors.DockerException, KeyError, ValueError, IndexError, TypeError):
        return False
    if not init or len(procs) != 2:
        return False
    (a, a_parent), (b, b_parent) = procs
    return (a == init and b_parent == init) or (b == init and a_parent == init)


def _let_starting_execs_start(api, container_id: str, limit_s: float = 5.0) -> dict | None:
    """Wait until no exec of the container is still being started before it is frozen. A Ctrl-C can leave one
    sent but not answered; frozen while runc sets it up, it hangs in the kernel and holds the container's lock in
    the engine, which then stops answering about that container (seen in CI: test_faults' SIGKILL-then-SIGINT
    test, twice). An exec created but never started looks the same: the wait is bounded. Returns the container's
    State as the engine gave it (None: it did not answer, or an exec was still starting at the deadline)."""
    deadline = time.monotonic() + limit_s
    try:
        info = api.inspect_container(container_id)
    except docker.errors.DockerException:
        return None
    for exec_id in info.get("ExecIDs") or []:
        while True:
            try:
                started = api.exec_inspect(exec_id)
            except docker.errors.DockerException:
                break  # gone
            if started.get("Running") or started.get("ExitCode") is not None:
                break
            if time.monotonic() > deadline:
                return None  # one may still start: not settled
            time.sleep(0.05)
    return info.get("State") or {}


def thaw(api, container_id: str, tries: int = 5) -> None:
    """Unpause the container, and make sure it is: a frozen container must never be handed on (an exec into it
    hangs in the kernel, and the engine with it). A Ctrl-C meanwhile waits until it is thawed; InfraError when it
    stays frozen."""
    interrupted = None
    for attempt in range(tries):
        try:
            api.unpause(container_id)
        except KeyboardInterrupt as exc:  # thaw first, then stop
            interrupted = exc
            continue
        except docker.errors.APIError:
            pass  # not paused any more, or gone
        try:
            if not api.inspect_container(container_id)["State"].get("Paused"):
                break
        except docker.errors.NotFound:
            break
        except KeyboardInterrupt as exc:
            interrupted = exc
        except docker.errors.APIError:
            pass
        time.sleep(0.2 * (attempt + 1))
    else:
        raise InfraError("the container stayed frozen after its processes were stopped; the engine may be "
                         "overloaded: the item ends as an error and --resume runs it again")
    if interrupted is not None:
        raise interrupted
