"""`clawswe clean`: remove what killed runs left behind (containers, volumes, networks labelled by a run,
and the host firewall rules of their networks; with --kubernetes, the run namespaces on a cluster)."""
from __future__ import annotations

import os
import time

import docker.errors

from pytest_clawswe.engine.docker.client import docker_client
from pytest_clawswe.engine.network.hostguard import unguard
from pytest_clawswe.engine.hosts import is_remote
from pytest_clawswe.errors import InfraError, UserError
from pytest_clawswe.labels import LABEL_OWNER, LABEL_RUN, owner_alive, owner_label


def object_labels(kind: str, obj) -> dict[str, str]:
    return obj.labels if kind == "containers" else (obj.attrs.get("Labels") or {})


def leftovers(client, run_id: str | None = None) -> dict[str, list]:
    label = f"{LABEL_RUN}={run_id}" if run_id else LABEL_RUN
    return {
        "containers": client.containers.list(all=True, filters={"label": label}),
        "volumes": client.volumes.list(filters={"label": label}),
        "networks": client.networks.list(filters={"label": label}),
    }


def spared(labels: dict[str, str], include_live: bool = False, spare_live_others: bool = False) -> bool:
    """Whether a sweep keeps an object: a live process owns it (with `spare_live_others`: another one)."""
    if spare_live_others:
        return owner_alive(labels) and labels.get(LABEL_OWNER) != owner_label()[LABEL_OWNER]
    return not include_live and owner_alive(labels)


def clean(client, run_id: str | None = None, dry_run: bool = False, include_live: bool = False,
          progress=print, spare_live_others: bool = False, remote: bool = False) -> int:
    """Remove a run's (None: every run's) leftovers from the engine `client`; `remote`: that engine's host
    is another machine, whose firewall rules of the run go too (gateway/control/relay.py)."""
    found = leftovers(client, run_id)
    removed = 0
    for kind in ("containers", "volumes", "networks"):  # containers first: they hold the others
        for obj in found[kind]:
            if spared(object_labels(kind, obj), include_live, spare_live_others):
                continue  # a run in progress owns it

            progress(f"{'would remove' if dry_run else 'removing'} {kind[:-1]} {obj.name}")
            if not dry_run:
                try:
                    obj.remove(force=True, v=True) if kind == "containers" else obj.remove()
                except docker.errors.NotFound:
                    continue  # removed meanwhile (e.g. by its own run)
                except docker.errors.APIError as exc:  # one stuck object does not keep the rest
                    progress(f"could not remove {kind[:-1]} {obj.name}: {exc.explanation or exc}")
                    continue
            removed += 1
    # the host firewall rules of runs whose network is gone now (see hostguard)
    removed += unguard(run_id, only_orphans=True, dry_run=dry_run, progress=progress)
    if remote and not dry_run:
        from pytest_clawswe.gateway.control.relay import unguard_engine

        removed += unguard_engine(client, run_id, only_orphans=True, progress=progress)
    return removed


def remaining(client, run_id: str, include_live: bool = False, spare_live_others: bool = False) -> int:
    """How many of a run's objects a sweep with these settings would still have to remove."""
    return sum(not spared(object_labels(kind, obj), include_live, spare_live_others)
               for kind, objs in leftovers(client, run_id).items() for obj in objs)


