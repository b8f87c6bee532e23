"""The next item's container is made while this item ends (run/item/made_ahead.py, issue 25 §4): the item then starts its
agent without waiting for a container start or a purge check, and nothing is made for an item that never runs."""
import json
import os
import shutil
import subprocess
import sys
import threading
import time

import pytest
from run_containers import left_containers

from pytest_clawswe.labels import LABEL_RUN
from pytest_clawswe.run.item.made_ahead import Ahead

# -- the hand-over (no Docker) ------------------------------------------------------------------------------


def _ahead(made, item_id="b"):
    discarded = []
    return Ahead(item_id, lambda: made() if callable(made) else made, discarded.append), discarded


def test_what_was_made_for_the_item_with_the_same_key_is_taken():
    ahead, discarded = _ahead(("key", "sandbox"))
    assert ahead.take("b", "key") == "sandbox" and discarded == []
    assert ahead.seconds >= 0


def test_what_was_made_with_another_key_or_for_another_item_is_discarded():
    ahead, discarded = _ahead(("key", "sandbox"))
    assert ahead.take("b", "other key") is None and discarded == ["sandbox"]
    ahead, discarded = _ahead(("key", "sandbox"))
    assert ahead.take("c", "key") is None and discarded == ["sandbox"]


def test_a_make_that_fails_or_makes_nothing_leaves_the_item_to_make_its_own():
    def boom():
        raise RuntimeError("the engine refused")

    ahead, discarded = _ahead(boom)
    assert ahead.take("b", "key") is None and discarded == []
    ahead, discarded = _ahead(None)
    assert ahead.take("b", "key") is None and discarded == []


def test_take_waits_for_the_make_and_discard_undoes_a_value_nobody_took():
    gate = threading.Event()

    def slow():
        gate.wait(5)
        return "key", "sandbox"

    ahead, discarded = _ahead(slow)
    threading.Timer(0.2, gate.set).start()
    t = time.monotonic()
    assert ahead.take("b", "key") == "sandbox" and time.monotonic() - t >= 0.15
    ahead, discarded = _ahead(("key", "sandbox"))
    ahead.discard()
    ahead.discard()
    assert discarded == ["sandbox"]


def test_it_is_made_after_its_delay_or_when_hurried_and_never_once_discarded_before():
    made = []

    def make():
        made.append(time.monotonic())
        return "key", "sandbox"

    t = time.monotonic()
    ahead = Ahead("b", make, lambda v: None, after_s=30)
    ahead.hurry()  # the agent ended sooner
    assert ahead.take("b", "key") == "sandbox" and made[0] - t < 5
    ahead = Ahead("b", make, lambda v: None, after_s=0.2)
    ahead._thread.join(5)
    assert len(made) == 2  # after its delay, unasked
    ahead.discard()
    ahead = Ahead("b", make, lambda v: None, after_s=30)
    ahead.discard()  # the run stopped while the agent worked: nothing is made
    assert len(made) == 2


# -- a real run ------------------------------------------------------------------------------------------


def _run(tmp_path, ids, *args, env=None):
    run_dir = tmp_path / "run"
    (tmp_path / "cwd").mkdir(parents=True, exist_ok=True)
    cmd = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--dataset", "demo", "--harness", "oracle",
           "--run-dir", str(run_dir), "--instance-ids", ",".join(ids), "-n", "1", *args]
    proc = subprocess.run(cmd, cwd=tmp_path / "cwd", capture_output=True, text=True, timeout=900,
                          env={**os.environ, **(env or {})})
    return proc, run_dir


def _timings(run_dir, iid) -> dict:
    return json.loads((run_dir / "instances" / iid / "metadata.json").read_text())["timings"]


def _agent_containers_created(docker_client, run_dir, since) -> list[str]:
    run_id = json.loads((run_dir / "run.json").read_text())["run_id"]
    events = docker_client.events(since=int(since) - 1, until=int(time.time()) + 1, decode=True,
                                  filters={"type": "container", "event": "create",
                                           "label": [f"{LABEL_RUN}={run_id}", "clawswe.role=agent"]})
    return [e["Actor"]["Attributes"].get("clawswe.instance") for e in events]


def _three(demo_instances) -> list[str]:
    """Three quick instances, in the order the run takes them (the dataset's)."""
    quick = {"Python", "Go", "Ruby"}
    return [i.instance_id for i in demo_instances if i.language in quick]


@pytest.fixture(scope="module")
def first_run(demo_instances, demo_images, tmp_path_factory):
    """One run of the three, shared: after it their prepared images exist (only those are started ahead), and it is
    the run the resume test takes up (each test that resumes it, a copy)."""
    proc, run_dir = _run(tmp_path_factory.mktemp("first"), _three(demo_instances))
    assert proc.returncode == 0, proc.stdout[-3000:]
    return run_dir


@pytest.mark.docker
def test_each_later_item_takes_the_container_made_while_the_one_before_ended(docker_client, demo_instances,
                                                                              first_run, tmp_path):
    ids = _three(demo_instances)
    since = time.time()
    proc, run_dir = _run(tmp_path, ids)
    assert proc.returncode == 0, proc.stdout[-3000:]
    first, *later = [_timings(run_dir, iid) for iid in ids]
    assert "made_ahead" not in first and first["container_start"] > 0
    for t in later:
        assert t["made_ahead"] > 0, t  # the container start and purge check, off the critical path
        assert t["purge_check"] == 0, t  # proven in that container, ahead
        assert t["container_start"] <= t["made_ahead"] + 0.05, t  # at most a wait for it: never a second start
    # one agent container per item, none extra; nothing of the run is left
    assert sorted(_agent_containers_created(docker_client, run_dir, since)) == sorted(ids)
    assert left_containers(docker_client, run_dir) == []


@pytest.mark.docker
def test_nothing_is_made_ahead_for_an_item_resume_keeps_or_when_turned_off(docker_client, demo_instances,
                                                                           first_run, tmp_path):
    first, kept, last = _three(demo_instances)
    run_dir = shutil.copytree(first_run, tmp_path / "run")  # where _run below puts its run
    for iid in (first, last):  # the run is resumed with only the middle item final
        shutil.rmtree(run_dir / "instances" / iid)
    since = time.time()
    proc, run_dir = _run(tmp_path, [first, kept, last], "--resume", str(run_dir))
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert sorted(_agent_containers_created(docker_client, run_dir, since)) == sorted([first, last])
    assert "made_ahead" not in _timings(run_dir, last)  # the item before it did not run: nothing made it

    proc, run_dir = _run(tmp_path / "off", [first, kept], env={"CLAWSWE_AHEAD": "0"})
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert "made_ahead" not in _timings(run_dir, kept)
