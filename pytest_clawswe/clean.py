"""`clawswe clean`: remove what killed runs left behind (containers, volumes, networks labelled by a run,
and the host firewall rules of their networks)."""
from __future__ import annotations

import docker.errors

from .hostguard import unguard
from .workspace import LABEL_RUN, InfraError, docker_client, owner_alive


def leftovers(client, run_id: str | None = None) -> dict[str, list]:
    label = f"{LABEL_RUN}={run_id}" if run_id else LABEL_RUN
    return {
        "containers": client.containers.list(all=True, filters={"label": label}),
        "volumes": client.volumes.list(filters={"label": label}),
        "networks": client.networks.list(filters={"label": label}),
    }


def clean(client, run_id: str | None = None, dry_run: bool = False, include_live: bool = False,
          progress=print) -> int:
    found = leftovers(client, run_id)
    removed = 0
    for kind in ("containers", "volumes", "networks"):  # containers first: they hold the others
        for obj in found[kind]:
            labels = obj.labels if kind == "containers" else (obj.attrs.get("Labels") or {})
            if not include_live and owner_alive(labels):
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
    return removed + unguard(run_id, only_orphans=True, dry_run=dry_run, progress=progress)


def clean_bundle_caches(client, dry_run: bool = False, progress=print) -> int:
    """Remove the bundles' data containers (each holds a copy of its bundle) that no container uses now."""
    from .harnesses._bundled import BUNDLE_CACHE_LABEL

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
    from .cli import UserError

    try:
        client = docker_client()
    except InfraError as exc:
        raise UserError(str(exc)) from None
    n = clean(client, args.run_id, args.dry_run, include_live=args.all)
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
    p.set_defaults(func=_cli)
