"""The harness's bundle is on the run's first engine before the run writes anything: built on first use, or (--no-build-bundles) refused in one sentence."""
from __future__ import annotations

import pytest

from pytest_clawswe.errors import InfraError
from pytest_clawswe.run.config import RunConfig
from pytest_clawswe.run.item.runner import progress as _progress


def ensure_bundle(config: pytest.Config, cfg: RunConfig, host) -> None:
    """The harness's bundle on the run's first engine (the others load it from there): built now, on first use,
    or with --no-build-bundles one sentence; either way before the run writes anything."""
    import docker.errors

    from pytest_clawswe.errors import BundleBuildError
    from pytest_clawswe.harness.bundles import build_bundle

    harness = cfg.new_harness()
    name, version = getattr(harness, "bundle_name", ""), getattr(harness, "version", None)
    if not name or not harness.images():
        return
    try:
        client = host.client(timeout=600)
    except InfraError:
        return  # no engine: the run's start says so in one sentence
    missing = []
    for tag in harness.images():
        try:
            client.images.get(tag)
        except docker.errors.ImageNotFound:
            missing.append(tag)
    if not missing:
        return
    if config.getoption("no_build_bundles"):
        raise pytest.UsageError(f"the {name} bundle {missing[0]} is not built; run: clawswe harness build {name} "
                                f"--version {version} (or drop --no-build-bundles to build it on first use)")
    _progress(f"building the {name} bundle {missing[0]} on first use (once, a few minutes; later runs reuse it)")
    try:
        build_bundle(name, version, client, progress=_progress)
    except (BundleBuildError, docker.errors.DockerException, OSError) as exc:
        raise pytest.UsageError(f"building the {name} bundle {missing[0]} failed ({str(exc).splitlines()[0][:300]});"
                                f" run `clawswe harness build {name} --version {version}` to see why") from None
