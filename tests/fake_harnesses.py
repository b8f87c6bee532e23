"""Harnesses that misbehave on purpose, loaded by path: --harness tests/fake_harnesses.py:HangHarness."""
import os
from dataclasses import dataclass

from pytest_clawswe.harness.adapter import AgentRun, Harness, HarnessOptions


@dataclass
class FakeOptions(HarnessOptions):
    """The --harness-option keys these fakes read (adapters declare their options: issue 16 §3)."""

    host_port: str = "22"
    sleep: str = "0"
    seconds: str = "2"

def apply_gold(ctx):
    ctx.workspace.write_file("/tmp/gold.patch", ctx.row["patch"])
    ctx.workspace.exec("git apply /tmp/gold.patch && rm /tmp/gold.patch", workdir=ctx.workdir, check=True)


LIST_PROCESSES = "for p in /proc/[0-9]*; do tr '\\0' ' ' < $p/cmdline 2>/dev/null; echo; done"


class ListsProcessesOnBackup:
    """Put first in a harness's bases: its own session backup, plus processes.txt, the processes left in the
    container when the session is backed up (after a budget cut: none may be left)."""

    def backup_session(self, ctx, dest) -> None:
        super().backup_session(ctx, dest)  # type: ignore[misc]
        dest.mkdir(parents=True, exist_ok=True)
        (dest / "processes.txt").write_text(ctx.workspace.exec(["sh", "-c", LIST_PROCESSES]).stdout)


class HangHarness(ListsProcessesOnBackup, Harness):
    """Applies the gold patch, then never finishes: forks, detaches a session, and sleeps."""

    name = "hang"
    needs_model = False

    def send_task(self, ctx, prompt):
        apply_gold(ctx)
        result = ctx.workspace.exec("sleep 1001 & (setsid sleep 1002 &); sleep 1003", timeout=ctx.budget_s)
        return AgentRun("timeout" if result.timed_out else "stop", result.output)


class StuckBackupHarness(Harness):
    """Applies the gold patch and stops; its session backup then never ends for an instance whose id has "stuck" in
    it (as a backup copying from a FIFO or a hung mount would): only the agent stage's own limit ends that item."""

    name = "stuck-backup"
    needs_model = False

    def send_task(self, ctx, prompt):
        apply_gold(ctx)
        return AgentRun("stop", "applied")

    def backup_session(self, ctx, dest) -> None:
        if "stuck" in ctx.instance_id:
            ctx.workspace.exec(["sleep", "3600"])  # no timeout, as a harness's own backup command has none


class FlakyHarness(Harness):
    """Errors on its first attempt after scribbling in the repository; applies the gold patch on the retry."""

    name = "flaky"
    needs_model = False

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.calls = 0

    def send_task(self, ctx, prompt):
        self.calls += 1
        ws = ctx.workspace
        if self.calls % 2 == 1:
            ws.exec("echo junk > scribble.txt", workdir=ctx.workdir)
            return AgentRun("error", "crashed", 1, message="simulated crash")
        apply_gold(ctx)
        return AgentRun("stop", "ok", 0)


class BinaryHarness(Harness):
    """Writes only a binary file and a lockfile: the cleaned patch is empty."""

    name = "binary"
    needs_model = False

    def send_task(self, ctx, prompt):
        ctx.workspace.exec("printf '\\x00\\x01\\x02' > blob.bin && printf '\\x00\\xff' > data.dat "
                           "&& echo '{}' > package-lock.json", workdir=ctx.workdir)
        return AgentRun("stop", "", 0)


class DeleteTestbedHarness(Harness):
    """Deletes the whole repository."""

    name = "delete-testbed"
    needs_model = False

    def send_task(self, ctx, prompt):
        ctx.workspace.exec("rm -rf /testbed", workdir="/")
        return AgentRun("stop", "", 0)


