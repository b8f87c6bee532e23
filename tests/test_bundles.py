"""Harness bundles: recipe loading and errors (fast), and real bundles lent to bare Debian containers
through volumes_from (docker; the node and python ones build real runtimes and harnesses: slow)."""
from __future__ import annotations

import argparse
import types

import pytest

from matrix import BUNDLE_IMAGE_SLICE

from pytest_clawswe.cli import UserError
from pytest_clawswe.errors import BundleBuildError
from pytest_clawswe.harness import bundles
from pytest_clawswe.harness import cli as bundle_command
from pytest_clawswe.harness import recipes as harness_recipes

BASES = ["debian:bullseye-slim", "debian:bookworm-slim"]  # glibc 2.31 and 2.36; neither has Python or Node


# --- recipes and errors (no Docker) -----------------------------------------------------------------------

def test_recipes_load_with_defaults():
    recipes = harness_recipes.load_recipes()
    assert set(recipes) >= {"openclaw", "codex", "claude-code", "hermes", "nanobot", "generic", "mini-swe-agent",
                            "zeroclaw"}
    assert recipes["openclaw"].runtime == "node"
    assert recipes["hermes"].packages("0.19.0") == ["hermes-agent==0.19.0"]
    assert recipes["codex"].packages("1.2.3") == ["@openai/codex@1.2.3"]
    assert recipes["mini-swe-agent"].packages("2.4.6")[1].startswith("mcp==")
    for recipe in recipes.values():
        assert recipe.entry_points
        assert (recipe.version is None) == (recipe.runtime == "binary")
        assert recipe.smoke or recipe.runtime == "binary"
    runtimes = harness_recipes.load_runtimes()
    assert {"base", "python", "node"} <= set(runtimes)


def test_paths_and_tags():
    assert harness_recipes.bundle_path("openclaw", "2026.9.6") == "/opt/clawswe/openclaw-2026.9.6"
    assert harness_recipes.bundle_tag("openclaw", "2026.9.6") == "clawswe-bundle/openclaw:2026.9.6"


def test_unknown_harness_lists_known_ones():
    with pytest.raises(UserError, match="unknown harness 'nope'; known harnesses: .*openclaw"):
        bundles.build_bundle("nope")


def test_zeroclaw_needs_a_binary(tmp_path):
    with pytest.raises(UserError, match="zeroclaw is on no registry; pass --binary PATH"):
        bundles.build_bundle("zeroclaw")
    with pytest.raises(UserError, match="no such file"):
        bundles.build_bundle("zeroclaw", binary=tmp_path / "missing")
    exe = tmp_path / "zeroclaw"
    exe.write_bytes(b"#!/bin/sh\necho zeroclaw\n")
    version = harness_recipes.resolve_version(harness_recipes.get_recipe("zeroclaw"), None, exe)
    assert version.startswith("sha256-")


def test_bad_inputs_are_user_errors(tmp_path):
    with pytest.raises(UserError, match="--binary is only for"):
        bundles.build_bundle("openclaw", binary=tmp_path)
    with pytest.raises(UserError, match="version"):
        bundles.build_bundle("openclaw", version="1.0; rm -rf /")


