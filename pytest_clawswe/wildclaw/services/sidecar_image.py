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
        current = build._image_id(client, tag)
        for old in client.images.list(filters={"label": IMAGE_LABEL}):
            if old.id != current:
                build._remove_quietly(client, old.id)  # an older code version, unless a sidecar still runs it
    return tag
