"""`--cache-level`: which images a run keeps when an item ends, so the disk stays bounded on a full run.

Levels, as swebench names them (its base/env images are what our instance images are built FROM):
    instance  keep the instance image and its prepared image (a re-run starts at once)
    base      remove both when the item ends; keep what they were built on
    none      as base, and also the base image the instance image's build had to pull, once nothing else
              is built on it
    auto      (default) instance for a run of at most AUTO_KEEP_MAX items (a few ids, the demo set: re-running
              them is the usual next step), base above that (350 SWE-bench images are hundreds of GB)

An image is removed only when nobody uses it: every item holds a shared lock on its instance image from
before the image is made ready until its evaluation ended (xdist workers, other runs on this host), the
remover needs the exclusive lock and gives up when it cannot get it at once, and an image a container still
runs from (a run with no lock, an evaluation) is left alone.
"""
from __future__ import annotations

import fcntl
import hashlib
import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Literal

import docker.errors

CacheLevel = Literal["auto", "instance", "base", "none"]  # --cache-level; auto is resolved by the session

LEVELS = ("auto", "none", "base", "instance")
AUTO_KEEP_MAX = 25
PULLED_BASE_LABEL = "clawswe.pulled-base"  # on an instance image: the FROM images its build had to pull
SOURCE_LABEL = "clawswe.source-image"  # on a prepared image: the instance image it was made from


def resolve(level: str, items: int) -> CacheLevel:
    if level != "auto":
        return level  # type: ignore[return-value]
    return "instance" if items <= AUTO_KEEP_MAX else "base"


def _lock_dir() -> Path:
    # one folder for every user of this Docker host's images; sticky and world-writable like /tmp itself
    path = Path(tempfile.gettempdir(), "clawswe-image-locks")
    if not path.is_dir():
        path.mkdir(exist_ok=True)
        try:
            os.chmod(path, 0o1777)
        except OSError:
            pass
    return path


def lock_path(image: str) -> Path:
    return _lock_dir() / (hashlib.sha256(image.encode()).hexdigest()[:24] + ".lock")