def sweep_run(run_id: str, include_live: bool = True, wait_s: float = 0, spare_live_others: bool = False,
              progress=None, host=None) -> None:
    """Remove what a run created and still exists (a killed worker leaves its container behind).

    `wait_s`: how long to wait for an engine that does not answer (a daemon restarting mid-run).
    `spare_live_others`: keep what another live process (a worker still stopping) owns.
    `host`: the engine (engines.Host) to sweep; None: the environment's engine."""
    deadline = time.monotonic() + wait_s
    while True:
        try:
            client = host.client(timeout=30) if host is not None else docker_client(timeout=30)
            clean(client, run_id, include_live=include_live, progress=lambda m: None,
                  spare_live_others=spare_live_others, remote=is_remote(host.url if host is not None else None))
            left = remaining(client, run_id, include_live, spare_live_others) if include_live else 0
            if not left:
                return
            problem = f"{left} container(s), volume(s) or network(s) of this run could not be removed"
        except (docker.errors.DockerException, InfraError, OSError) as exc:
            problem = f"the Docker engine did not answer ({type(exc).__name__})"
        if time.monotonic() >= deadline:
            break
        time.sleep(2)
    if wait_s and progress:
        where = f" --docker-host {host.url}" if host is not None and host.url else ""
        progress(f"{problem}{' on ' + host.url if where else ''}; remove what is left with "
                 f"`clawswe clean --run-id {run_id}{where}`")


def clean_bundle_caches(client, dry_run: bool = False, progress=print) -> int:
    """Remove the bundles' data containers (each holds a copy of its bundle) that no container uses now."""
    from pytest_clawswe.harness.adapters._bundled import BUNDLE_CACHE_LABEL

    in_use: set[str] = set()
    for c in client.containers.list():
        in_use.update(v.split(":")[0] for v in (c.attrs["HostConfig"].get("VolumesFrom") or []))
    removed = 0
    for c in client.containers.list(all=True, filters={"label": BUNDLE_CACHE_LABEL}):
        if c.name in in_use or c.id in in_use:
            continue
        progress(f"{'would remove' if dry_run else 'removing'} bundle cache {c.name}")
        if not dry_run:
            c.remove(v=True)
        removed += 1
    return removed


def _cli(args) -> int:
    from pytest_clawswe.engine.hosts import Host

    n = 0
    if args.kubernetes is not None:  # a cluster's run namespaces (engine/kube/namespace.py), then this machine's engine
        from pytest_clawswe.engine.kube import namespace
        from pytest_clawswe.engine.kube.cluster import Cluster

        try:
            n += namespace.clean(Cluster(args.kubernetes or None), args.run_id, args.dry_run, include_live=args.all)
        except InfraError as exc:
            raise UserError(f"--kubernetes {args.kubernetes}: {exc}") from None
    for url in args.docker_host or [None]:  # each engine on its own
        try:
            client = Host(url, args.docker_tls_dir).client() if url else docker_client()
        except InfraError as exc:
            raise UserError(str(exc)) from None
        n += clean(client, args.run_id, args.dry_run, include_live=args.all, remote=is_remote(url))
        if args.bundles:
            n += clean_bundle_caches(client, args.dry_run)
    print(f"{'found' if args.dry_run else 'removed'} {n} leftover object(s)")
    return 0


def add_cli(sub) -> None:
    p = sub.add_parser("clean", help="remove containers, volumes and networks that killed runs left behind")
    p.add_argument("--run-id", help="only this run's leftovers (default: every clawswe run's)")
    p.add_argument("--dry-run", action="store_true", help="list, remove nothing")
    p.add_argument("--all", action="store_true", help="also what runs still in progress on this machine own")
    p.add_argument("--bundles", action="store_true",
                   help="also the harness bundles' data containers kept between runs (recreated when needed)")
    p.add_argument("--docker-host", action="append", metavar="URL",
                   help="clean this engine (repeatable, as the run's --docker-host; default: DOCKER_HOST or the "
                        "local socket)")
    p.add_argument("--docker-tls-dir", metavar="DIR", default=os.environ.get("DOCKER_CERT_PATH"),
                   help="ca.pem, cert.pem and key.pem for tcp:// engines (default: DOCKER_CERT_PATH)")
    p.add_argument("--kubernetes", nargs="?", const="", default=None, metavar="CONTEXT",
                   help="also delete the namespaces runs left on this cluster (the kubeconfig's CONTEXT, default its "
                        "current one): those whose run's process is gone, or --all")
    p.set_defaults(func=_cli)
