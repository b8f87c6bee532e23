"""pytest plugin for scripts/test.sh: after collection, write "yes" to $CLAWSWE_NEEDS_DOCKER_FILE if any
selected test is marked docker or harness (or uses a fixture that needs the engine), else "no"; and the same to
$CLAWSWE_NEEDS_HARBOR_FILE (when set) if any uses Harbor's own venv (tests/harbor_venv.py), which test.sh then builds
ahead, once (cached); and to $CLAWSWE_NEEDS_KUBE_FILE (when set) if any is marked kubernetes (the test cluster's
binaries are then built first, scripts/kube-cluster.sh build)."""
import os

DOCKER_MARKERS = {"docker", "harness"}
DOCKER_FIXTURES = {"docker_client", "demo_images"}
HARBOR_FIXTURES = {"harbor_python"}


def pytest_collection_finish(session):
    needs = any(
        DOCKER_MARKERS & {m.name for m in item.iter_markers()}
        or DOCKER_FIXTURES & set(getattr(item, "fixturenames", ()))
        for item in session.items
    )
    with open(os.environ["CLAWSWE_NEEDS_DOCKER_FILE"], "w") as fh:
        fh.write("yes" if needs else "no")
    if os.environ.get("CLAWSWE_NEEDS_HARBOR_FILE"):
        harbor = any(HARBOR_FIXTURES & set(getattr(item, "fixturenames", ())) for item in session.items)
        with open(os.environ["CLAWSWE_NEEDS_HARBOR_FILE"], "w") as fh:
            fh.write("yes" if harbor else "no")
    if os.environ.get("CLAWSWE_NEEDS_KUBE_FILE"):
        kube = any(item.get_closest_marker("kubernetes") for item in session.items)
        with open(os.environ["CLAWSWE_NEEDS_KUBE_FILE"], "w") as fh:
            fh.write("yes" if kube else "no")
