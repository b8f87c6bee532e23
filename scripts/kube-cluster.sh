#!/usr/bin/env bash
# A two-node Kubernetes cluster on this machine for the tests (`--kubernetes`; docs/scale-out.md).
#
#   scripts/kube-cluster.sh up      builds the binaries once (scripts/kube-build.sh), starts it all, prints its settings
#   scripts/kube-cluster.sh down    stops it all and removes exactly what `up` made
#   scripts/kube-cluster.sh env     prints its settings (KUBECONFIG=..., registry=...) when it is up
#   scripts/kube-cluster.sh build   installs the Debian packages and builds the binaries (cached), nothing else
#   scripts/kube-cluster.sh node-down N / node-up N   switch node N off (kubelet, pods, containerd) and on again
#
# Everything is Debian's or built from Debian's source package: etcd (etcd-server), kube-apiserver,
# kube-controller-manager and kube-scheduler on this machine; two nodes, each a kubelet with its own containerd
# (the CRI; Debian's containerd and runc, with their own roots, sockets and cgroup parents: the shared Docker
# engine and its containerd are never used or touched) and the bridge CNI (containernetworking-plugins):
#   node clawswe-kube-1  this machine's network namespace, pods on 10.251.1.0/24 (bridge ckube1)
#   node clawswe-kube-2  a network namespace of our own (clawswe-kn2), reached over a veth pair
#                        (host 10.251.255.1, node 10.251.255.2), pods on 10.251.2.0/24
# Pod addresses are routed, not masqueraded, between the nodes and to this machine (the model gateway sees
# each pod's own address); only traffic that leaves for elsewhere is masqueraded. The API server, the local
# registry (Debian's docker-registry, TLS with the cluster's CA, which the nodes' containerd and this
# machine's Docker trust: /etc/docker/certs.d/<it>/ca.crt) listen on 10.251.255.1. The pause image is built
# from the Kubernetes tree's build/pause and pushed there. NetworkPolicy: the bridge CNI enforces none, so
# each node runs scripts/kube-netpol.py, which turns the policies selecting its pods into iptables rules in
# the node's own network namespace (where no pod can change them); a pod no policy has been applied to yet
# reaches nothing (fail closed).
# Needs root, ip, iptables, openssl, docker, and the Debian packages (installed when missing, as root):
# etcd-server containerd runc containernetworking-plugins docker-registry golang-1.19 dpkg-dev gcc make rsync.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)

STATE=${CLAWSWE_KUBE_STATE:-/var/lib/clawswe-kube}
RUN=${CLAWSWE_KUBE_RUN:-/run/clawswe-kube}   # short: unix socket paths are limited to 108 bytes
NS=clawswe-kn2
HOST_IF=ckn2-host NS_IF=ckn2-ns
HOST_ADDR=10.251.255.1 NODE2_ADDR=10.251.255.2 LINK=10.251.255.0/30
CLUSTER_CIDR=10.251.0.0/17                   # both nodes' pods
POD_CIDR1=10.251.1.0/24 POD_CIDR2=10.251.2.0/24
SERVICE_CIDR=10.251.128.0/24
API_PORT=16443 REGISTRY_PORT=15000 ETCD_PORT=23790 ETCD_PEER=23800 KUBELET_PORT=20250
REGISTRY=$HOST_ADDR:$REGISTRY_PORT
PAUSE_IMAGE=$REGISTRY/clawswe-kube/pause:3.4.1
CONTEXT=clawswe-test
PKI=$STATE/pki LOGS=$STATE/logs
CERTS_D=/etc/docker/certs.d/$REGISTRY
CHAIN=CLAWSWE-KUBE                           # this cluster's own forwarding and NAT rules
NODES=(clawswe-kube-1 clawswe-kube-2)

say() { echo "[kube-cluster] $*" >&2; }
nsexec() { ip netns exec "$NS" "$@"; }

