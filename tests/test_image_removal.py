"""The end of an item's use of its images, shared by --cache-level and --image-cache (engine/images/cache_level.py's
`releasing`): an engine that fails mid-removal is said in one line and never fails the item, and the item's lease is
released either way. The engine here is a stand-in that refuses every call (pure logic); removal on a real engine is
tests/test_cache.py's and tests/test_image_cache.py's."""
import uuid

import docker.errors

from pytest_clawswe.engine.images.cache import enforce
from pytest_clawswe.engine.images.cache_level import ImageLease, release_images


class RefusingEngine:
    """A Docker client whose image calls fail as an engine that went away mid-call does."""

    _clawswe_engine_id = "refusing-engine"  # engine/images/cache.py's index key, without asking the engine

    class images:  # noqa: N801  (docker-py's attribute name)
        @staticmethod
        def get(name):
            raise docker.errors.APIError("the engine went away")

        @staticmethod
        def list(**filters):
            raise docker.errors.APIError("the engine went away")


def _leased() -> ImageLease:
    lease = ImageLease()
    lease.acquire(f"clawswe-test-removal-{uuid.uuid4().hex[:8]}:latest")
    return lease


def _free(image: str) -> bool:
    """Whether nobody holds `image`'s lock any more (a fresh lease gets it exclusively)."""
    other = ImageLease()
    other.acquire(image)
    try:
        return other.try_exclusive()
    finally:
        other.release()


def test_a_cache_level_removal_the_engine_fails_is_said_and_releases_the_lease():
    lease, said = _leased(), []
    assert release_images(RefusingEngine(), lease, "base", progress=said.append) == []
    assert len(said) == 1 and said[0].startswith(f"could not remove the images of {lease.image} (APIError")
    assert said[0].endswith("the images stay on disk")
    assert _free(lease.image)


def test_an_image_cache_budget_the_engine_fails_is_said_and_releases_the_lease(tmp_path, monkeypatch):
    monkeypatch.setenv("CLAWSWE_IMAGE_INDEX", str(tmp_path))
    lease, said = _leased(), []
    report = enforce(RefusingEngine(), lease, 1, progress=said.append)
    assert report == {"cache_bytes": None, "removed": [], "removed_bytes": 0}
    assert len(said) == 1 and said[0].startswith("image cache: could not enforce the budget (APIError")
    assert said[0].endswith("the images stay on disk")
    assert _free(lease.image)
