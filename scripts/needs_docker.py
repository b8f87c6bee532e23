"""pytest plugin for scripts/test.sh: after collection, write "yes" to $CLAWSWE_NEEDS_DOCKER_FILE if any
selected test is marked docker or harness (or uses a fixture that needs the engine), else "no"."""
import os

DOCKER_MARKERS = {"docker", "harness"}
DOCKER_FIXTURES = {"docker_client", "demo_images"}


def pytest_collection_finish(session):
    needs = any(
        DOCKER_MARKERS & {m.name for m in item.iter_markers()}
        or DOCKER_FIXTURES & set(getattr(item, "fixturenames", ()))
        for item in session.items
    )
    with open(os.environ["CLAWSWE_NEEDS_DOCKER_FILE"], "w") as fh:
        fh.write("yes" if needs else "no")
