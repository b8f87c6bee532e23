import os

import pytest

from pytest_clawswe.swe.paths import DEMO_TASK_REPO

pytest_plugins = ["pytester"]


def pytest_addoption(parser):
    parser.addoption("--exclusive", choices=("include", "exclude", "only"), default="include",
                     help="tests marked exclusive (they restart the Docker engine or start a second one, so they "
                          "must run alone): include them (default), leave them out, or run only them. "
                          "scripts/test.sh runs the rest two at a time, then these alone.")


def pytest_configure(config):
    # scripts/test.sh runs the tests under pytest-xdist: its worker variables must not reach the pytest runs the
    # tests start themselves, or those would take themselves for workers (no -n 3 of benchmark mode, no
    # controller's Ctrl-C handling)
    if hasattr(config, "workerinput"):
        for name in ("PYTEST_XDIST_WORKER", "PYTEST_XDIST_WORKER_COUNT", "PYTEST_XDIST_TESTRUNUID"):
            os.environ.pop(name, None)


def is_exclusive(item) -> bool:
    """Marked so, or it uses the second Docker engine (tests/second_engine.py) or the test cluster
    (tests/kube_cluster.py: one per machine, started by the first test that needs it)."""
    fixtures = getattr(item, "fixturenames", ())
    return item.get_closest_marker("exclusive") is not None or "second_engine" in fixtures \
        or "kube_cluster" in fixtures


def pytest_collection_modifyitems(config, items):
    phase = config.getoption("--exclusive")
    if phase == "include":
        return
    keep, dropped = [], []
    for item in items:
        (keep if is_exclusive(item) == (phase == "only") else dropped).append(item)
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = keep


@pytest.fixture(scope="session")
def docker_client():
    from pytest_clawswe.engine.docker.client import docker_client
    from pytest_clawswe.errors import InfraError

    try:
        return docker_client()
    except InfraError as exc:
        pytest.fail(f"{exc} (to run only the fast tests: -m 'not docker and not harness')")


@pytest.fixture(scope="session")
def demo_instances():
    from pytest_clawswe.swe.dataset import load_instances

    return load_instances("demo")


@pytest.fixture(scope="session")
def demo_images(docker_client, demo_instances):
    """Every demo image, built once (reused when up to date)."""
    from pytest_clawswe.swe.instance.images import build_images, load_instances

    return build_images(load_instances(DEMO_TASK_REPO), docker_client, progress=lambda line: None)


@pytest.fixture
def python_demo(demo_instances, demo_images):
    """The demo instance of the Python group (the quickest to grade)."""
    return next(i for i in demo_instances if i.language == "Python")

