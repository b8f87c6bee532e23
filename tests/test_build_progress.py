"""Issue 32: every build a run starts shows its progress, one line per step (a first WildClawBench run printed
nothing for the ~11 minutes its task and grader images built, while the instance images printed their steps)."""
from __future__ import annotations

import threading
import uuid

import docker.errors
import pytest

from pytest_clawswe.engine.images.build import BuildProgress, _build_lock

NOISY = b"FROM debian:bookworm-slim\nRUN for i in $(seq 40); do echo noisy line $i; done\nLABEL clawswe.test=progress\n"


class Clock:
    def __init__(self):
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_a_line_per_step_and_the_time_of_a_long_one():
    lines, clock = [], Clock()
    steps = BuildProgress("img:1", lines.append, every_s=30, clock=clock)
    steps.line("Step 1/2 : FROM debian:bookworm-slim")
    steps.line(" ---> 1234")
    steps.line("Step 2/2 : RUN apt-get install -y chromium")
    for second in range(1, 100):
        clock.now = second
        steps.line(f"Unpacking package {second} ...")
    clock.now = 140
    steps.tick()  # the build said nothing for a while: its ticker says the time
    assert lines == ["img:1: step 1/2: FROM debian:bookworm-slim",
                     "img:1: step 2/2: RUN apt-get install -y chromium",
                     "img:1: step 2/2 running for 30 s: Unpacking package 30 ...",
                     "img:1: step 2/2 running for 60 s: Unpacking package 60 ...",
                     "img:1: step 2/2 running for 90 s: Unpacking package 90 ...",
                     "img:1: step 2/2 running for 140 s: Unpacking package 99 ..."]


def test_a_process_waiting_for_another_ones_build_says_so(tmp_path, monkeypatch):
    monkeypatch.setenv("CLAWSWE_CACHE", str(tmp_path))
    lines: list[str] = []
    got = threading.Event()

    def second():
        with _build_lock("img:2", lines.append):
            got.set()

    with _build_lock("img:2", lines.append):
        waiting = threading.Thread(target=second)
        waiting.start()
        while not lines and waiting.is_alive():
            waiting.join(0.05)
        assert not got.is_set()
    waiting.join(30)
    assert got.is_set() and lines == ["img:2: another process is building it; waiting for its build"]


@pytest.fixture
def scratch_tag(docker_client):
    tag = f"clawswe-test/progress-{uuid.uuid4().hex[:8]}:1"
    yield tag
    try:
        docker_client.images.remove(tag, force=True)
    except docker.errors.ImageNotFound:
        pass


@pytest.mark.docker
def test_the_task_images_build_shows_its_steps(docker_client, scratch_tag):
    """The WildClawBench task and grader images are built through task_images._build: its steps reach the run's
    progress, the build's own output does not flood it."""
    from pytest_clawswe.wildclaw.task import images as task_images

    lines: list[str] = []
    task_images._build(docker_client, {"Dockerfile": NOISY}, scratch_tag, lines.append, {})
    steps = [line for line in lines if ": step " in line]
    # the three of the Dockerfile and the label the build adds
    assert [line.split(": step ")[1][:3] for line in steps] == ["1/4", "2/4", "3/4", "4/4"], lines
    assert not [line for line in lines if "noisy line" in line and ": step " not in line], lines
    assert lines[0].startswith(f"building {scratch_tag}") and lines[-1].startswith(f"built {scratch_tag}")


@pytest.mark.docker
def test_every_build_through_the_shared_builder_shows_steps_not_its_output(docker_client, scratch_tag):
    """Harness bundles and runtimes, the relay and the services sidecar build through images/build.py's _docker_build."""
    from pytest_clawswe.engine.images.build import _docker_build

    lines: list[str] = []
    _docker_build(docker_client, {"Dockerfile": NOISY}, scratch_tag, {}, {}, lines.append)
    assert [line for line in lines if ": step " in line] == [
        f"{scratch_tag}: step 1/3: FROM debian:bookworm-slim",
        f"{scratch_tag}: step 2/3: RUN for i in $(seq 40); do echo noisy line $i; done",
        f"{scratch_tag}: step 3/3: LABEL clawswe.test=progress"]
    assert not [line for line in lines if "noisy line" in line and ": step " not in line], lines
