"""The evaluation container goes through the engine the item runs on (issue 25 §4). swebench removes it with the
`docker` command line, which talks to DOCKER_HOST's engine, not to the client it was given: on another engine
(--docker-host) its container stayed until the run's sweep, and two command-line processes per item cost time."""
import uuid

import pytest

from pytest_clawswe.instances import load_row
from pytest_clawswe.labels import LABEL_RUN

pytestmark = pytest.mark.docker


def test_the_evaluation_container_is_removed_on_the_engine_of_the_client(docker_client, python_demo, tmp_path,
                                                                         monkeypatch):
    from pytest_clawswe.scoring import score

    run_id = f"t-evalrm-{uuid.uuid4().hex[:6]}"
    monkeypatch.setenv("DOCKER_HOST", "unix:///nonexistent/docker.sock")  # the command line's engine: elsewhere
    s = score(docker_client, load_row(python_demo), python_demo.row["patch"], run_id=run_id, model_label="t",
              eval_dir=tmp_path, labels={LABEL_RUN: run_id})
    left = docker_client.containers.list(all=True, filters={"label": f"{LABEL_RUN}={run_id}"})
    for container in left:
        container.remove(force=True)
    assert s.resolved is True
    assert left == []
