"""Harness bundles: each harness installed once per version into a self-contained tree with its own runtime.

A bundle is a data-only image (clawswe-bundle/<name>:<version>) holding /opt/clawswe/<name>-<version>/
(runtime + harness + bin/ wrappers). A run creates one container from it (never started) with a volume at
that path, and gives every instance container `volumes_from=[<that id>:ro]`: the instance image needs nothing
installed, nothing of the image's own Python or Node is used, and no host path is mounted, so a remote
Docker daemon works too.

Recipes are data: harnesses/<name>/bundle.yaml. Shared Dockerfiles and scripts: harnesses/_build/.
Runtimes (CPython, Node) are built once into cached builder images, clawswe-runtime/<runtime>:<version>.

Beside each registry recipe is a lock of the harness and all its dependencies, so a bundle built next month
holds what was measured today: harnesses/<name>/package-lock.json (npm, installed with `npm ci`) or
harnesses/<name>/requirements.lock (pip, exact versions with hashes, installed with --require-hashes).
`clawswe harness lock NAME` writes it by resolving inside the runtime image the bundle is built on. The lock's
digest is a label of the bundle image; a bundle whose label differs from the lock is rebuilt.
"""
from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Callable

from pytest_clawswe.engine.images.build import (
    _build_lock,
    _docker,
    _docker_build,
    _host_ca_bundle,
    _image_exists,
    _image_id,
    _mirror_args,
    _remove_quietly,
)
from pytest_clawswe.errors import UserError
from pytest_clawswe.harness.recipes import (
    BUILD_DIR,
    LOCK_FILES,
    _requirements_lock,
    bundle_path,
    bundle_tag,
    get_recipe,
    load_runtimes,
    lock_digest,
    node_manifest,
    pinned,
    resolve_version,
    runtime_tag,
)
from pytest_clawswe.labels import LABEL_BUNDLE as LABEL
from pytest_clawswe.labels import LABEL_RUN as RUN_LABEL

LOCK_LABEL = "clawswe.bundle.lock"  # sha256 of the lock file the bundle was installed from ("none": unpinned)
# Build files each image build sends besides its Dockerfile.
_RUNTIME_FILES = {"python": ["build-python.sh", "bundle-libs.sh"], "node": ["build-node.sh", "bundle-libs.sh"]}
_BUNDLE_FILES = ["install-node.sh", "install-python.sh", "install-binary.sh", "make-wrappers.sh", "bundle-libs.sh"]


def build_bundle(
    name: str,
    version: str | None = None,
    client=None,
    progress: Callable[[str], None] = print,
    force: bool = False,
    binary: str | os.PathLike | None = None,
) -> str:
    """Build the bundle image for a harness (reused if it exists, unless force) and return its tag.

    force reinstalls the harness without the build cache; the runtime image is reused either way.
    """
    recipe = get_recipe(name)
    version = resolve_version(recipe, version, binary)
    client = client or _docker()
    tag = bundle_tag(name, version)
    want = lock_digest(recipe.lock(version))
    if not force and _lock_of(client, tag) == want:
        return tag
    with _build_lock(tag, progress):
        previous = _image_id(client, tag)
        if previous and not force:
            if _lock_of(client, tag) == want:
                return tag  # another process built it while we waited
            progress(f"clawswe: rebuilding {tag}: it was not installed from the current {recipe.lock_path.name}")
        return _build_bundle(recipe, version, tag, previous, client, progress, force, binary)


def _lock_of(client, tag: str) -> str | None:
    """The lock label of the built image (None: not built). A bundle built before locks existed counts as
    unpinned ("none"): it is reused while its recipe has no lock, and rebuilt once it has one."""
    import docker

    try:
        return (client.images.get(tag).labels or {}).get(LOCK_LABEL, "none")
    except docker.errors.ImageNotFound:
        return None


