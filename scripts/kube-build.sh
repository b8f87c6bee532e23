#!/usr/bin/env bash
# Kubernetes server binaries for the test cluster (scripts/kube-up.sh), built once from Debian's own
# `kubernetes` source package with Debian's golang-1.19 and cached under $CLAWSWE_CACHE/kube/bin/KEY.
#
#   scripts/kube-build.sh          prints the folder holding the checked binaries (builds them when missing)
#
# No registry this machine reaches serves Kubernetes server binaries (see docs/scale-out.md), so they are
# built from source: the package's upstream tree carries its vendored Go modules, nothing is downloaded
# but the source package itself. The source is fetched with apt's source tools through a sources list of
# our own (the system's apt configuration and lists are left alone). KEY names the source (its .dsc's
# sha256) and the Go release; every binary's sha256 is written at build time and checked at each use, and a
# cache that fails the check is rebuilt. A cold build takes ~10 minutes on 2 cores (niced: the machine is
# shared). Also builds the pause binary from the tree's build/pause (the sandbox's infra container).
# scripts/kube-patches/ holds our own fixes on top of Debian's patches, applied before the build (part of KEY):
# the 1.20 tree vendors reflect2 1.0.1, whose map iteration is wrong under Go >= 1.18 (the API server faults).
set -euo pipefail
cache=${CLAWSWE_CACHE:-$HOME/.cache/clawswe}/kube
version=${CLAWSWE_KUBE_SOURCE_VERSION:-1.20.5+really1.20.2-1.1+deb12u1}
go_dir=${CLAWSWE_KUBE_GO:-/usr/lib/go-1.19}
binaries=(kube-apiserver kube-controller-manager kube-scheduler kubelet kube-proxy)
say() { echo "[kube-build] $*" >&2; }

[ -x "$go_dir/bin/go" ] || {
  say "Go 1.19 is missing at $go_dir: install Debian's golang-1.19 (apt-get install golang-1.19), or set CLAWSWE_KUBE_GO"
  exit 1; }
command -v dpkg-source >/dev/null || { say "dpkg-source is missing: install Debian's dpkg-dev"; exit 1; }
for tool in gcc make rsync patch; do  # rsync: the tree's build scripts copy their outputs with it
  command -v "$tool" >/dev/null || { say "$tool is missing: install Debian's $tool (apt-get install $tool)"; exit 1; }
done
go_version=$("$go_dir/bin/go" env GOVERSION)

# 1. the source package's .dsc, through apt with a sources list of our own (deb-src from the system's mirror)
src=$cache/src
apt_dir=$src/apt
mkdir -p "$apt_dir/lists/partial" "$apt_dir/archives/partial"
mirror=$(cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources 2>/dev/null \
  | awk '/^(deb|URIs:)/ {for (i=1;i<=NF;i++) if ($i ~ /^https?:\/\/[^ ]*debian\/?$/) {print $i; exit}}' || true)
echo "deb-src ${mirror:-http://deb.debian.org/debian} bookworm main" > "$apt_dir/sources.list"
apt_opts=(-o "Dir::Etc::SourceList=$apt_dir/sources.list" -o Dir::Etc::SourceParts=/dev/null
  -o "Dir::State::Lists=$apt_dir/lists" -o "Dir::Cache=$apt_dir" -o Dir::Cache::pkgcache= -o Dir::Cache::srcpkgcache=
  -o APT::Sandbox::User=root)
dsc=$src/kubernetes_${version#*:}.dsc
if [ ! -s "$dsc" ]; then
  say "fetching Debian's kubernetes $version source package"
  apt-get "${apt_opts[@]}" update -qq >/dev/null 2>&1 || true
  (cd "$src" && apt-get "${apt_opts[@]}" source --download-only -qq "kubernetes=$version" >/dev/null 2>&1) || {
    say "Debian's kubernetes $version source package could not be fetched (apt-get source): check the Debian mirror is reachable, or set CLAWSWE_KUBE_SOURCE_VERSION to one it serves"
    exit 1; }
fi
patches=$(cd "$(dirname "$0")/kube-patches" && pwd)
key=$( { sha256sum "$dsc" | cut -d' ' -f1; cat "$patches"/*.patch; echo "$go_version ${binaries[*]} pause"; } \
  | sha256sum | cut -c1-16)
out=$cache/bin/$key

check() { [ -s "$1/SHA256SUMS" ] && (cd "$1" && sha256sum --quiet -c SHA256SUMS >/dev/null 2>&1); }
if check "$out"; then echo "$out"; exit 0; fi
[ -e "$out" ] && say "cached binaries at $out fail their sha256 check: rebuilding"

# 2. build in a fresh tree (the package's patches applied), then publish the folder atomically
work=$(mktemp -d "$cache/build.XXXXXX")
trap 'rm -rf "$work"' EXIT
say "building ${binaries[*]} from kubernetes $version with $go_version (~10 min on 2 cores; log: $cache/build.log)"
start=$(date +%s)
(cd "$src" && sha256sum --quiet -c <(awk '/^Checksums-Sha256:/ {f=1; next} /^[^ ]/ {f=0} f {print $1"  "$3}' "$dsc")) || {
  say "the source package's files do not match its .dsc: remove $src and re-run"; exit 1; }
dpkg-source --no-check -x "$dsc" "$work/tree" >"$cache/build.log" 2>&1
# our own patches on top of Debian's (scripts/kube-patches/, each says why): the tree predates Go 1.18
for patch in "$patches"/*.patch; do
  patch -d "$work/tree" -p1 --forward -s < "$patch" >>"$cache/build.log" 2>&1 || {
    say "applying $(basename "$patch") failed; see $cache/build.log"; exit 1; }
done
whats=$(printf 'cmd/%s ' "${binaries[@]}")
# as Debian's rules build it (static, CGO off); the tree's vendor folder only (GOPROXY=off: never download)
(cd "$work/tree" && PATH="$go_dir/bin:$PATH" GOPROXY=off CGO_ENABLED=0 GOCACHE="$work/gocache" HOME="$work" \
  KUBE_GIT_VERSION=v1.20.2 KUBE_GIT_TREE_STATE=clean nice -n 10 make WHAT="${whats% }" >>"$cache/build.log" 2>&1) || {
  say "the build failed; see $cache/build.log"; exit 1; }
mkdir -p "$work/bin"
for b in "${binaries[@]}"; do cp "$work/tree/_output/bin/$b" "$work/bin/$b"; done
# pause: the sandbox's infra container, static so it runs in an image holding nothing else
gcc -Os -static -Wall -DVERSION=v1.20.2-clawswe -o "$work/bin/pause" "$work/tree/build/pause/linux/pause.c" \
  >>"$cache/build.log" 2>&1 || { say "building pause failed; see $cache/build.log"; exit 1; }
(cd "$work/bin" && sha256sum -- * > SHA256SUMS)
printf 'source=kubernetes %s\ngo=%s\nbuild_seconds=%s\n' "$version" "$go_version" "$(( $(date +%s) - start ))" \
  > "$work/bin/BUILD"
mkdir -p "$cache/bin"
rm -rf "$out"
mv "$work/bin" "$out"
# one build is kept: another source, Go or patch set's binaries go (400 MB each)
find "$cache/bin" -mindepth 1 -maxdepth 1 ! -name "$key" -exec rm -rf {} +
say "built in $(( $(date +%s) - start )) s: $out"
echo "$out"
