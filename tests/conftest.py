import pytest

from pytest_clawswe.paths import DEMO_TASK_REPO

pytest_plugins = ["pytester"]


@pytest.fixture(scope="session")
def docker_client():
    from pytest_clawswe.workspace import InfraError, docker_client

    try:
        return docker_client()
    except InfraError as exc:
        pytest.fail(f"{exc} (to run only the fast tests: -m 'not docker and not harness')")


@pytest.fixture(scope="session")
def demo_instances():
    from pytest_clawswe.instances import load_instances

    return load_instances("demo")


@pytest.fixture(scope="session")
def demo_images(docker_client, demo_instances):
    """Every demo image, built once (reused when up to date)."""
    from pytest_clawswe.images import build_images, load_instances

    return build_images(load_instances(DEMO_TASK_REPO), docker_client, progress=lambda line: None)


@pytest.fixture
def python_demo(demo_instances, demo_images):
    """The demo instance of the Python group (the quickest to grade)."""
    return next(i for i in demo_instances if i.language == "Python")


def pytest_collection_modifyitems(config, items):
    """Every test on the second engine is marked two_engines, so they can run apart (-m two_engines)."""
    for item in items:
        if "second_engine" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.two_engines)