class ImageLease:
    """A shared lock on an instance image (and the prepared images made from it) while an item uses it."""

    def __init__(self):
        self.image: str | None = None
        self._fd: int | None = None

    def acquire(self, image: str) -> None:
        self.release()
        self._fd = os.open(lock_path(image), os.O_RDWR | os.O_CREAT, 0o666)
        fcntl.flock(self._fd, fcntl.LOCK_SH)  # waits while a remover holds it: then the image is made again
        self.image = image

    def release(self) -> None:
        if self._fd is not None:
            os.close(self._fd)  # closing drops the lock
            self._fd = None

    def try_exclusive(self) -> bool:
        """Upgrade to the only holder, or False at once when another item or run uses the image."""
        if self._fd is None:
            return False
        try:
            fcntl.flock(self._fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return True
        except BlockingIOError:
            return False


def release_images(client, lease: ImageLease, level: str, progress=print) -> list[str]:
    """End an item's use of its images and remove what `level` says; returns the removed names. Never raises:
    a removal that fails leaves an image behind, it never fails the item."""
    image = lease.image
    removed: list[str] = []
    with releasing(lease, progress, f"could not remove the images of {image}"):
        if image is None or level in ("instance", "auto") or not lease.try_exclusive():
            return removed
        instance = _get(client, image)
        if instance is None:
            return removed
        pulled = [b for b in (instance.labels or {}).get(PULLED_BASE_LABEL, "").split(",") if b]
        removed += remove_instance(client, instance, image)
        if level == "none":
            for base in pulled:
                if not _built_upon(client, base):
                    removed += _remove(client, [base])
    if removed:
        progress(f"cache level {level}: removed {', '.join(removed)}")
    return removed


@contextmanager
def releasing(lease: ImageLease, progress, failed: str) -> Iterator[None]:
    """The end of an item's use of its images, around what removes them (--cache-level, --image-cache): an engine
    or lock error is said (`failed`, then why) and never raised, as an image left on disk never fails the item; the
    lease is released however it ends."""
    try:
        yield
    except (docker.errors.DockerException, OSError) as exc:
        progress(f"{failed} ({type(exc).__name__}: {exc}); the images stay on disk")
    finally:
        lease.release()


def remove_instance(client, instance, name: str) -> list[str]:
    """Remove the instance image `name` (`instance`, the engine's image object), the prepared images made from it
    and the registry's names of it (engine/images/registry.py leaves them on the engine that pushed), unless a
    container uses them; returns the names removed."""
    removed: list[str] = []
    for prepared in client.images.list(filters={"label": f"{SOURCE_LABEL}={name}"}):
        removed += _remove(client, prepared.tags or [prepared.id])
    return removed + _remove(client, registry_names(instance, name) + [name])


def registry_names(image, name: str) -> list[str]:
    """The names a registry gave the image `name` on this engine (`<registry>/<name>`: engine/images/registry.py
    leaves them on the engine that pushed)."""
    return [t for t in (image.tags or []) if t != name and t.endswith("/" + name)]


def _get(client, name: str):
    try:
        return client.images.get(name)
    except docker.errors.ImageNotFound:
        return None


def _in_use(client, image) -> bool:
    return bool(client.containers.list(all=True, filters={"ancestor": image.id}))


def _remove(client, names: list[str]) -> list[str]:
    done = []
    for name in names:
        image = _get(client, name)
        if image is None or _in_use(client, image):
            continue
        try:
            client.images.remove(name)  # a tag: untagged, and its layers go once no other name holds them
            done.append(name)
        except docker.errors.APIError:
            pass  # in use after all (a container created meanwhile): it stays
    return done


def _built_upon(client, name: str) -> bool:
    """Whether another image is built on `name` (its layers start with name's) or a container runs from it."""
    base = _get(client, name)
    if base is None:
        return True  # gone already: nothing to remove
    layers = base.attrs.get("RootFS", {}).get("Layers") or []
    for other in client.images.list(all=False):
        if other.id != base.id and (other.attrs.get("RootFS", {}).get("Layers") or [])[:len(layers)] == layers:
            return True
    return _in_use(client, base)


def missing_bases(client, dockerfile: Path) -> list[str]:
    """The FROM images of a Dockerfile that are not on this host (the build will pull them)."""
    found = []
    stages = set()
    for line in dockerfile.read_text(errors="replace").splitlines():
        words = line.split()
        if len(words) >= 2 and words[0].upper() == "FROM":
            ref = next((w for w in words[1:] if not w.startswith("--")), "")
            if ref and ref.lower() != "scratch" and ref not in stages and "$" not in ref and _get(client, ref) is None:
                found.append(ref)
            if len(words) >= 4 and words[-2].upper() == "AS":
                stages.add(words[-1])
    return found


# -- disk use of a run --------------------------------------------------------------------------------------

def disk_use(client, run_dir: Path, images: list[str], level: str) -> dict:
    """What the run occupies: its folder, and the images it used that are still on this host (an instance
    image counted whole, a prepared image by what it adds to its instance image)."""
    run_bytes = sum(p.stat().st_size for p in Path(run_dir).rglob("*") if p.is_file() and not p.is_symlink())
    kept, image_bytes = [], 0
    for name in sorted(set(images)):
        try:
            instance = _get(client, name)
            if instance is not None:
                kept.append(name)
                image_bytes += instance.attrs.get("Size") or 0
            for prepared in client.images.list(filters={"label": f"{SOURCE_LABEL}={name}"}):
                kept.extend(prepared.tags or [prepared.id])
                base = instance.attrs.get("Size") if instance is not None else 0
                image_bytes += max(0, (prepared.attrs.get("Size") or 0) - (base or 0))
        except docker.errors.DockerException:
            continue
    return {"cache_level": level, "run_dir_bytes": run_bytes, "images_kept": len(kept),
            "image_bytes_kept": image_bytes}


def disk_line(disk: dict) -> str:
    return (f"disk: run folder {_size(disk['run_dir_bytes'])}; {disk['images_kept']} image(s) of this run kept, "
            f"{_size(disk['image_bytes_kept'])} (cache level {disk['cache_level']})")


def _size(n: int) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} GiB"
