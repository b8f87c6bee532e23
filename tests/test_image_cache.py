"""--image-cache SIZE (issue 25 §2), on images of the test's own (labels on the Python demo image: no bytes
copied, each its own image id and size) and an index of the test's own: shared images are never touched."""
import json
import uuid

import pytest

from own_images import demo_row, drop_with_prepared, exists, labelled_copy
from pytest_clawswe.engine.images.cache_level import SOURCE_LABEL, ImageLease, lock_path
from pytest_clawswe.engine.images.cache import enforce, sizes

pytestmark = pytest.mark.docker
REPO = "clawswe-test-imgcache"


@pytest.fixture
def copies(docker_client, python_demo, monkeypatch, tmp_path):
    monkeypatch.setenv("CLAWSWE_IMAGE_INDEX", str(tmp_path / "index"))
    made = []

    def make(n):
        for _ in range(n):
            made.append(labelled_copy(docker_client, python_demo.image, f"{REPO}/py:{uuid.uuid4().hex[:8]}"))
        return made[-n:]

    yield make
    for tag in made:
        drop_with_prepared(docker_client, tag)


def dataset(tmp_path, python_demo, images):
    row = demo_row(python_demo)
    path = tmp_path / "copies.jsonl"
    path.write_text("".join(json.dumps({**row, "instance_id": f"{row['instance_id']}-{n}", "image": image}) + "\n"
                            for n, image in enumerate(images)))
    return path


def test_a_run_under_a_budget_smaller_than_its_images_stays_under_it(pytester, docker_client, python_demo, copies,
                                                                     tmp_path):
    images = copies(4)
    one = docker_client.images.get(images[0]).attrs["Size"]
    budget = int(2.5 * one)  # room for two images with their prepared images, not three
    data = dataset(tmp_path, python_demo, images)
    run_dir = tmp_path / "run"
    result = pytester.runpytest_subprocess(
        "--harness=oracle", "--dataset", str(data), "--run-dir", str(run_dir), "--image-cache", str(budget),
        "-n", "0", "-p", "no:cacheprovider", timeout=900)
    result.assert_outcomes(passed=4)
    cache = json.loads((run_dir / "summary.json").read_text())["image_cache"]
    assert cache["budget_bytes"] == budget
    assert cache["instance_hits"] == 4 and cache["prepared_misses"] == 4 and cache["prepared_hits"] == 0
    assert cache["removed_images"] == 2 and cache["removed_bytes"] > 2 * one
    assert one < cache["max_bytes_after_an_item"] <= budget and cache["bytes_now"] <= budget
    # least recently used out first: the first two items' images (and their prepared images) are gone
    assert [exists(docker_client, i) for i in images] == [False, False, True, True]
    assert docker_client.images.list(filters={"label": f"{SOURCE_LABEL}={images[0]}"}) == []
    assert exists(docker_client, python_demo.image)  # what the copies were built on is never indexed

    # a later run (a grid's next column) reuses what stayed: its prepared images are hits
    again = pytester.runpytest_subprocess(
        "--harness=oracle", "--dataset", str(data), "--run-dir", str(tmp_path / "again"), "--image-cache",
        str(budget), "-n", "0", "-p", "no:cacheprovider", "--instance-ids",
        f"{python_demo.instance_id}-2,{python_demo.instance_id}-3", timeout=900)
    again.assert_outcomes(passed=2)
    cache = json.loads((tmp_path / "again" / "summary.json").read_text())["image_cache"]
    assert cache["prepared_hits"] == 2 and cache["removed_images"] == 0


def test_an_image_an_item_uses_is_not_removed_even_over_budget(docker_client, copies):
    first, second = copies(2)
    other_item = ImageLease()
    other_item.acquire(first)  # another worker's item on the first image
    try:
        mine = ImageLease()
        mine.acquire(first)
        enforce(docker_client, mine, 1, progress=lambda line: None)  # index: first
        mine.acquire(second)
        report = enforce(docker_client, mine, 1, progress=lambda line: None)
        # over budget: the second (no one holds it now) goes, the first stays while the other item holds it
        assert report["removed"] == [second] and exists(docker_client, first)
    finally:
        other_item.release()
    mine = ImageLease()
    report = enforce(docker_client, mine, 1, progress=lambda line: None)
    assert report["removed"] == [first] and report["cache_bytes"] == 0
    assert lock_path(first).exists()


def test_sizes_count_what_a_prepared_image_adds(docker_client, copies):
    (tag,) = copies(1)
    base = docker_client.images.get(tag).attrs["Size"]
    assert sizes(docker_client, [tag, "clawswe-test-imgcache/absent:x"]) == {tag: base}


def test_image_cache_and_cache_level_together_are_one_sentence(pytester, tmp_path):
    result = pytester.runpytest_subprocess("--harness=oracle", "--dataset", "demo", "--run-dir", str(tmp_path / "r"),
                                           "--image-cache", "10g", "--cache-level", "base")
    assert "--image-cache and --cache-level both say which images stay" in result.stderr.str()
    assert not (tmp_path / "r").exists()