deps() {
  local missing=()
  command -v etcd >/dev/null || missing+=(etcd-server)
  command -v containerd >/dev/null || missing+=(containerd)
  command -v runc >/dev/null || missing+=(runc)
  [ -x /usr/lib/cni/bridge ] || missing+=(containernetworking-plugins)
  command -v docker-registry >/dev/null || missing+=(docker-registry)
  command -v openssl >/dev/null || missing+=(openssl)
  [ -x /usr/lib/go-1.19/bin/go ] || missing+=(golang-1.19)
  for t in dpkg-source:dpkg-dev gcc:gcc make:make rsync:rsync; do
    command -v "${t%%:*}" >/dev/null || missing+=("${t##*:}"); done
  [ ${#missing[@]} -eq 0 ] && return
  say "installing Debian's ${missing[*]}"
  # a policy-rc.d that says no keeps the packages from starting services of their own (etcd, registry)
  local own_policy=; [ -e /usr/sbin/policy-rc.d ] || { printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d
    chmod +x /usr/sbin/policy-rc.d; own_policy=yes; }
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null 2>&1 \
    || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null; }
  [ -z "$own_policy" ] || rm -f /usr/sbin/policy-rc.d
}

# -- certificates and credentials -------------------------------------------------------------------------
cert() {  # name, subject, extensions: a key and a certificate signed by the cluster's CA
  openssl req -newkey rsa:2048 -nodes -subj "$2" -keyout "$PKI/$1.key" -out "$PKI/$1.csr" 2>/dev/null
  printf '%s\n' "$3" > "$PKI/$1.ext"
  openssl x509 -req -in "$PKI/$1.csr" -CA "$PKI/ca.crt" -CAkey "$PKI/ca.key" -CAcreateserial -days 30 \
    -extfile "$PKI/$1.ext" -out "$PKI/$1.crt" 2>/dev/null
  rm -f "$PKI/$1.csr" "$PKI/$1.ext"
}

pki() {
  mkdir -p "$PKI" && chmod 700 "$PKI"
  openssl req -x509 -newkey rsa:2048 -nodes -days 30 -subj "/CN=clawswe-kube test CA" \
    -keyout "$PKI/ca.key" -out "$PKI/ca.crt" 2>/dev/null
  local names="IP:$HOST_ADDR,IP:127.0.0.1,IP:${SERVICE_CIDR%.0/24}.1,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc"
  cert apiserver "/CN=kube-apiserver" "subjectAltName=$names
extendedKeyUsage=serverAuth"
  cert apiserver-kubelet-client "/O=system:masters/CN=kube-apiserver-kubelet-client" "extendedKeyUsage=clientAuth"
  cert registry "/CN=$HOST_ADDR" "subjectAltName=IP:$HOST_ADDR
extendedKeyUsage=serverAuth"
  openssl genrsa -out "$PKI/sa.key" 2048 2>/dev/null
  openssl rsa -in "$PKI/sa.key" -pubout -out "$PKI/sa.pub" 2>/dev/null
  # static tokens (the 1.20 apiserver serves no insecure port): the components and the nodes are cluster
  # admins, as in a single-user test cluster; the nodes' kubelets take the apiserver's client certificate
  : > "$PKI/tokens.csv"
  for who in admin controller-manager scheduler netpol "${NODES[@]}"; do
    local user=$who groups=system:masters
    case "$who" in clawswe-kube-*) user=system:node:$who; groups="system:nodes,system:masters" ;;
      controller-manager|scheduler) user=system:kube-$who ;; esac
    echo "$(openssl rand -hex 24),$user,$user,\"$groups\"" >> "$PKI/tokens.csv"
  done
  chmod 600 "$PKI"/*.key "$PKI/tokens.csv"
}

kubeconfig() {  # who, file: a kubeconfig with that identity's token and the cluster's CA
  local token user
  user=$(awk -F, -v w="$1" '$2 == w || $2 == "system:"w || $2 == "system:kube-"w || $2 == "system:node:"w {print $2}' "$PKI/tokens.csv" | head -1)
  token=$(awk -F, -v u="$user" '$2 == u {print $1}' "$PKI/tokens.csv")
  cat > "$2" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: $CONTEXT
  cluster:
    server: https://$HOST_ADDR:$API_PORT
    certificate-authority-data: $(base64 -w0 < "$PKI/ca.crt")
users:
- name: $user
  user:
    token: $token
contexts:
- name: $CONTEXT
  context: {cluster: $CONTEXT, user: $user}
current-context: $CONTEXT
EOF
  chmod 600 "$2"
}

# -- processes ----------------------------------------------------------------------------------------------
start() {  # name, command...: in the background, outliving this script, niced (the machine is shared)
  local name=$1; shift
  setsid nice -n 5 "$@" >"$LOGS/$name.log" 2>&1 </dev/null &
  echo $! > "$RUN/$name.pid"
}

wait_for() {  # what, seconds, command...
  local what=$1 seconds=$2; shift 2
  for _ in $(seq "$seconds"); do "$@" >/dev/null 2>&1 && return 0; sleep 1; done
  say "$what did not come up in $seconds s; see $LOGS/"; return 1
}

api() { curl -sf --cacert "$PKI/ca.crt" -H "Authorization: Bearer $(awk -F, '$2 == "admin" {print $1}' "$PKI/tokens.csv")" \
  "https://$HOST_ADDR:$API_PORT$1"; }

# -- the pieces -------------------------------------------------------------------------------------------
network() {
  ip netns add "$NS"
  ip link add "$HOST_IF" type veth peer name "$NS_IF"
  ip link set "$NS_IF" netns "$NS"
  ip addr add "$HOST_ADDR/30" dev "$HOST_IF"
  ip link set "$HOST_IF" up
  nsexec ip link set lo up
  nsexec ip addr add "$NODE2_ADDR/30" dev "$NS_IF"
  nsexec ip link set "$NS_IF" up
  nsexec ip route add default via "$HOST_ADDR"
  ip route add "$POD_CIDR2" via "$NODE2_ADDR" dev "$HOST_IF"
  nsexec sysctl -qw net.ipv4.ip_forward=1
  nsexec sysctl -qw net.bridge.bridge-nf-call-iptables=1 2>/dev/null || true
  # Docker's FORWARD policy is DROP: the pods' traffic through this machine passes our own chain, first
  iptables -N "$CHAIN" 2>/dev/null || iptables -F "$CHAIN"
  iptables -A "$CHAIN" -s "$CLUSTER_CIDR" -j ACCEPT
  iptables -A "$CHAIN" -d "$CLUSTER_CIDR" -j ACCEPT
  iptables -I FORWARD 1 -m comment --comment clawswe-kube -j "$CHAIN"
  # leaving for elsewhere (not a pod, not this machine's link to node 2): masqueraded (--network open)
  iptables -t nat -N "$CHAIN" 2>/dev/null || iptables -t nat -F "$CHAIN"
  iptables -t nat -A "$CHAIN" -d "$CLUSTER_CIDR" -j RETURN
  iptables -t nat -A "$CHAIN" -d "$LINK" -j RETURN
  iptables -t nat -A "$CHAIN" -m addrtype --dst-type LOCAL -j RETURN
  iptables -t nat -A "$CHAIN" -j MASQUERADE
  iptables -t nat -I POSTROUTING 1 -s "$CLUSTER_CIDR" -m comment --comment clawswe-kube -j "$CHAIN"
}

control_plane() {
  local bin=$1
  start etcd etcd --name clawswe-kube --data-dir "$STATE/etcd" \
    --listen-client-urls "http://127.0.0.1:$ETCD_PORT" --advertise-client-urls "http://127.0.0.1:$ETCD_PORT" \
    --listen-peer-urls "http://127.0.0.1:$ETCD_PEER" --initial-advertise-peer-urls "http://127.0.0.1:$ETCD_PEER" \
    --initial-cluster "clawswe-kube=http://127.0.0.1:$ETCD_PEER" --log-level warn
  wait_for etcd 60 curl -sf "http://127.0.0.1:$ETCD_PORT/health"
  start apiserver "$bin/kube-apiserver" --etcd-servers "http://127.0.0.1:$ETCD_PORT" \
    --bind-address "$HOST_ADDR" --advertise-address "$HOST_ADDR" --secure-port "$API_PORT" --insecure-port 0 \
    --tls-cert-file "$PKI/apiserver.crt" --tls-private-key-file "$PKI/apiserver.key" \
    --client-ca-file "$PKI/ca.crt" --token-auth-file "$PKI/tokens.csv" --anonymous-auth=false \
    --authorization-mode RBAC --service-cluster-ip-range "$SERVICE_CIDR" \
    --service-account-key-file "$PKI/sa.pub" --service-account-signing-key-file "$PKI/sa.key" \
    --service-account-issuer https://kubernetes.default.svc \
    --kubelet-client-certificate "$PKI/apiserver-kubelet-client.crt" \
    --kubelet-client-key "$PKI/apiserver-kubelet-client.key" --kubelet-preferred-address-types InternalIP \
    --profiling=false --event-ttl 10m
  wait_for kube-apiserver 120 api /readyz
  kubeconfig controller-manager "$STATE/controller-manager.kubeconfig"
  kubeconfig scheduler "$STATE/scheduler.kubeconfig"
  # a node is NotReady 16 s after its kubelet last reported (40 s by default): a lost node shows sooner
  start controller-manager "$bin/kube-controller-manager" --kubeconfig "$STATE/controller-manager.kubeconfig" \
    --service-account-private-key-file "$PKI/sa.key" --root-ca-file "$PKI/ca.crt" --leader-elect=false \
    --port 0 --bind-address 127.0.0.1 --secure-port 17257 --node-monitor-period 2s \
    --node-monitor-grace-period 16s --profiling=false
  start scheduler "$bin/kube-scheduler" --kubeconfig "$STATE/scheduler.kubeconfig" --leader-elect=false \
    --port 0 --bind-address 127.0.0.1 --secure-port 17259 --profiling=false
}

registry() {
  mkdir -p "$STATE/registry"
  cat > "$STATE/registry.yml" <<EOF
version: 0.1
log: {level: warn}
storage:
  filesystem: {rootdirectory: $STATE/registry}
  delete: {enabled: true}
http:
  addr: $REGISTRY
  tls: {certificate: $PKI/registry.crt, key: $PKI/registry.key}
EOF
  start registry docker-registry serve "$STATE/registry.yml"
  # this machine's Docker pushes there: it reads the CA from certs.d at each push (no restart, nothing else
  # of the shared engine's settings is changed)
  mkdir -p "$CERTS_D" && cp "$PKI/ca.crt" "$CERTS_D/ca.crt"
  wait_for registry 30 curl -sf --cacert "$PKI/ca.crt" "https://$REGISTRY/v2/"
}

pause_image() {
  local bin=$1 ctx
  ctx=$(mktemp -d)
  cp "$bin/pause" "$ctx/pause"
  printf 'FROM scratch\nCOPY pause /pause\nUSER 65535:65535\nENTRYPOINT ["/pause"]\n' > "$ctx/Dockerfile"
  docker build -q -t "$PAUSE_IMAGE" "$ctx" >/dev/null
  rm -rf "$ctx"
  docker push -q "$PAUSE_IMAGE" >/dev/null
}

node() {  # index, name, address, pod CIDR, the binaries' folder: configuration, then node_start
  local i=$1 name=$2 addr=$3 cidr=$4 bin=$5
  local dir=$STATE/node$i run=$RUN/n$i
  mkdir -p "$dir/cni" "$dir/kubelet" "$run"
  for c in /sys/fs/cgroup/*/; do  # the pods' cgroup parent, one per node: two kubelets on one machine
    case "$c" in */unified/) continue ;; esac
    mkdir -p "$c/clawswe-kube-node$i"
  done
  cat > "$dir/cni/10-clawswe.conflist" <<EOF
{"cniVersion": "0.4.0", "name": "clawswe-kube", "plugins": [
  {"type": "bridge", "bridge": "ckube$i", "isGateway": true, "ipMasq": false, "hairpinMode": true,
   "ipam": {"type": "host-local", "dataDir": "$dir/cni-ipam", "ranges": [[{"subnet": "$cidr"}]],
            "routes": [{"dst": "0.0.0.0/0"}]}},
  {"type": "portmap", "capabilities": {"portMappings": true}}]}
