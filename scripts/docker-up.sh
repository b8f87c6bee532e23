#!/usr/bin/env bash
# Make a Docker engine and the Debian base images available on a fresh machine.
# On a machine where Docker already runs and base images can be pulled, this does nothing but check.
# Usage: scripts/docker-up.sh [suite ...]   (default suites: bookworm bullseye)
set -euo pipefail
suites=("$@"); [ ${#suites[@]} -gt 0 ] || suites=(bookworm bullseye)
cache=${CLAWSWE_CACHE:-$HOME/.cache/clawswe}
mkdir -p "$cache"

say() { echo "[docker-up] $*" >&2; }

if ! docker info >/dev/null 2>&1; then
  if ! command -v dockerd >/dev/null 2>&1; then
    [ "$(id -u)" = 0 ] || { say "no Docker engine and not root: install Docker, then re-run"; exit 1; }
    say "installing Debian's docker.io"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq docker.io iptables >/dev/null
  fi
  say "starting dockerd (log: $cache/dockerd.log)"
  # setsid: dockerd must outlive this script and the shell that ran it.
  setsid dockerd >"$cache/dockerd.log" 2>&1 < /dev/null &
  echo $! > "$cache/dockerd.pid"  # this daemon is ours: tests may restart it (see tests/test_faults.py)
  for _ in $(seq 60); do docker info >/dev/null 2>&1 && break; sleep 1; done
  docker info >/dev/null 2>&1 || { say "dockerd did not start; see $cache/dockerd.log"; exit 1; }
fi

for suite in "${suites[@]}"; do
  image="debian:${suite}-slim"
  docker image inspect "$image" >/dev/null 2>&1 && continue
  if timeout 60 docker pull "$image" >/dev/null 2>&1; then say "pulled $image"; continue; fi
  tarball="$cache/debian-${suite}-slim.tar"
  if [ ! -s "$tarball" ]; then
    command -v debootstrap >/dev/null 2>&1 || {
      apt-get update -qq; DEBIAN_FRONTEND=noninteractive apt-get install -y -qq debootstrap >/dev/null; }
    # the host's own Debian mirror (one-line or deb822 sources), so a machine without the public one works
    mirror=$(cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources \
      2>/dev/null | awk '/^(deb|URIs:)/ {for (i=1;i<=NF;i++) if ($i ~ /^https?:\/\//) {print $i; exit}}' || true)
    mirror=${mirror:-http://deb.debian.org/debian}
    root=$(mktemp -d)
    say "no registry reachable: building $image with debootstrap from $mirror (a few minutes, cached)"
    debootstrap --variant=minbase "$suite" "$root" "$mirror" >"$cache/debootstrap-$suite.log" 2>&1 \
      || { say "debootstrap failed; see $cache/debootstrap-$suite.log"; rm -rf "$root"; exit 1; }
    # Keep the image small, like the official slim images.
    rm -rf "$root"/var/cache/apt/archives/*.deb "$root"/var/lib/apt/lists/*
    tar -C "$root" -cf "$tarball.tmp" . && mv "$tarball.tmp" "$tarball"
    rm -rf "$root"
  fi
  docker import --change "CMD [\"bash\"]" --change "ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin" "$tarball" "$image" >/dev/null
  say "imported $image"
done
