import os

import pytest

from pytest_clawswe.swe.paths import DEMO_TASK_REPO

pytest_plugins = ["pytester"]
PHASES = ("all", "shared", "cluster", "alone")  # scripts/test.sh's, and all of them (test_phase below)


def pytest_addoption(parser):
    parser.addoption("--test-phase", choices=PHASES, default="all",
                     help="which of scripts/test.sh's phases to run: shared (two at a time on the one Docker "
                          "engine), cluster (the tests on the test cluster, one at a time, beside the shared "
                          "phase), alone (they restart the Docker engine or start a second one: nothing else "
                          "may run then), or all of them (default)")
    parser.addoption("--full-matrix", action="store_true",
                     help="the tests marked matrix run every harness on every item, instead of the representative "
                          "slice CI runs (tests/matrix.py); the full matrix: scripts/test.sh --full-matrix -m matrix")


def pytest_configure(config):
    config.addinivalue_line("markers", "matrix: a harness matrix run as a representative slice unless --full-matrix "
                                       "(tests/matrix.py)")
    # scripts/test.sh runs the tests under pytest-xdist: its worker variables must not reach the pytest runs the
    # tests start themselves, or those would take themselves for workers (no -n 3 of benchmark mode, no
    # controller's Ctrl-C handling)
    if hasattr(config, "workerinput"):
        for name in ("PYTEST_XDIST_WORKER", "PYTEST_XDIST_WORKER_COUNT", "PYTEST_XDIST_TESTRUNUID"):
            os.environ.pop(name, None)


def test_phase(item) -> str:
    """Its phase in scripts/test.sh: `alone` when marked exclusive or using the second Docker engine
    (tests/second_engine.py), `cluster` when using the test cluster (tests/kube_cluster.py: one per machine,
    started by the first test that needs it; its tests never restart the Docker engine), else `shared`."""
    fixtures = getattr(item, "fixturenames", ())
    if item.get_closest_marker("exclusive") is not None or "second_engine" in fixtures:
        return "alone"
    return "cluster" if "kube_cluster" in fixtures else "shared"


def pytest_collection_modifyitems(config, items):
    phase = config.getoption("--test-phase")
    if phase == "all":
        return
    keep, dropped = [], []
    for item in items:
        (keep if test_phase(item) == phase else dropped).append(item)
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = keep


@pytest.fixture(scope="session")
def full_matrix(request) -> bool:
    """--full-matrix: every harness on every item of a matrix test (else its slice, tests/matrix.py)."""
    return request.config.getoption("--full-matrix")


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