PROBE = r"""
probe() { timeout 5 bash -c "exec 3<>/dev/tcp/$1/$2" 2>/dev/null && echo reached || echo blocked; }
host=${GATEWAY#http://}; host=${host%%/*}
# the probes at once, each with its own time-out: a dropped one waits beside the others, not after them
got=$(mktemp -d)
probe ${host%:*} ${host#*:} > $got/gateway &
probe ${host%:*} $HOST_PORT > $got/host_service &
probe deb.debian.org 80 > $got/mirror &
probe pypi.org 443 > $got/pypi &
probe github.com 443 > $got/github &
probe 1.1.1.1 53 > $got/ip &
{ getent hosts github.com >/dev/null 2>&1 && echo resolved || echo blocked; } > $got/dns &
wait
for name in gateway host_service mirror pypi github ip dns; do echo "$name=$(cat $got/$name)"; done
echo "gold_seen=$(grep -rlF -- "$GOLD_LINE" /testbed /tmp /root /home /opt /srv /var /etc /mnt 2>/dev/null | wc -l)"
echo "test_name_seen=$(grep -rlF -- "$TEST_NAME" /testbed /tmp /root 2>/dev/null | wc -l)"
echo "commits=$(git -C /testbed rev-list --all --reflog | wc -l) ancestors=$(git -C /testbed rev-list HEAD | wc -l)"
echo "--- env"
env
"""


class ProbeHarness(Harness):
    """Looks around from inside the agent's container and reports what it could reach or read."""

    Options = FakeOptions

    name = "probe"

    def send_task(self, ctx, prompt):
        gold = next(line[1:].strip() for line in ctx.row["patch"].splitlines()
                    if line.startswith("+") and not line.startswith("+++") and len(line.strip()) > 12)
        f2p = ctx.row["FAIL_TO_PASS"]
        test_name = (f2p[0] if isinstance(f2p, list) else f2p).split("::")[-1].split("(")[0].split()[-1]
        env = {"GATEWAY": ctx.gateway_url, "GOLD_LINE": gold, "TEST_NAME": test_name,
               "HOST_PORT": self.options.get("host_port", "22")}  # a host service listening on 0.0.0.0
        out, _, container_env = ctx.workspace.exec(["bash", "-c", PROBE], env=env, timeout=120).stdout.partition(
            "--- env\n")
        # the real key is known only here on the host; it must not be among the container's variables
        secret = os.environ.get("OPENROUTER_API_KEY") or "unset"
        out += f"env_has_key={int(secret in container_env)}\ntest_name={test_name}\n"
        (ctx.artifacts_dir / "probe.txt").write_text(out)
        return AgentRun("stop", out, 0)


class SlowOracleHarness(Harness):
    """The oracle, taking its time: applies the gold patch, then works on for `--harness-option sleep=S`
    (or $CLAWSWE_TEST_SLEEP: a fault test resumes with the run's own options and another environment)."""

    Options = FakeOptions

    name = "slow-oracle"
    needs_model = False

    def send_task(self, ctx, prompt):
        apply_gold(ctx)
        result = ctx.workspace.exec(["sleep", self.options.get("sleep", os.environ.get("CLAWSWE_TEST_SLEEP", "0"))], timeout=ctx.budget_s)
        return AgentRun("timeout" if result.timed_out else "stop", "", 0)


CHAT = r"""
import json, sys, time, urllib.request
url, token, seconds = sys.argv[1] + "/v1/chat/completions", sys.argv[2], float(sys.argv[3])
body = json.dumps({"model": "m", "messages": [{"role": "user", "content": "hello"}]}).encode()
end, ok, failed = time.time() + seconds, 0, 0
while time.time() < end:
    req = urllib.request.Request(url, body, {"Authorization": "Bearer " + token, "Content-Type": "application/json"})
    try:
        urllib.request.urlopen(req, timeout=10).read(); ok += 1
    except Exception:
        failed += 1
    time.sleep(0.2)
print(json.dumps({"ok": ok, "failed": failed}))
sys.exit(1 if failed else 0)
"""


