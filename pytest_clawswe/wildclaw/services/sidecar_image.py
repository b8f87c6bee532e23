"""The sidecar image: built once per version of the service code, from debian:bookworm-slim."""
from __future__ import annotations

import hashlib
from collections.abc import Callable
from pathlib import Path

from pytest_clawswe.engine.images import build
from pytest_clawswe.wildclaw.services import MOCK_DIR

IMAGE_REPO = "clawswe-wildclaw-services"
DOCKERFILE = Path(__file__).parent / "sidecar.Dockerfile"
# Pinned: the same sidecar on every machine. aiohttp serves, PyYAML reads fixtures, rank_bm25 ranks search.
PIP_PACKAGES = ("aiohttp==3.11.18", "PyYAML==6.0.2", "rank_bm25==0.2.2", "numpy==2.2.6")
IMAGE_LABEL = "clawswe.wildclaw-services"
KEEP_VERSIONS = 3  # other code versions' images kept besides this one's


def _sources() -> dict[str, Path]:
    files = {"Dockerfile": DOCKERFILE}
    for path in sorted(MOCK_DIR.glob("*.py")):
        files[f"mock/{path.name}"] = path
    return files


def image_tag() -> str:
    digest = hashlib.sha256(" ".join(PIP_PACKAGES).encode())
    for name, path in _sources().items():
        digest.update(name.encode() + b"\0" + path.read_bytes() + b"\0")
    return f"{IMAGE_REPO}:{digest.hexdigest()[:12]}"


def ensure_sidecar_image(client, progress: Callable[[str], None] = lambda line: None) -> str:
    """The sidecar image for this code, built if missing (mirrors and CA as the harness bundles get them)."""
    tag = image_tag()
    if build._image_exists(client, tag):
        return tag
    with build._build_lock(tag, progress):
        if build._image_exists(client, tag):
            return tag
        progress(f"building {tag} (once; later runs reuse it)")
        files = {**_sources(), "ca.pem": build._host_ca_bundle()}
        args = {"PIP_PACKAGES": " ".join(PIP_PACKAGES), **build._mirror_args()}
        build._docker_build(client, files, tag, args, {IMAGE_LABEL: tag.split(":")[1]}, progress)
        drop_old_versions(client, build._image_id(client, tag))
    return tag


def drop_old_versions(client, current: str | None, label: str = IMAGE_LABEL, keep: int = KEEP_VERSIONS) -> None:
    """Remove the images of other code versions but the `keep` newest, and any a container still uses: another
    checkout's run may be about to start a sidecar from its version (removing every other version made that run's
    next task fail on a missing image). The versions share every layer but the service code's."""
    others = [image for image in client.images.list(filters={"label": label}) if image.id != current]
    others.sort(key=lambda image: _created(image.attrs.get("Created") or ""), reverse=True)
    for old in others[keep:]:
        build._remove_quietly(client, old.id)


def _created(stamp: str) -> tuple[str, str]:
    """An engine's RFC 3339 time as a sort key (its fraction of a second has no fixed length)."""
    return stamp[:19], stamp[20:].rstrip("Z").split("+")[0].ljust(9, "0")
