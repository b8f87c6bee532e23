"""--cache-level (issue 17 §3), on images of the test's own: the shared demo images are never touched."""
import json
import uuid

import pytest

from own_images import build, demo_row, drop, drop_with_prepared, exists, labelled_copy
from pytest_clawswe.engine.images.cache_level import PULLED_BASE_LABEL, SOURCE_LABEL, ImageLease, release_images, resolve

pytestmark = pytest.mark.docker
REPO = "clawswe-test-cache"


@pytest.fixture
def own_copy(docker_client, python_demo):
    """The Python demo instance on an image of this test's own (a label on the demo image: no bytes copied, a
    different image id, so its prepared image is also its own)."""
    tag = f"{REPO}/{python_demo.instance_id.lower().replace('__', '_')}:{uuid.uuid4().hex[:8]}"
    yield labelled_copy(docker_client, python_demo.image, tag)
    drop_with_prepared(docker_client, tag)


def dataset_with(tmp_path, python_demo, image):
    row = demo_row(python_demo)
    path = tmp_path / "one.jsonl"
    path.write_text(json.dumps({**row, "image": image}) + "\n")
    return path


@pytest.mark.parametrize("level", ["base", "instance"])
def test_a_run_leaves_the_images_its_cache_level_says(pytester, docker_client, python_demo, own_copy, tmp_path,
                                                       level):
    run_dir = tmp_path / "run"
    result = pytester.runpytest_subprocess(
        "--harness=oracle", "--dataset", str(dataset_with(tmp_path, python_demo, own_copy)),
        "--run-dir", str(run_dir), "--cache-level", level, "-p", "no:cacheprovider", timeout=900)
    result.assert_outcomes(passed=1)
    prepared = docker_client.images.list(filters={"label": f"{SOURCE_LABEL}={own_copy}"})
    disk = json.loads((run_dir / "summary.json").read_text())["disk"]
    if level == "base":
        assert not exists(docker_client, own_copy) and prepared == []
        assert disk["images_kept"] == 0 and disk["image_bytes_kept"] == 0
    else:
        assert exists(docker_client, own_copy) and len(prepared) == 1
        assert disk["images_kept"] == 2 and disk["image_bytes_kept"] > 100 * 2**20
    assert disk["cache_level"] == level and disk["run_dir_bytes"] > 0
    assert exists(docker_client, python_demo.image)  # what the copy was built on stays
    assert f"(cache level {level})" in result.stdout.str()


def test_an_image_in_use_by_another_item_is_not_removed(docker_client, python_demo):
    tag = labelled_copy(docker_client, python_demo.image, f"{REPO}/lease:{uuid.uuid4().hex[:8]}")
    try:
        mine, other = ImageLease(), ImageLease()
        mine.acquire(tag)
        other.acquire(tag)  # a second worker (or run) on the same image
        assert release_images(docker_client, mine, "base", progress=lambda m: None) == []
        assert exists(docker_client, tag)
        assert release_images(docker_client, other, "base", progress=lambda m: None) == [tag]  # the last one out
        assert not exists(docker_client, tag)
    finally:
        drop(docker_client, tag)


def test_level_none_also_removes_a_base_the_build_pulled_once_nothing_else_uses_it(docker_client, python_demo):
    nonce = uuid.uuid4().hex[:8]
    base, instance, sibling = f"{REPO}/base:{nonce}", f"{REPO}/inst:{nonce}", f"{REPO}/sibling:{nonce}"
    # a base with a layer of its own (no other image on this host is built on it), and an instance image
    # whose build recorded that it had to pull the base
    build(docker_client, f"FROM {python_demo.image}\nRUN echo {nonce} > /base-{nonce}\n", base)
    build(docker_client, f"FROM {base}\nLABEL {PULLED_BASE_LABEL}={base}\n", instance)
    build(docker_client, f"FROM {base}\nRUN echo sibling > /sibling\n", sibling)
    try:
        lease = ImageLease()
        lease.acquire(instance)
        assert release_images(docker_client, lease, "none", progress=lambda m: None) == [instance]
        assert exists(docker_client, base)  # the sibling is built on it
        drop(docker_client, sibling)
        build(docker_client, f"FROM {base}\nLABEL {PULLED_BASE_LABEL}={base}\n", instance)
        lease.acquire(instance)
        assert release_images(docker_client, lease, "none", progress=lambda m: None) == [instance, base]
        assert not exists(docker_client, base) and exists(docker_client, python_demo.image)
    finally:
        drop(docker_client, instance, sibling, base)


def test_auto_keeps_a_small_run_and_bounds_a_full_one():
    assert resolve("auto", 8) == "instance" and resolve("auto", 350) == "base"
    assert resolve("none", 1) == "none"


def test_two_workers_on_one_image_the_last_one_out_removes_it(pytester, docker_client, python_demo, own_copy,
                                                              tmp_path):
    """Two items of one run on the same image, on two xdist workers, under `base`: neither removes the image
    while the other uses it, both resolve, and nothing of it is left at the end."""
    row = demo_row(python_demo)
    dataset = tmp_path / "twins.jsonl"
    dataset.write_text("".join(json.dumps({**row, "instance_id": row["instance_id"] + suffix, "image": own_copy})
                               + "\n" for suffix in ("", "-twin")))
    run_dir = tmp_path / "run"
    result = pytester.runpytest_subprocess(
        "--harness=oracle", "--dataset", str(dataset), "--run-dir", str(run_dir), "--cache-level", "base", "-n", "2",
        "-p", "no:cacheprovider", timeout=900)
    result.assert_outcomes(passed=2)
    assert not exists(docker_client, own_copy)
    assert docker_client.images.list(filters={"label": f"{SOURCE_LABEL}={own_copy}"}) == []


def test_a_container_of_the_item_still_there_at_its_end_does_not_keep_its_image(pytester, docker_client, python_demo,
                                                                                 own_copy, tmp_path):
    """CI once kept an image under `base`: the evaluation's container was still on the engine when the item ended
    (its removal, beside the rest of the item, had not finished on a loaded engine), and an image a container runs
    from is never removed. The fault made certain: the evaluation's removal does nothing. The item's own containers
    go at its end, then its images."""
    pytester.makeconftest("from pytest_clawswe.swe.grading import scoring\n"
                          "scoring._remove_container = lambda client, container, logger: None  # a removal lost\n")
    result = pytester.runpytest_subprocess(
        "--harness=oracle", "--dataset", str(dataset_with(tmp_path, python_demo, own_copy)),
        "--run-dir", str(tmp_path / "run"), "--cache-level", "base", "-p", "no:cacheprovider", timeout=900)
    result.assert_outcomes(passed=1)
    left = [c for c in docker_client.containers.list(all=True, filters={"label": "clawswe.role=eval"})
            if (c.image.tags or [""])[0] == own_copy or c.attrs.get("Config", {}).get("Image") == own_copy]
    assert left == []
    assert not exists(docker_client, own_copy)
    assert docker_client.images.list(filters={"label": f"{SOURCE_LABEL}={own_copy}"}) == []