class ChattyHarness(Harness):
    """Talks to the model gateway for `--harness-option seconds=S` (or $CLAWSWE_TEST_SECONDS), then applies
    the gold patch."""

    Options = FakeOptions

    name = "chatty"

    def send_task(self, ctx, prompt):
        ws = ctx.workspace
        ws.write_file("/tmp/chat.py", CHAT)
        r = ws.exec(["python3", "/tmp/chat.py", ctx.gateway_url, ctx.gateway_token,
                     self.options.get("seconds", os.environ.get("CLAWSWE_TEST_SECONDS", "2"))],
                    timeout=ctx.budget_s)
        if r.exit_code != 0:
            return AgentRun("error", r.output, r.exit_code, message="model calls failed")
        apply_gold(ctx)
        return AgentRun("stop", r.output, 0)


class DiskFillerHarness(Harness):
    """Applies the gold patch, then writes into the repository and /tmp (64 MiB every 0.3 s) until stopped;
    past 3 GiB it only sleeps, so a watch that fails costs the host no more than that."""

    name = "disk-filler"
    needs_model = False

    def send_task(self, ctx, prompt):
        apply_gold(ctx)
        fill = ("i=0; while :; do i=$((i+1)); [ $i -gt 48 ] && { sleep 5; continue; }; "
                "head -c 67108864 /dev/zero > /testbed/dump$i.bin; "
                "head -c 1048576 /dev/urandom > /tmp/noise$i; sleep 0.3; done")
        result = ctx.workspace.exec(fill, timeout=ctx.budget_s)
        return AgentRun("timeout" if result.timed_out else "error", result.output, result.exit_code,
                        message="the filler stopped")


CALL = r"""
call() {  # URL TOKEN [HEADER]: the HTTP status of one chat request, or "unreachable"
  local hp=${1#http://}; hp=${hp%%/*}
  local body='{"model":"m","messages":[{"role":"user","content":"hello"}]}'
  exec 3<>"/dev/tcp/${hp%:*}/${hp#*:}" 2>/dev/null || { echo unreachable; return; }
  printf 'POST /v1/chat/completions HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\nConnection: close\r\n%s\r\n%s' \
    "$hp" "$2" "${#body}" "${3:+$3$'\r\n'}" "$body" >&3
  local status; read -r _ status _ <&3; exec 3<&-; echo "$status"
}
probe() { timeout 5 bash -c "exec 3<>/dev/tcp/$1/$2" 2>/dev/null && echo reached || echo blocked; }
"""

RELAY_PROBE = CALL + r"""
host=${GATEWAY#http://}; host=${host%%/*}
echo "own=$(call "$GATEWAY" "$TOKEN")"
echo "forged_headers=$(call "$GATEWAY" "$TOKEN" "X-Clawswe-Agent: 10.9.9.9"$'\r\n'"X-Clawswe-Relay: forged")"
echo "host_service=$(probe ${host%:*} $HOST_PORT)"
echo "outside=$(probe 1.1.1.1 53)"
echo "mirror=$(probe deb.debian.org 80)"
"""


class RelayProbeHarness(Harness):
    """Calls the model gateway from its container and from a sibling container with the same token, probes the
    host and the outside, then applies the gold patch; writes what it saw to probe.txt."""

    Options = FakeOptions

    name = "relay-probe"

    def send_task(self, ctx, prompt):
        ws = ctx.workspace
        env = {"GATEWAY": ctx.gateway_url, "TOKEN": ctx.gateway_token, "HOST_PORT": self.options.get("host_port", "22")}
        out = ws.exec(["timeout", "90", "bash", "-c", RELAY_PROBE], env=env, timeout=120).stdout
        ws.container.reload()
        network = next(iter(ws.container.attrs["NetworkSettings"]["Networks"]))
        sibling = ws.client.containers.run(ws.image, ["timeout", "30", "bash", "-c", CALL + 'call "$GATEWAY" "$TOKEN"'],
                                           entrypoint=[], network=network, environment=env, remove=True,
                                           labels=ws.container.labels)
        out += f"sibling={sibling.decode().strip()}\n"
        (ctx.artifacts_dir / "probe.txt").write_text(out)
        apply_gold(ctx)
        return AgentRun("stop", out, 0)


