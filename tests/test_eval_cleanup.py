"""The evaluation container goes through the engine the item runs on (issue 25 §4). swebench removes it with the
`docker` command line, which talks to DOCKER_HOST's engine, not to the client it was given: on another engine
(--docker-host) its container stayed until the run's sweep, and two command-line processes per item cost time."""
import uuid

import pytest
from run_containers import run_containers

from pytest_clawswe.labels import LABEL_RUN
from pytest_clawswe.swe.dataset import load_row

pytestmark = pytest.mark.docker


def test_the_evaluation_container_is_removed_on_the_engine_of_the_client(docker_client, python_demo, tmp_path,
                                                                         monkeypatch):
    from pytest_clawswe.swe.grading.scoring import join_removals, score

    run_id = f"t-evalrm-{uuid.uuid4().hex[:6]}"
    monkeypatch.setenv("DOCKER_HOST", "unix:///nonexistent/docker.sock")  # the command line's engine: elsewhere
    s = score(docker_client, load_row(python_demo), python_demo.row["patch"], run_id=run_id, model_label="t",
              eval_dir=tmp_path, labels={LABEL_RUN: run_id})
    join_removals()  # the removal runs beside the rest of the item
    left = run_containers(docker_client, run_id)
    for container in left:
        container.remove(force=True)
    assert s.resolved is True
    assert left == []


def test_the_container_made_ahead_is_the_one_the_evaluation_runs_in(docker_client, python_demo, tmp_path):
    from pytest_clawswe.swe.grading.scoring import EvalContainer, join_removals, score

    run_id = f"t-ahead-{uuid.uuid4().hex[:6]}"
    labels = {LABEL_RUN: run_id}
    row = load_row(python_demo)
    ahead = EvalContainer(docker_client, row, run_id, labels, "2g", after_s=0)
    ahead._thread.join()
    made = ahead.container
    assert made is not None and made.labels["clawswe.role"] == "eval"
    made.reload()
    assert made.status == "running" and made.attrs["HostConfig"]["Memory"] == 2 * 2**30
    s = score(docker_client, row, python_demo.row["patch"], run_id=run_id, model_label="t", eval_dir=tmp_path,
              labels=labels, ahead=ahead)
    assert s.resolved is True
    assert f"started: {made.id}" in (tmp_path / "run_instance.log").read_text()  # no second container
    join_removals()
    assert run_containers(docker_client, run_id) == []


def test_a_container_made_ahead_for_an_item_that_never_got_to_its_evaluation_is_removed(docker_client,
                                                                                         python_demo):
    from pytest_clawswe.swe.grading.scoring import EvalContainer

    run_id = f"t-ahead-{uuid.uuid4().hex[:6]}"
    ahead = EvalContainer(docker_client, load_row(python_demo), run_id, {LABEL_RUN: run_id}, after_s=0)
    ahead._thread.join()
    assert run_containers(docker_client, run_id) != []
    ahead.discard()
    assert run_containers(docker_client, run_id) == []


def test_an_agent_that_ends_at_once_costs_no_container_made_ahead(docker_client, python_demo):
    from pytest_clawswe.swe.grading.scoring import EvalContainer

    run_id = f"t-ahead-{uuid.uuid4().hex[:6]}"
    ahead = EvalContainer(docker_client, load_row(python_demo), run_id, {LABEL_RUN: run_id}, after_s=5)
    assert ahead.take() is None  # at once: the wait is cancelled, nothing was made
    assert run_containers(docker_client, run_id) == []


def test_a_container_made_ahead_under_another_name_is_still_the_one_used_and_removed(docker_client, python_demo,
                                                                                     tmp_path):
    """swebench names its container again when the name is taken (a ghost still being removed: a retried item);
    the container made ahead is then under that other name, and must neither be left running nor doubled."""
    from pytest_clawswe.swe.grading.scoring import EvalContainer, join_removals, score

    run_id = f"t-ahead-{uuid.uuid4().hex[:6]}"
    labels = {LABEL_RUN: run_id}
    row = load_row(python_demo)
    ahead = EvalContainer(docker_client, row, run_id, labels, after_s=0)
    ahead._thread.join()
    made = ahead.container
    made.rename(f"{made.name}.1795597449")  # as create_container's retry with a unique name does
    made.reload()
    s = score(docker_client, row, python_demo.row["patch"], run_id=run_id, model_label="t", eval_dir=tmp_path,
              labels=labels, ahead=ahead)
    join_removals()
    left = run_containers(docker_client, run_id)
    for container in left:
        container.remove(force=True)
    assert s.resolved is True and left == []
    assert f"started: {made.id}" in (tmp_path / "run_instance.log").read_text()