EOF
  cat > "$dir/containerd.toml" <<EOF
version = 2
root = "$dir/containerd"
state = "$run/containerd"
disabled_plugins = ["io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.btrfs",
  "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper"]
[grpc]
  address = "$run/containerd.sock"
[ttrpc]
  address = "$run/containerd-ttrpc.sock"
[debug]
  address = ""
[metrics]
  address = ""
[plugins."io.containerd.internal.v1.opt"]
  path = "$dir/opt"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "$PAUSE_IMAGE"
  netns_mounts_under_state_dir = true
  # no OOM score below containerd's own (0): root may lack CAP_SYS_RESOURCE (this machine's does), and the
  # kubelet's -998 for the pause container then fails every pod's start in runc ("oom_score_adj: Permission denied")
  restrict_oom_score_adj = true
  # an image's layers once unpacked are not kept compressed too: each node held every image twice (CI: 15 GB on one)
  [plugins."io.containerd.grpc.v1.cri".containerd]
    discard_unpacked_layers = true
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "$dir/cni"
  [plugins."io.containerd.grpc.v1.cri".registry.configs."$REGISTRY".tls]
    ca_file = "$PKI/ca.crt"
EOF
  kubeconfig "$name" "$dir/kubelet.kubeconfig"
  cat > "$dir/kubelet.yaml" <<EOF
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: $addr
port: $KUBELET_PORT
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: 2024$i
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: false}
  x509: {clientCAFile: $PKI/ca.crt}