def _build_bundle(recipe, version, tag, previous, client, progress, force, binary) -> str:
    name = recipe.name
    # A binary needs no runtime, only the node builder's tools to bundle the libraries it links.
    runtime_image = build_runtime("node" if recipe.runtime == "binary" else recipe.runtime, client, progress)

    files: dict[str, Path | bytes] = {"Dockerfile": BUILD_DIR / "bundle.Dockerfile",
                                      **{f: BUILD_DIR / f for f in _BUNDLE_FILES}}
    if binary is not None:
        files[f"payload/{recipe.entry_points[0]}"] = Path(binary)
    lock = recipe.lock(version)
    if lock is not None:
        files[f"lock/{LOCK_FILES[recipe.runtime]}"] = lock
        if recipe.runtime == "node":
            files["lock/package.json"] = node_manifest(recipe)
        packages = pinned(recipe, lock)
        progress(f"clawswe: pinned {len(packages)} packages by {recipe.lock_path} "
                 f"(sha256 {lock_digest(lock)}): {', '.join(packages)}")
    elif recipe.runtime != "binary":
        progress(f"clawswe: {name} {version} has no lock file: its dependencies are whatever the registry serves "
                 f"today (write one: clawswe harness lock {name})")
    buildargs = {
        "RUNTIME_IMAGE": runtime_image,
        "RUNTIME": recipe.runtime,
        "BUNDLE_DIR": bundle_path(name, version),
        "PACKAGES": " ".join(recipe.packages(version)),
        "ENTRY_POINTS": " ".join(recipe.entry_points),
        "BUNDLE_LABEL": f"{name}-{version}",
        "STAGE_LABEL": f"{name}-{version}-build",
        "LOCK_DIGEST": lock_digest(lock),
        **_mirror_args(),
    }
    progress(f"clawswe: building {tag} ({' '.join(recipe.packages(version))})")
    start = time.monotonic()
    try:
        _docker_build(client, files, tag, buildargs, {}, progress, nocache=force)
    finally:
        # The build stage (runtime + install caches) is only needed to make the bundle: drop it.
        client.images.prune(filters={"dangling": True, "label": f"{LABEL}={name}-{version}-build"})
    image = client.images.get(tag)
    if previous and previous != image.id:
        _remove_quietly(client, previous)  # the bundle this one replaces, unless a run still uses it
    size = image.attrs["Size"]
    progress(f"clawswe: built {tag} in {time.monotonic() - start:.0f} s, {size / 1e6:.0f} MB")
    return tag


def build_runtime(runtime: str, client=None, progress: Callable[[str], None] = print) -> str:
    """Build (once) the builder image that holds a runtime under /opt/clawswe/<runtime>; return its tag."""
    client = client or _docker()
    runtimes = load_runtimes()
    tag = runtime_tag(runtime, runtimes)
    if _image_exists(client, tag):
        return tag
    with _build_lock(tag, progress):
        if _image_exists(client, tag):
            return tag
        _build_runtime(runtime, runtimes, tag, client, progress)
    return tag


def _build_runtime(runtime, runtimes, tag, client, progress) -> None:
    spec = runtimes[runtime]
    if runtime == "python":
        args = {"PY_VERSION": spec["version"], "PY_SOURCE": spec["source"], "PY_SHA256": spec["sha256"]}
    else:
        args = {
            "NODE_VERSION": spec["version"],
            "NODE_INTEGRITY": spec["integrity"],
            "NPM_VERSION": spec["npm_version"],
            "NPM_INTEGRITY": spec["npm_integrity"],
        }
    files = {"Dockerfile": BUILD_DIR / f"runtime-{runtime}.Dockerfile", "ca.pem": _host_ca_bundle()}
    files.update({f: BUILD_DIR / f for f in _RUNTIME_FILES[runtime]})
    progress(f"clawswe: building runtime {tag} (once; bundles reuse it)")
    start = time.monotonic()
    _docker_build(client, files, tag, {"BASE": runtimes["base"], **args, **_mirror_args()},
                  {LABEL: f"runtime-{runtime}-{spec['version']}"}, progress)
    progress(f"clawswe: built {tag} in {time.monotonic() - start:.0f} s")


# --- lock files ------------------------------------------------------------------------------------------

_NODE_LOCK_SCRIPT = (
    'mkdir -p /tmp/lock && cd /tmp/lock && printf %s "$CLAWSWE_MANIFEST" > package.json'
    " && npm install --package-lock-only --omit-lockfile-registry-resolved --ignore-scripts >&2"
    " && cat package-lock.json"
)
_PYTHON_LOCK_SCRIPT = "/opt/clawswe/python/bin/python3 -m pip install --dry-run --ignore-installed --quiet --report - "