NET_PROBE = r"""
probe() { timeout 8 bash -c "exec 3<>/dev/tcp/$1/$2" 2>/dev/null && echo reached || echo blocked; }
host=${GATEWAY#http://}; host=${host%%/*}
# the probes at once, each with its own time-out: a dropped one waits beside the others, not after them
got=$(mktemp -d)
probe ${host%:*} ${host#*:} > $got/gateway &
probe ${host%:*} $HOST_PORT > $got/host_service &
probe $HOST_ADDR $HOST_PORT > $got/host_address &
probe $SIBLING 8000 > $got/sibling &
probe ${PRIVATE%:*} ${PRIVATE#*:} > $got/private_host &
probe ${LINK_LOCAL%:*} ${LINK_LOCAL#*:} > $got/link_local_host &
{ if timeout 120 python3 -m pip download six --no-deps --no-cache-dir --retries 0 --timeout 15 -q -d /tmp/six \
    >/tmp/pip.log 2>&1 && ls /tmp/six | grep -q '^six-'; then echo reached; else echo blocked; fi; } > $got/internet &
wait
for name in gateway host_service host_address sibling private_host link_local_host internet; do
  echo "$name=$(cat $got/$name)"
done
echo "ipv6_off=$(cat /proc/sys/net/ipv6/conf/all/disable_ipv6 2>/dev/null || echo 1)"
"""


@dataclass
class NetProbeOptions(HarnessOptions):
    """Where the network probe looks (the test's own services, test hosts and this host's address)."""

    host_port: str = "22"
    host_addr: str = "127.0.0.1"
    private: str = "127.0.0.1:9"
    link_local: str = "127.0.0.1:9"


class NetProbeHarness(Harness):
    """Reports which of {internet (a package index), a host service, a sibling container, the test's private and
    link-local hosts, the gateway} its container reaches. The sibling is a container it starts itself on the
    same network (an agent of another item), serving on port 8000, removed at the end."""

    Options = NetProbeOptions
    name = "netprobe"

    def send_task(self, ctx, prompt):
        container = ctx.workspace.container
        container.reload()
        network = next(iter(container.attrs["NetworkSettings"]["Networks"]))
        sibling = container.client.containers.run(
            container.image.id, ["python3", "-m", "http.server", "8000"], detach=True, network=network,
            labels=dict(container.labels))  # the run's labels: swept with the run if this test dies
        try:
            import time

            for _ in range(120):  # serving (from inside itself), so that "blocked" means the network said so
                listening = sibling.exec_run(["python3", "-c", "import socket; socket.create_connection(('127.0.0.1', "
                                                               "8000), 2)"])
                if listening.exit_code == 0:
                    break
                time.sleep(0.5)
            else:
                raise RuntimeError("the sibling container did not serve on port 8000")
            sibling.reload()
            address = sibling.attrs["NetworkSettings"]["Networks"][network]["IPAddress"]
            o = self.opts
            env = {"GATEWAY": ctx.gateway_url, "HOST_PORT": o.host_port, "HOST_ADDR": o.host_addr,
                   "SIBLING": address, "PRIVATE": o.private, "LINK_LOCAL": o.link_local}
            out = ctx.workspace.exec(["bash", "-c", NET_PROBE], env=env, timeout=300).stdout
        finally:
            sibling.remove(force=True)
        (ctx.artifacts_dir / "netprobe.txt").write_text(f"network={network}\n{out}")
        return AgentRun("stop", out, 0)
