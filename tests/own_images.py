"""Images of a test's own for the image-cache tests (--cache-level, --image-cache): copies of the Python demo's image
made with a label (no bytes copied; an image id and size of their own), removed with the prepared images made from
them, so the shared demo images are never touched."""
import io

import docker.errors

from pytest_clawswe.engine.images.cache_level import SOURCE_LABEL
from pytest_clawswe.swe.dataset import load_local_rows
from pytest_clawswe.swe.paths import DEMO_TASK_REPO


def build(client, dockerfile: str, tag: str) -> None:
    client.images.build(fileobj=io.BytesIO(dockerfile.encode()), tag=tag, rm=True, forcerm=True, pull=False)


def labelled_copy(client, image: str, tag: str) -> str:
    """`tag`: `image` under a label of its own (a new image id, the same layers)."""
    build(client, f"FROM {image}\nLABEL clawswe.test-copy={tag}\n", tag)
    return tag


def exists(client, name: str) -> bool:
    try:
        client.images.get(name)
        return True
    except docker.errors.ImageNotFound:
        return False


def drop(client, *names: str) -> None:
    for name in names:
        try:
            client.images.remove(name, force=True)
        except docker.errors.APIError:
            pass


def drop_with_prepared(client, tag: str) -> None:
    """Remove `tag` and the prepared images a run made from it."""
    for prepared in client.images.list(filters={"label": f"{SOURCE_LABEL}={tag}"}):
        drop(client, prepared.id)
    drop(client, tag)


def demo_row(demo) -> dict:
    """The demo instance's dataset row (a test's dataset gives it another image)."""
    return next(r for r in load_local_rows(DEMO_TASK_REPO) if r["instance_id"] == demo.instance_id)
