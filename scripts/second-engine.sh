#!/usr/bin/env bash
# A second Docker engine on this machine that behaves like a separate test host (tests/second_engine.py).
#
#   scripts/second-engine.sh up     network namespace + veth pair + dockerd over TCP+TLS; prints its settings
#   scripts/second-engine.sh down   stops that dockerd and removes exactly what `up` created
#
# The engine lives in its own network namespace (clawswe-e2), reached from the host over a veth pair on a
# /30 of its own (host 10.250.8.1, engine 10.250.8.2:2376, TLS with a CA made here), with its own data root,
# exec root, pidfile, bridge range and cgroup parent. Its iptables rules are those of the namespace, so the
# main engine's and the host's rules are never touched and it can keep Docker's own isolation (--iptables).
# The main dockerd, its data and its networks are left alone. Needs root, ip, openssl, dockerd.
set -euo pipefail

NS=${CLAWSWE_E2_NS:-clawswe-e2}
HOST_IF=ce2-host NS_IF=ce2-ns
HOST_ADDR=${CLAWSWE_E2_HOST_ADDR:-10.250.8.1} NS_ADDR=${CLAWSWE_E2_ADDR:-10.250.8.2} PREFIX=30
BRIDGE=ce2br0 BRIDGE_ADDR=10.250.9.1/24            # its default bridge, made here (unique name, see below)
POOL=base=10.250.16.0/20,size=24                     # its networks: clear of the main engine's 172.16/12
STATE=${CLAWSWE_E2_STATE:-/var/lib/clawswe-engine2}     # data root, certificates, log
EXEC=/run/clawswe-e2                                    # short: unix socket paths are limited to 108 bytes
PORT=2376
TLS=$STATE/tls

say() { echo "[second-engine] $*" >&2; }
nsexec() { ip netns exec "$NS" "$@"; }