authorization: {mode: AlwaysAllow}
cgroupDriver: cgroupfs
cgroupRoot: /clawswe-kube-node$i
failSwapOn: false
maxPods: 40
podPidsLimit: 310
serializeImagePulls: false
nodeStatusUpdateFrequency: 4s
# in bytes, not a share of the disk: a shared volume much larger than what is free on it (this machine: 252 GB, of
# which 27 GB free) put both nodes under DiskPressure at 2% and evicted the pods of a run with 5 GB still free
evictionHard: {memory.available: 200Mi, nodefs.available: 1Gi, imagefs.available: 1Gi}
imageGCHighThresholdPercent: 95
imageGCLowThresholdPercent: 90
resolvConf: /etc/resolv.conf
EOF
  echo "$bin" > "$dir/bin"
  node_start "$i"
}

node_start() {  # index: the node's containerd, then its kubelet (its configuration written by node())
  local i=$1 dir=$STATE/node$1 run=$RUN/n$1 bin name=${NODES[$(($1 - 1))]} addr
  bin=$(cat "$dir/bin")
  addr=$([ "$i" = 1 ] && echo "$HOST_ADDR" || echo "$NODE2_ADDR")
  local prefix=(); [ "$i" = 1 ] || prefix=(nsenter "--net=/run/netns/$NS")
  start "containerd-$i" "${prefix[@]}" containerd --config "$dir/containerd.toml"
  wait_for "containerd of $name" 60 test -S "$run/containerd.sock"
  start "kubelet-$i" "${prefix[@]}" "$bin/kubelet" --config "$dir/kubelet.yaml" --kubeconfig "$dir/kubelet.kubeconfig" \
    --root-dir "$dir/kubelet" --hostname-override "$name" --node-ip "$addr" \
    --container-runtime remote --container-runtime-endpoint "unix://$run/containerd.sock" \
    --runtime-request-timeout 10m --register-node=true --v 1
}

