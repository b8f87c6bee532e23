#!/usr/bin/env bash
# The project's own test suite, all of it (Docker and harness groups included), on a fresh machine.
# Extra arguments go to pytest, e.g. -m "not docker and not harness" for the fast subset, which needs no
# Docker: the engine is installed and started only when the selected tests need it. Everything runs in the
# project's own virtual environment (.venv, made and updated by scripts/venv.sh).
# Three phases (--test-phase, tests/conftest.py): the shared one runs the tests two at a time (a test file per
# worker: most of their time is spent waiting on containers); beside it, the cluster phase runs the tests on the
# test cluster one at a time (they wait on pods and never restart the Docker engine); then the few that restart
# the Docker engine or start a second one run alone.
# CLAWSWE_TEST_WORKERS sets the first phase's workers (0: one process).
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/venv.sh test
probe=$(mktemp)
harbor_probe=$(mktemp)
kube_probe=$(mktemp)
# CLAWSWE_TEST_REPORTS=DIR keeps the phases' JUnit files (each test's time) there; else they go with the run
reports=${CLAWSWE_TEST_REPORTS:-$(mktemp -d)}
mkdir -p "$reports"
cluster_pid=  # the cluster phase, while it runs beside the shared one
end_cluster_phase() {  # Ctrl-C or a failed step: SIGINT, so that pytest runs its finalizers (the cluster's `down`),
  # to the phase's whole process group (set -m below): the runs its tests started end too, not only pytest
  [ -z "$cluster_pid" ] || { kill -INT -- "-$cluster_pid" 2>/dev/null; wait "$cluster_pid" 2>/dev/null || true; }
}
trap 'end_cluster_phase; rm -rf "$probe" "$harbor_probe" "$kube_probe"; [ -n "${CLAWSWE_TEST_REPORTS:-}" ] || rm -rf "$reports"' EXIT
# Ctrl-C or a stop while this script waits (on a phase, on the cluster phase): exit at once; the EXIT trap ends the rest
trap 'exit 130' INT TERM
# Which tests would run? (collection only; the same arguments)
CLAWSWE_NEEDS_DOCKER_FILE=$probe CLAWSWE_NEEDS_HARBOR_FILE=$harbor_probe CLAWSWE_NEEDS_KUBE_FILE=$kube_probe \
  PYTHONPATH=scripts${PYTHONPATH:+:$PYTHONPATH} \
  python -m pytest -p needs_docker --collect-only -q "$@" -n 0 >/dev/null || true  # -n 0: collect here
# Harbor's own package (Python 3.12 venv, tests/harbor_venv.py), built once into ~/.cache/clawswe when a selected
# test checks exports with it: here, outside any test's time-out (a few minutes the first time, then nothing)
if [ "$(cat "$harbor_probe")" = yes ]; then python tests/harbor_venv.py; fi
if [ "$(cat "$probe")" != no ]; then  # yes, or collection failed: let the real run say why
  scripts/docker-up.sh
  # tests/test_registry.py runs a local registry: Debian's docker-registry (and openssl for its CA). A
  # policy-rc.d that says no keeps the package from starting a registry service of its own.
  if [ "$(id -u)" = 0 ] && ! { command -v docker-registry && command -v openssl; } >/dev/null 2>&1; then
    echo "[test] installing Debian's docker-registry and openssl" >&2
    own_policy=; [ -e /usr/sbin/policy-rc.d ] || { printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d
      chmod +x /usr/sbin/policy-rc.d; own_policy=yes; }
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq docker-registry openssl >/dev/null 2>&1 \
      || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq docker-registry openssl >/dev/null; }
    [ -z "$own_policy" ] || rm -f /usr/sbin/policy-rc.d
  fi
fi
# tests marked kubernetes run on the test cluster (tests/kube_cluster.py starts it): its binaries are built once
# from Debian's source package and cached (10-30 min cold on a shared 2-core machine, seconds warm); built here,
# not inside a test's timeout
if [ "$(cat "$kube_probe")" = yes ]; then
  start=$(date +%s)
  scripts/kube-cluster.sh build >/dev/null
  echo "[test] the test cluster's binaries are ready ($(( $(date +%s) - start )) s)" >&2
fi
disk_free() { df -h --output=avail "$(docker info -f '{{.DockerRootDir}}' 2>/dev/null || echo /)" | tail -1 | tr -d ' '; }
status=0 cluster=5 alone=0
[ "$(cat "$probe")" = no ] || echo "[test] disk free for Docker: $(disk_free)" >&2
if [ "$(cat "$kube_probe")" = yes ]; then
  echo "[test] the cluster phase runs beside the shared one (its output follows the shared phase's)" >&2
  set -m  # its own process group, SIGINT not ignored (as it is for a background job without job control)
  python -m pytest "$@" -n 0 --test-phase cluster --junitxml "$reports/cluster.xml" >"$reports/cluster.log" 2>&1 &
  cluster_pid=$!
  set +m
fi
python -m pytest -n "${CLAWSWE_TEST_WORKERS:-2}" --dist loadfile "$@" --test-phase shared \
  --junitxml "$reports/shared.xml" || status=$?
[ "$status" -ne 2 ] || exit 2  # interrupted (or a usage error): the EXIT trap ends the cluster phase
if [ -n "$cluster_pid" ]; then
  cluster=0
  wait "$cluster_pid" || cluster=$?
  cluster_pid=  # reaped: its number may be another process's now
  cat "$reports/cluster.log"
fi
python -m pytest "$@" -n 0 --test-phase alone --junitxml "$reports/alone.xml" || alone=$?
[ "$(cat "$probe")" = no ] || echo "[test] disk free for Docker: $(disk_free)" >&2
# pytest's 5 is "no tests collected": fine for a phase, not for all three
if [ "$status" -eq 5 ] && [ "$cluster" -eq 5 ] && [ "$alone" -eq 5 ]; then exit 5; fi
for phase in status cluster alone; do [ "${!phase}" -eq 5 ] && printf -v "$phase" 0; done
python scripts/junit_total.py "$reports"/*.xml
for code in "$status" "$cluster" "$alone"; do [ "$code" -eq 0 ] || exit "$code"; done