certs() {
  [ -s "$TLS/cert.pem" ] && [ -s "$TLS/server-cert.pem" ] && return
  mkdir -p "$TLS" && chmod 700 "$TLS"
  ( cd "$TLS"
    openssl req -x509 -newkey rsa:2048 -nodes -days 7 -subj "/CN=clawswe-e2 test CA" \
      -keyout ca-key.pem -out ca.pem 2>/dev/null
    openssl req -newkey rsa:2048 -nodes -subj "/CN=$NS_ADDR" -keyout server-key.pem -out server.csr 2>/dev/null
    printf 'subjectAltName=IP:%s\nextendedKeyUsage=serverAuth\n' "$NS_ADDR" > server.ext
    openssl x509 -req -in server.csr -CA ca.pem -CAkey ca-key.pem -CAcreateserial -days 7 \
      -extfile server.ext -out server-cert.pem 2>/dev/null
    openssl req -newkey rsa:2048 -nodes -subj "/CN=clawswe-client" -keyout key.pem -out client.csr 2>/dev/null
    printf 'extendedKeyUsage=clientAuth\n' > client.ext
    openssl x509 -req -in client.csr -CA ca.pem -CAkey ca-key.pem -CAcreateserial -days 7 \
      -extfile client.ext -out cert.pem 2>/dev/null
    rm -f ./*.csr ./*.ext ca.srl && chmod 600 ./*key.pem )
}

up() {
  [ "$(id -u)" = 0 ] || { say "needs root (network namespace, dockerd)"; exit 1; }
  if ip netns list | grep -qw "$NS"; then
    say "namespace $NS exists already: run \`$0 down\` first"; exit 1
  fi
  if ip -o addr show | grep -qE "inet ($HOST_ADDR|$NS_ADDR)/"; then
    say "$HOST_ADDR or $NS_ADDR is already in use on this machine; set CLAWSWE_E2_HOST_ADDR/CLAWSWE_E2_ADDR"; exit 1
  fi
  mkdir -p "$STATE/data" "$EXEC"
  certs
  ip netns add "$NS"
  ip link add "$HOST_IF" type veth peer name "$NS_IF"
  ip link set "$NS_IF" netns "$NS"
  ip addr add "$HOST_ADDR/$PREFIX" dev "$HOST_IF"
  ip link set "$HOST_IF" up
  nsexec ip link set lo up
  nsexec ip addr add "$NS_ADDR/$PREFIX" dev "$NS_IF"
  nsexec ip link set "$NS_IF" up
  nsexec ip route add default via "$HOST_ADDR"   # the engine's containers reach the host (a gateway) here
  # its own bridge name: dockerd runs in the host's mount namespace (nsenter --net, not `ip netns exec`,
  # whose fresh /sys hides the cgroup mounts), where /sys/class/net shows the host's docker0
  nsexec ip link add "$BRIDGE" type bridge
  nsexec ip addr add "$BRIDGE_ADDR" dev "$BRIDGE"
  nsexec ip link set "$BRIDGE" up
  echo '{}' > "$STATE/daemon.json"                # never the main engine's /etc/docker/daemon.json
  # setsid: the daemon outlives this script; nice: the machine's 2 cores are shared
  setsid nsenter --net="/run/netns/$NS" nice -n 10 dockerd \
    --config-file "$STATE/daemon.json" --data-root "$STATE/data" --exec-root "$EXEC" \
    --pidfile "$EXEC/dockerd.pid" --cgroup-parent clawswe-e2 \
    --bridge "$BRIDGE" --default-address-pool "$POOL" \
    -H "unix://$EXEC/docker.sock" -H "tcp://$NS_ADDR:$PORT" \
    --tlsverify --tlscacert "$TLS/ca.pem" --tlscert "$TLS/server-cert.pem" --tlskey "$TLS/server-key.pem" \
    >"$STATE/dockerd.log" 2>&1 </dev/null &
  for _ in $(seq 90); do
    kill -0 "$!" 2>/dev/null || break
    docker -H "unix://$EXEC/docker.sock" info >/dev/null 2>&1 && break; sleep 1
  done
  if ! docker -H "unix://$EXEC/docker.sock" info >/dev/null 2>&1; then
    cp "$STATE/dockerd.log" /tmp/clawswe-e2-dockerd.log 2>/dev/null || true
    say "dockerd did not start; see /tmp/clawswe-e2-dockerd.log"; down; exit 1
  fi
  say "up: DOCKER_HOST=tcp://$NS_ADDR:$PORT DOCKER_TLS_VERIFY=1 DOCKER_CERT_PATH=$TLS"
  echo "host=tcp://$NS_ADDR:$PORT"
  echo "tls_dir=$TLS"
  echo "host_side_addr=$HOST_ADDR"
}

down() {
  local pid=""
  [ -s "$EXEC/dockerd.pid" ] && pid=$(cat "$EXEC/dockerd.pid")
  if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
    # containers first, so no shim outlives the daemon
    docker -H "unix://$EXEC/docker.sock" ps -aq 2>/dev/null | xargs -r docker -H "unix://$EXEC/docker.sock" rm -f >/dev/null 2>&1 || true
    kill "$pid"
    for _ in $(seq 30); do kill -0 "$pid" 2>/dev/null || break; sleep 1; done
    kill -0 "$pid" 2>/dev/null && kill -9 "$pid"
  fi
  # whatever still runs in the namespace was started by this engine (its containerd, shims)
  if ip netns list | grep -qw "$NS"; then
    for p in $(ip netns pids "$NS" 2>/dev/null); do kill -9 "$p" 2>/dev/null || true; done
    for _ in $(seq 20); do [ -z "$(ip netns pids "$NS" 2>/dev/null)" ] && break; sleep 0.5; done
  fi
  # containers of a killed daemon live on in their own network namespaces; the cgroup parent is this engine's
  procs=$(cat /sys/fs/cgroup/*/clawswe-e2/*/cgroup.procs /sys/fs/cgroup/clawswe-e2/*/cgroup.procs 2>/dev/null | sort -u || true)
  if [ -n "$procs" ]; then
    kill -9 $procs 2>/dev/null || true
    sleep 1
  fi
  if ip netns list | grep -qw "$NS"; then
    ip netns del "$NS"     # takes the namespace's end of the veth pair, and with it the host's end
  fi
  # the namespace's deletion takes the host's end too, asynchronously: it may be gone between show and del
  if ip link show "$HOST_IF" >/dev/null 2>&1; then ip link del "$HOST_IF" 2>/dev/null || true; fi
  for d in /sys/fs/cgroup/*/clawswe-e2 /sys/fs/cgroup/clawswe-e2; do
    [ -d "$d" ] && find "$d" -depth -type d -exec rmdir {} + 2>/dev/null || true
  done
  # a killed daemon leaves its mounts (container root filesystems, network namespace files): only ours, under
  # the engine's own folders, deepest first
  awk -v a="$EXEC/" -v b="$STATE/" 'index($2, a) == 1 || index($2, b) == 1 {print $2}' /proc/self/mounts \
    | sort -r | while read -r m; do umount -l "$m" 2>/dev/null || true; done
  rm -rf "$EXEC" 2>/dev/null || { sleep 2; rm -rf "$EXEC"; }
  if [ "${CLAWSWE_E2_KEEP_DATA:-}" != 1 ]; then
    nice -n 10 rm -rf "$STATE"
  fi
  say "down"
}

case "${1:-}" in
  up) up ;;
  down) down ;;
  *) echo "usage: $0 up|down" >&2; exit 2 ;;
esac