node_stop() {  # index: as a machine that is switched off: its kubelet, its pods' processes, its containerd
  local n=$1 procs
  stop_pid "kubelet-$n"
  procs=$(cat /sys/fs/cgroup/*/clawswe-kube-node$n/cgroup.procs /sys/fs/cgroup/*/clawswe-kube-node$n/*/cgroup.procs \
    /sys/fs/cgroup/*/clawswe-kube-node$n/*/*/cgroup.procs /sys/fs/cgroup/*/clawswe-kube-node$n/*/*/*/cgroup.procs \
    2>/dev/null | sort -u || true)
  [ -z "$procs" ] || kill -9 $procs 2>/dev/null || true
  stop_pid "containerd-$n"
  # the shims of this node's containerd (their command line names its socket): ours only
  for p in /proc/[0-9]*; do
    if tr '\0' ' ' 2>/dev/null < "$p/cmdline" | grep -qF -- "-address $RUN/n$n/containerd.sock"; then
      kill -9 "${p#/proc/}" 2>/dev/null || true; fi
  done
}

node_ready() { api "/api/v1/nodes/$1" | python3 -c 'import json,sys
n=json.load(sys.stdin); sys.exit(0 if any(c["type"]=="Ready" and c["status"]=="True" for c in n["status"]["conditions"]) else 1)'; }

settings() {
  echo "KUBECONFIG=$STATE/admin.kubeconfig"
  echo "context=$CONTEXT"
  echo "registry=$REGISTRY"
  echo "nodes=${NODES[*]}"
  echo "node_addresses=$HOST_ADDR $NODE2_ADDR"
  echo "pod_cidrs=$POD_CIDR1 $POD_CIDR2"
}

up() {
  [ "$(id -u)" = 0 ] || { say "needs root (network namespace, kubelets, containerd)"; exit 1; }
  if [ -e "$RUN" ] || ip netns list | grep -qw "$NS"; then
    say "the cluster is up already (or was not stopped): run \`$0 down\` first"; exit 1; fi
  if ip -o addr show | grep -qE "inet 10\.251\."; then
    say "10.251.0.0/16 is in use on this machine already; stop what uses it first"; exit 1; fi
  deps
  local bin t0=$(date +%s)
  bin=$("$here/kube-build.sh")
  mkdir -p "$STATE" "$LOGS" "$RUN"
  pki
  kubeconfig admin "$STATE/admin.kubeconfig"
  network
  registry
  control_plane "$bin"
  pause_image "$bin"
  node 1 "${NODES[0]}" "$HOST_ADDR" "$POD_CIDR1" "$bin"
  node 2 "${NODES[1]}" "$NODE2_ADDR" "$POD_CIDR2" "$bin"
  # NetworkPolicy, in each node's own network namespace (scripts/kube-netpol.py)
  awk -F, '$2 == "netpol" {print $1}' "$PKI/tokens.csv" > "$PKI/netpol.token" && chmod 600 "$PKI/netpol.token"
  local np=(python3 "$here/kube-netpol.py" --api "https://$HOST_ADDR:$API_PORT" --ca "$PKI/ca.crt"
    --token-file "$PKI/netpol.token")
  start netpol-1 "${np[@]}" --node "${NODES[0]}" --pod-cidr "$POD_CIDR1"
  start netpol-2 nsenter "--net=/run/netns/$NS" "${np[@]}" --node "${NODES[1]}" --pod-cidr "$POD_CIDR2"
  for n in "${NODES[@]}"; do wait_for "node $n" 180 node_ready "$n"; done
  say "up in $(( $(date +%s) - t0 )) s"
  settings
}

stop_pid() {  # name: the process `start` recorded, and wait for it
  local f=$RUN/$1.pid pid
  [ -s "$f" ] || return 0
  pid=$(cat "$f")
  # only the process `start` made: after a restart the recorded pid may be another program's
  if kill -0 "$pid" 2>/dev/null && tr '\0' ' ' 2>/dev/null < "/proc/$pid/cmdline" | grep -qF -- "${1%-[0-9]}"; then
    kill "$pid" 2>/dev/null || true
    for _ in $(seq 20); do kill -0 "$pid" 2>/dev/null || break; sleep 0.5; done
    kill -9 "$pid" 2>/dev/null || true
  fi
  rm -f "$f"
}

down() {
  for n in 1 2; do stop_pid "netpol-$n"; node_stop "$n"; done
  for p in scheduler controller-manager apiserver etcd registry; do stop_pid "$p"; done
  # mounts left under our own folders (container root filesystems, pod volumes, network namespaces), deepest first
  awk -v a="$RUN/" -v b="$STATE/" 'index($2, a) == 1 || index($2, b) == 1 {print $2}' /proc/self/mounts \
    | sort -r | while read -r m; do umount -l "$m" 2>/dev/null || true; done
  for n in 1 2; do
    for c in /sys/fs/cgroup/*/clawswe-kube-node$n; do
      [ -d "$c" ] && find "$c" -depth -type d -exec rmdir {} + 2>/dev/null || true
    done
  done
  ip link del ckube1 2>/dev/null || true
  ip route del "$POD_CIDR2" 2>/dev/null || true
  if ip netns list | grep -qw "$NS"; then
    for p in $(ip netns pids "$NS" 2>/dev/null); do kill -9 "$p" 2>/dev/null || true; done
    ip netns del "$NS"
  fi
  if ip link show "$HOST_IF" >/dev/null 2>&1; then ip link del "$HOST_IF" 2>/dev/null || true; fi
  while iptables -D FORWARD -m comment --comment clawswe-kube -j "$CHAIN" 2>/dev/null; do :; done
  iptables -F "$CHAIN" 2>/dev/null && iptables -X "$CHAIN" 2>/dev/null || true
  while iptables -t nat -D POSTROUTING -s "$CLUSTER_CIDR" -m comment --comment clawswe-kube -j "$CHAIN" 2>/dev/null; do :; done
  iptables -t nat -F "$CHAIN" 2>/dev/null && iptables -t nat -X "$CHAIN" 2>/dev/null || true
  python3 "$here/kube-netpol.py" --remove 2>/dev/null || true   # this machine's policy chain
  rm -rf "$CERTS_D" "$RUN"
  [ "${CLAWSWE_KUBE_KEEP_STATE:-}" = 1 ] || nice -n 10 rm -rf "$STATE"
  say "down"
}

case "${1:-}" in
  build) [ "$(id -u)" = 0 ] && deps; "$here/kube-build.sh" ;;
  up) up ;;
  down) down ;;
  node-down) [ -d "$RUN" ] && node_stop "${2:?which node: 1 or 2}" ;;
  node-up) [ -d "$RUN" ] && { node_start "${2:?which node: 1 or 2}"; wait_for "node ${NODES[$(($2 - 1))]}" 180 node_ready "${NODES[$(($2 - 1))]}"; } ;;
  env) [ -d "$RUN" ] || { say "the cluster is not up: run \`$0 up\`"; exit 1; }
       # started once, but its processes are gone (the machine or the session restarted): not up
       api /healthz >/dev/null 2>&1 || { say "the cluster was started but its API server does not answer (its \
processes are gone, e.g. after a restart): run \`$0 down\`, then \`$0 up\`"; exit 3; }
       settings ;;
  *) echo "usage: $0 up|down|env|build" >&2; exit 2 ;;
esac