def write_lock(name: str, client=None, progress: Callable[[str], None] = print) -> Path:
    """Resolve the recipe's packages and all their dependencies inside its runtime image (so the same npm,
    the same CPython and glibc as the build) and write the lock file beside the recipe."""
    recipe = get_recipe(name)
    if recipe.lock_path is None or recipe.version is None:
        raise UserError(f"{name} is built from a file you supply (--binary): there is nothing to lock")
    client = client or _docker()
    image = build_runtime(recipe.runtime, client, progress)
    env = {k: v for k, v in {"PIP_INDEX_URL": os.environ.get("PIP_INDEX_URL")}.items() if v}
    if recipe.runtime == "node":
        env["CLAWSWE_MANIFEST"] = node_manifest(recipe).decode()
        script = _NODE_LOCK_SCRIPT
    else:
        script = _PYTHON_LOCK_SCRIPT + " ".join(recipe.packages(recipe.version))
    progress(f"clawswe: resolving {' '.join(recipe.packages(recipe.version))} in {image}")
    try:
        out = client.containers.run(image, ["sh", "-c", script], environment=env, remove=True, stderr=False,
                                    labels={LABEL: "lock"})
    except Exception as exc:  # docker's ContainerError carries the resolver's stderr
        raise UserError(f"resolving the {name} lock failed: {str(exc)[-2000:]}") from None
    lock = out if recipe.runtime == "node" else _requirements_lock(recipe, json.loads(out))
    recipe.lock_path.write_bytes(lock)
    packages = pinned(recipe, lock)
    progress(f"clawswe: wrote {recipe.lock_path}: {len(packages)} packages (sha256 {lock_digest(lock)})")
    return recipe.lock_path


def bundle_volume_container(client, name: str, version: str | None, run_label: str):
    """Create (not start) the container that lends a built bundle to instance containers.

    Give each instance container `volumes_from=[f"{container.id}:ro"]`; remove this one with
    `container.remove(v=True)` when the run ends (v=True also drops its volume, a copy of the bundle).
    """
    recipe = get_recipe(name)
    version = version or recipe.version
    if version is None:
        raise UserError(f"{name} has no default version; name the version that was built")
    tag = bundle_tag(name, version)
    if not _image_exists(client, tag):
        raise UserError(f"bundle {tag} is not built; run: clawswe harness build {name} --version {version}")
    # The volume at the bundle path is filled from the image when the container is created (a copy of the
    # tree, once per run): that is what volumes_from then lends, read-only, to each instance container.
    created = client.api.create_container(
        tag, volumes=[bundle_path(name, version)], labels={RUN_LABEL: run_label, LABEL: f"{name}-{version}"},
        network_disabled=True,
    )
    return client.containers.get(created["Id"])


def check_bundle(client, data_container, image: str) -> list[str]:
    """What the lent bundle would take from `image` besides glibc; [] when it is self-contained there.

    Runs ldd on the bundle's ELF files inside a throwaway container of `image` (needs sh, find and ldd).
    """
    path = data_container.labels["clawswe.bundle.path"]
    script = (BUILD_DIR / "check-libs.sh").read_text()
    container = client.containers.create(
        image, entrypoint=["/bin/sh", "-c", script, "check", path], volumes_from=[f"{data_container.id}:ro"],
        network_disabled=True, labels={LABEL: "check"},
    )
    try:
        container.start()
        status = container.wait(timeout=600)["StatusCode"]
        out = container.logs().decode(errors="replace").splitlines()
    finally:
        container.remove(force=True)
    if status != 0:
        raise RuntimeError(f"checking {path} in {image} failed ({status}): {out[-5:]}")
    return out


def built_versions(client, name: str) -> list[str]:
    tags = [t for image in client.images.list(name=f"clawswe-bundle/{name}") for t in image.tags]
    return sorted(t.split(":", 1)[1] for t in tags)


# --- docker plumbing -------------------------------------------------------------------------------------


# --- CLI: clawswe harness ... ----------------------------------------------------------------------------


