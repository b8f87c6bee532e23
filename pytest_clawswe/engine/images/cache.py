"""`--image-cache SIZE`: keep instance and prepared images across runs up to SIZE per engine, least recently
used out first, so a grid's later columns reuse what the first column made.

It replaces `--cache-level` (engine/images/cache_level.py) for a run that gives it: an item's images stay when it ends, then the
engine's budget is enforced. The budget covers the images that runs with --image-cache used on that engine (an
index per engine: image name -> last use, in the user's cache folder); images nobody used under a
budget are never counted or removed. An image is counted as the instance image's size plus what each of its
prepared images adds (layers shared between instance images are counted once per image: the disk holds at most
this). Removal takes the image's lock exclusively and gives up at once when an item holds it (engine/images/cache_level.py), and
leaves an image a container still runs from: images in use may keep the total above SIZE until they are free.
"""
from __future__ import annotations

import fcntl
import hashlib
import json
import os
import time
from contextlib import contextmanager
from pathlib import Path

import docker.errors

from pytest_clawswe.engine.images import build
from pytest_clawswe.engine.images.cache_level import SOURCE_LABEL, ImageLease, lock_path, releasing, remove_instance


def engine_key(client) -> str:
    """The engine's own id: two engines never share an index (unix sockets all read http+docker://localhost)."""
    key = getattr(client, "_clawswe_engine_id", None)
    if key is None:
        key = hashlib.sha256(str(client.info().get("ID") or client.api.base_url).encode()).hexdigest()[:16]
        client._clawswe_engine_id = key
    return key


def index_path(client) -> Path:
    """The engine's index, kept with the user's cache (CLAWSWE_IMAGE_INDEX: another folder, e.g. a test's)."""
    folder = Path(os.environ.get("CLAWSWE_IMAGE_INDEX")
                  or Path(os.environ.get("CLAWSWE_CACHE", Path.home() / ".cache" / "clawswe"), "image-cache"))
    folder.mkdir(parents=True, exist_ok=True)
    return folder / f"{engine_key(client)}.json"


@contextmanager
def _index(client):
    """The engine's index (name -> last use), locked against the other workers and runs while it is open."""
    path = index_path(client)
    fd = os.open(path.with_suffix(".lock"), os.O_RDWR | os.O_CREAT, 0o666)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        try:
            index = json.loads(path.read_text()) if path.is_file() else {}
        except (OSError, ValueError):
            index = {}  # unreadable: start over; images nobody indexes are left alone
        yield index
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps(index, indent=1, sort_keys=True))
        os.chmod(tmp, 0o666)
        os.replace(tmp, path)
    finally:
        os.close(fd)


def sizes(client, names) -> dict[str, int]:
    """Bytes each indexed image holds on this engine (instance + what its prepared images add); absent: missing.
    One listing of the engine's images, not a call per image."""
    images = client.images.list()
    by_tag = {t: img for img in images for t in (img.tags or [])}
    prepared: dict[str, list] = {}
    for img in images:
        source = (img.labels or {}).get(SOURCE_LABEL)
        if source:
            prepared.setdefault(source, []).append(img)
    found = {}
    for name in names:
        instance = by_tag.get(name)
        if instance is None:
            continue
        base = instance.attrs.get("Size") or 0
        found[name] = base + sum(max(0, (p.attrs.get("Size") or 0) - base) for p in prepared.get(name, []))
    return found


def _try_exclusive(lease: ImageLease, name: str) -> int | None:
    """An exclusive lock on `name`'s image lock (this item's own through its lease), or None when in use."""
    if name == lease.image:
        return -1 if lease.try_exclusive() else None
    fd = os.open(lock_path(name), os.O_RDWR | os.O_CREAT, 0o666)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return fd
    except BlockingIOError:
        os.close(fd)
        return None


def _drop(client, name: str) -> bool:
    """Remove an image with its prepared images and the registry names it carries; True when it is gone."""
    try:
        instance = client.images.get(name)
    except docker.errors.ImageNotFound:
        return True
    remove_instance(client, instance, name)
    return not build._image_exists(client, name)


def enforce(client, lease: ImageLease, budget: int, progress=print) -> dict:
    """End an item's use of its image and bring the engine's indexed images under `budget` bytes, least
    recently used first. Never raises; always releases the lease. Returns what it found and did."""
    removed: list[str] = []
    freed = 0
    total: int | None = None
    with releasing(lease, progress, "image cache: could not enforce the budget"):
        with _index(client) as index:
            if lease.image:
                index[lease.image] = time.time()
            held = sizes(client, list(index))
            for name in [n for n in index if n not in held]:
                del index[name]  # removed by someone else (clawswe clean, docker rmi)
            total = sum(held.values())
            for name in sorted(index, key=index.get):
                if total <= budget:
                    break
                fd = _try_exclusive(lease, name)
                if fd is None:
                    continue  # an item uses it: it stays
                try:
                    gone = _drop(client, name)
                finally:
                    if fd >= 0:
                        os.close(fd)
                if gone:
                    del index[name]
                    total -= held[name]
                    removed.append(name)
                    freed += held[name]
    if removed:
        progress(f"image cache: removed {', '.join(removed)} ({freed} bytes) to stay under {budget} bytes")
    return {"cache_bytes": total, "removed": removed, "removed_bytes": freed}


def summary(results: list[dict], budget: int, client=None) -> dict:
    """summary.json's image_cache: hits and misses over the run's items, bytes removed, and the engine's
    cached bytes now and at most after any item."""
    def count(kind: str, value: str) -> int:
        return sum((r.get("images") or {}).get(kind) == value for r in results)

    after = [(r.get("images") or {}).get("cache_bytes") for r in results]
    out = {"budget_bytes": budget,
           "instance_hits": count("instance", "hit"), "instance_misses": sum(
               (r.get("images") or {}).get("instance") not in (None, "hit") for r in results),
           "prepared_hits": count("prepared", "hit"), "prepared_misses": count("prepared", "made"),
           "removed_images": sum(len((r.get("images") or {}).get("removed") or []) for r in results),
           "removed_bytes": sum((r.get("images") or {}).get("removed_bytes") or 0 for r in results),
           "max_bytes_after_an_item": max([a for a in after if a is not None], default=None)}
    if client is not None:
        try:
            with _index(client) as index:
                out["bytes_now"] = sum(sizes(client, list(index)).values())
        except (docker.errors.DockerException, OSError):
            out["bytes_now"] = None
    return out
