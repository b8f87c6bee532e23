"""Keep a locked network's agents off the host's own services.

An internal Docker network has no route out, but its containers still reach the host itself at the
bridge's address, where every host service listening on 0.0.0.0 answers (a database, an SSH daemon, a
package cache). Rules at the top of the host's INPUT chain let that bridge reach the model gateway's port
and refuse the rest. Each rule names its run in a comment, so the run, or `clawswe clean`, removes exactly
its own, in whichever chain it is (engine/network/internet.py adds egress rules in DOCKER-USER or FORWARD, and in
ip6tables).
"""
from __future__ import annotations

import shlex
import shutil
import subprocess
from pathlib import Path

COMMENT = "clawswe:"


def bridge_of(client, network: str) -> str:
    net = client.networks.get(network)
    return (net.attrs.get("Options") or {}).get("com.docker.network.bridge.name") or f"br-{net.id[:12]}"


def _iptables(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["iptables", "-w", *args], capture_output=True, text=True)


def _ip6tables(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["ip6tables", "-w", *args], capture_output=True, text=True)


FAMILIES = ("iptables", "ip6tables")


def guard(client, network: str, port: int, run_id: str) -> str | None:
    """Let `network` reach the host only on `port`. None when the rules are in place, else why not."""
    if shutil.which("iptables") is None:
        return "iptables is not installed"
    bridge, tag = bridge_of(client, network), COMMENT + run_id
    unguard(run_id)  # a resumed run, or a killed attempt of it: never two sets
    # Each at the top, the REJECT first: the ACCEPT then always sits above its own REJECT, however another run's
    # rules land between the two (ACCEPT at 1, REJECT at 2 did not: a run starting meanwhile could put this
    # run's REJECT above its ACCEPT, and its agents met "connection refused" at the gateway).
    rules = [["-j", "REJECT"], ["-p", "tcp", "--dport", str(port), "-j", "ACCEPT"]]
    for rule in rules:
        done = _iptables("-I", "INPUT", "1", "-i", bridge, "-m", "comment", "--comment", tag, *rule)
        if done.returncode != 0:
            unguard(run_id)
            return done.stderr.strip().splitlines()[-1] if done.stderr.strip() else f"exit {done.returncode}"
    return None


def rules(run_id: str | None = None, family: str = "iptables") -> list[list[str]]:
    """This run's rules (None: every clawswe rule) in every chain, as `iptables -S` (or ip6tables) arguments."""
    if shutil.which(family) is None:
        return []
    listed = (_iptables if family == "iptables" else _ip6tables)("-S")
    found = []
    for line in listed.stdout.splitlines():
        args = shlex.split(line)
        if "--comment" not in args:
            continue
        comment = args[args.index("--comment") + 1]
        if (comment == COMMENT + run_id) if run_id else comment.startswith(COMMENT):
            found.append(args)
    return found


def unguard(run_id: str | None = None, only_orphans: bool = False, dry_run: bool = False, progress=None) -> int:
    """Remove a run's rules (None: every run's); `only_orphans`: only those whose bridge is gone."""
    removed = 0
    for family in FAMILIES:
        for args in rules(run_id, family):
            bridge = args[args.index("-i") + 1] if "-i" in args else ""
            if only_orphans and Path("/sys/class/net", bridge).exists():
                continue  # its network still exists: a run in progress
            if progress:
                progress(f"{'would remove' if dry_run else 'removing'} firewall rule {' '.join(args[1:])}"
                         f"{' (IPv6)' if family == 'ip6tables' else ''}")
            if dry_run or _run(family, "-D", *args[1:]).returncode == 0:  # args[0] is "-A"
                removed += 1
    return removed


def _run(family: str, *args: str) -> subprocess.CompletedProcess:
    return (_iptables if family == "iptables" else _ip6tables)(*args)


# -- another engine's host (gateway/control/relay.py) ------------------------------------------------------------------
# The same rules in that host's INPUT chain, set by a short-lived container of the relay image (it has Debian's
# iptables) with the host's network and NET_ADMIN: the engine API is the only way this machine reaches that host.
_REMOTE_UNGUARD = r"""
ours() { iptables -w -S INPUT | grep -F -e "--comment $TAG " -e "--comment \"$TAG\" "; }  # nft quotes it
ours | while IFS= read -r line; do
  bridge=$(printf '%s' "$line" | sed -n 's/.* -i \([^ ]*\) .*/\1/p')
  if [ -n "$ONLY_ORPHANS" ] && [ -n "$bridge" ] && [ -e "/sys/class/net/$bridge" ]; then continue; fi
  echo "removed $line"
  eval "iptables -w -D ${line#-A }"  # the line as iptables printed it, quotes and all
done
"""
_REMOTE_GUARD = _REMOTE_UNGUARD + r"""
iptables -w -I INPUT 1 -i "$BRIDGE" -m comment --comment "$TAG" -j REJECT &&
iptables -w -I INPUT 1 -i "$BRIDGE" -m comment --comment "$TAG" -p tcp --dport "$PORT" -j ACCEPT || {
  ours | while IFS= read -r line; do eval "iptables -w -D ${line#-A }"; done; exit 1; }
"""


def _remote(client, image: str, script: str, env: dict[str, str]) -> tuple[int, str]:
    from pytest_clawswe.labels import LABEL_RUN, owner_label

    container = client.containers.create(image, ["sh", "-c", script], network_mode="host", cap_add=["NET_ADMIN"],
                                         environment=env, labels={LABEL_RUN: env["RUN_ID"], **owner_label()})
    try:
        container.start()
        code = container.wait(timeout=120).get("StatusCode", 1)
        return code, container.logs().decode(errors="replace")
    finally:
        container.remove(force=True)


def remote_guard(client, image: str, network: str, port: int, run_id: str) -> str | None:
    """guard() on the host of the engine `client`, with `image` (gateway/control/relay.py). None when in place,
    else why not."""
    env = {"TAG": COMMENT + run_id, "RUN_ID": run_id, "BRIDGE": bridge_of(client, network), "PORT": str(port),
           "ONLY_ORPHANS": ""}
    code, out = _remote(client, image, _REMOTE_GUARD, env)
    return None if code == 0 else (out.strip().splitlines() or [f"exit {code}"])[-1]


def remote_unguard(client, image: str, run_id: str, only_orphans: bool = False, progress=None) -> int:
    """unguard() on the host of the engine `client`: how many rules it removed."""
    code, out = _remote(client, image, _REMOTE_UNGUARD,
                        {"TAG": COMMENT + run_id, "RUN_ID": run_id, "ONLY_ORPHANS": "1" if only_orphans else ""})
    removed = [line[len("removed "):] for line in out.splitlines() if line.startswith("removed ")]
    for rule in removed:
        if progress:
            progress(f"removing firewall rule {rule} on {client.api.base_url}")
    return len(removed)