def harness_cli(argv):
    """Run `clawswe harness ...` as cli.main does (only this module's subcommand is registered)."""
    parser = argparse.ArgumentParser(prog="clawswe")
    bundle_command.add_cli(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(["harness", *argv])
    return args.func(args)


def test_every_registry_recipe_pins_its_packages():
    """The npm recipes carry a package-lock.json for their default version; python ones a hashed
    requirements.lock when written (clawswe harness lock NAME)."""
    import json

    recipes = harness_recipes.load_recipes()
    for name in ("claude-code", "codex", "openclaw"):
        recipe = recipes[name]
        lock = recipe.lock(recipe.version)
        assert lock is not None, f"{name}: no {recipe.lock_path}"
        data = json.loads(lock)
        # npm ci refuses a lock that disagrees with the package.json it is installed with
        assert data["packages"][""]["dependencies"] == json.loads(harness_recipes.node_manifest(recipe))["dependencies"]
        assert data["packages"][f"node_modules/{recipe.package}"]["version"] == recipe.version
        # no registry URLs: the lock works with any mirror; every package has its integrity hash
        entries = [e for path, e in data["packages"].items()
                   if path and not e.get("link") and not e.get("inBundle")]  # bundled: inside its parent's tarball
        assert all("resolved" not in e and e["integrity"].startswith("sha512-") for e in entries), name
        assert f"{recipe.package}@{recipe.version}" in harness_recipes.pinned(recipe, lock)
        assert recipe.lock("0.0.1") is None  # another version than the locked one installs unpinned
    for recipe in recipes.values():
        if recipe.runtime == "python" and recipe.lock_path.is_file():
            text = recipe.lock_path.read_text()
            pins = harness_recipes.pinned(recipe, text.encode())
            assert f"{recipe.package}=={recipe.version}" in pins
            assert text.count("--hash=sha256:") == len(pins), recipe.name


def test_a_lock_written_for_another_version_is_a_clear_error(tmp_path):
    import dataclasses
    import shutil

    for name in ("hermes", "codex"):
        recipe = harness_recipes.get_recipe(name)
        folder = tmp_path / name
        folder.mkdir()
        shutil.copy(recipe.lock_path, folder)
        bumped = dataclasses.replace(recipe, version="99.0.0", folder=folder)
        with pytest.raises(UserError, match=f"does not pin .*99.0.0.*; run: clawswe harness lock {name}"):
            bumped.lock("99.0.0")


def test_a_bundle_from_another_lock_is_rebuilt(monkeypatch):
    recipe = harness_recipes.get_recipe("codex")
    current = harness_recipes.lock_digest(recipe.lock(recipe.version))
    built = []
    monkeypatch.setattr(bundles, "_build_bundle", lambda recipe, version, tag, *a: built.append(tag) or tag)

    class Image:
        id = "sha256:x"

        def __init__(self, label):
            self.labels = {bundles.LOCK_LABEL: label} if label is not None else {}

    class Client:
        def __init__(self, label):
            self.images = types.SimpleNamespace(get=lambda tag: Image(label))

    # None: a bundle built before locks (no label)
    for label, rebuilt in ((current, False), ("0123456789abcdef", True), (None, True), ("none", True)):
        built.clear()
        assert bundles.build_bundle("codex", client=Client(label), progress=lambda line: None) == \
            "clawswe-bundle/codex:" + recipe.version
        assert bool(built) == rebuilt, label
    # a recipe without a lock: a bundle built before locks is as good as a new one
    monkeypatch.setattr(harness_recipes.Recipe, "lock", lambda self, version: None)
    built.clear()
    bundles.build_bundle("codex", client=Client(None), progress=lambda line: None)
    assert built == []


def test_cli_reports_user_errors():
    with pytest.raises(UserError, match="unknown harness 'nope'"):
        harness_cli(["build", "nope"])
    with pytest.raises(UserError, match="--binary PATH"):
        harness_cli(["build", "zeroclaw"])


def test_cli_lists_recipes(capsys):
    assert harness_cli(["list"]) == 0
    out = capsys.readouterr().out
    assert "openclaw" in out and "hermes-agent@0.19.0" in out


# --- real bundles in bare containers (Docker) ---------------------------------------------------------------

@pytest.fixture(scope="module")
def client(docker_client):
    missing = [base for base in BASES if not docker_client.images.list(name=base)]
    if missing:
        pytest.fail(f"base images missing: {missing}; run scripts/docker-up.sh")
    return docker_client


@pytest.fixture(scope="module")
def images(client, demo_instances, full_matrix):
    """The bare bases, then the demo instance images that are built here (`clawswe images build`), each once by its
    own name (not the copies other tests tag for a registry, nor other tests' instance images): with --full-matrix
    every one, else those with a runtime of their own (tests/matrix.py, BUNDLE_IMAGE_SLICE)."""
    from pytest_clawswe.swe.dataset import swebench_image_name

    built = {tag for image in client.images.list(name="swebench/sweb.eval.x86_64.clawswe_*") for tag in image.tags}
    demo = sorted(name for i in demo_instances if (name := swebench_image_name(i.instance_id)) in built)
    return BASES + (demo if full_matrix else [t for t in demo if any(n in t for n in BUNDLE_IMAGE_SLICE)])


@pytest.fixture
def lend(client):
    """lend(name) -> the bundle's data container, as runs get it (kept between runs)."""
    from pytest_clawswe.harness.adapters._bundled import ensure_bundle_container

    def lend(name, version=None):
        version = version or harness_recipes.get_recipe(name).version
        return client.containers.get(ensure_bundle_container(client, name, version))

    return lend


def run_everywhere(client, images, data, recipe, extra=None):
    """The smoke check in every image; the full library check (nothing but glibc needed from the image)
    in the bare bases, where the oldest glibc is."""
    for base in images:
        smoke(client, base, data, recipe)
        if extra:
            extra(base)
        if base in BASES:
            assert bundles.check_bundle(client, data, base) == [], base


def run_in(client, image, data_container, command):
    """Run a command in a fresh container of `image` that sees the bundle only through volumes_from."""
    container = client.containers.create(image, entrypoint=command, volumes_from=[f"{data_container.id}:ro"],
                                         network_disabled=True, labels={"clawswe.bundle": "test"})
    try:
        container.start()
        status = container.wait(timeout=300)["StatusCode"]
        return status, container.logs().decode(errors="replace")
    finally:
        container.remove(force=True)


@pytest.mark.docker
def test_binary_bundle_is_lent_through_volumes_from(client, lend, tmp_path):
    exe = tmp_path / "zeroclaw"
    exe.write_bytes(b"#!/bin/sh\necho zeroclaw-stand-in \"$@\"\n")
    tag = bundles.build_bundle("zeroclaw", client=client, binary=exe, progress=lambda line: None)
    version = tag.split(":", 1)[1]
    try:
        data = lend("zeroclaw", version)
        assert data.labels["clawswe.bundle-cache"] == "1" and data.status == "created"  # never started
        for base in BASES:
            status, out = run_in(client, base, data, [harness_recipes.bundle_path("zeroclaw", version) + "/bin/zeroclaw", "hi"])
            assert (status, out.strip()) == (0, "zeroclaw-stand-in hi")
        # Read-only: an instance cannot change the bundle that other instances share.
        status, out = run_in(client, BASES[0], data, ["touch", harness_recipes.bundle_path("zeroclaw", version) + "/x"])
        assert status != 0 and "Read-only" in out
        assert bundles.build_bundle("zeroclaw", client=client, binary=exe) == tag  # reused, not rebuilt
    finally:
        for container in client.containers.list(all=True, filters={"ancestor": tag}):
            container.remove(v=True, force=True)  # the data container: the image can't go while it exists
        client.images.remove(tag)


def smoke(client, image, data_container, recipe):
    """Run the recipe's quick check in `image`; assert it passes (and names the version, if asked for it)."""
    path = harness_recipes.bundle_path(recipe.name, recipe.version)
    status, out = run_in(client, image, data_container, ["env", f"BUNDLE={path}", "sh", "-c", recipe.smoke])
    assert status == 0, f"{image}: {out}"
    if "--version" in recipe.smoke:
        assert recipe.version in out, f"{image}: {out}"


@pytest.mark.docker
@pytest.mark.harness
def test_unknown_version_fails_clearly_and_leaves_nothing(client):
    with pytest.raises(BundleBuildError, match="building clawswe-bundle/nanobot:0.0.0 failed"):
        bundles.build_bundle("nanobot", "0.0.0", client=client, progress=lambda line: None)
    assert not client.images.list(name="clawswe-bundle/nanobot", filters={"label": "clawswe.bundle=nanobot-0.0.0"})
    assert not client.images.list(all=True, filters={"label": "clawswe.bundle=nanobot-0.0.0-build"})
    assert not client.containers.list(all=True, filters={"label": "clawswe.bundle=nanobot-0.0.0-build"})


@pytest.mark.docker
@pytest.mark.harness
@pytest.mark.matrix
def test_node_bundle_openclaw_runs_in_bare_and_demo_images(client, images, lend):
    bundles.build_bundle("openclaw", client=client)
    recipe = harness_recipes.get_recipe("openclaw")
    path = harness_recipes.bundle_path("openclaw", recipe.version)
    data = lend("openclaw")

    def sqlite(base):
        status, out = run_in(client, base, data, [f"{path}/node/bin/node", "-e", "require('node:sqlite')"])
        assert status == 0, out

    run_everywhere(client, images, data, recipe, sqlite)


@pytest.mark.docker
@pytest.mark.harness
@pytest.mark.matrix
def test_python_bundle_hermes_runs_in_bare_and_demo_images(client, images, lend):
    bundles.build_bundle("hermes", client=client)
    recipe = harness_recipes.get_recipe("hermes")
    path = harness_recipes.bundle_path("hermes", recipe.version)
    data = lend("hermes")
    modules = "ssl, sqlite3, ctypes, lzma, bz2, zlib, readline, decimal, uuid, curses"

    def stdlib(base):
        if base in BASES:
            status, out = run_in(client, base, data, ["sh", "-c", "command -v python3 python || echo no-python"])
            assert out.strip() == "no-python"  # the image has no Python of its own
        check = f"import {modules}; ctypes.CDLL(None); ssl.create_default_context(); print('ok')"
        status, out = run_in(client, base, data, [f"{path}/python/bin/python3", "-c", check])
        assert (status, out.strip()) == (0, "ok"), out

    run_everywhere(client, images, data, recipe, stdlib)


@pytest.mark.docker
@pytest.mark.harness
@pytest.mark.matrix
@pytest.mark.parametrize("name", [n for n, r in harness_recipes.load_recipes().items()
                                  if r.runtime != "binary" and n not in ("openclaw", "hermes")])  # tested above
def test_other_bundles_run_in_bare_and_demo_images(client, images, lend, name):
    bundles.build_bundle(name, client=client)
    run_everywhere(client, images, lend(name), harness_recipes.get_recipe(name))
