"""The two images a WildClawBench run needs, built locally on first use and reused after.

- task image: where the agent works. It holds what the released images hold for the tasks (task.Dockerfile
  says what and docs/fidelity.md what differs): Python with pip, Node with npm, agent-browser, Playwright
  driving Debian's Chromium, ffmpeg. Harnesses come from their bundles, lent as read-only volumes.
  Built only from the registries (Debian, PyPI, npm), the pip and npm parts pinned with hashes
  (docker/task-requirements.lock, docker/task-npm/package-lock.json), Node by the runtimes.yaml integrity.
- grader image: the task image under a tag of its own (graders import openai, Pillow, PyMuPDF, Playwright,
  all in the task image), so a user's --task-image never changes where graders run.

Tags carry a hash of every build input (Dockerfiles, locks, scripts, the Node pin, the host's CA bundle),
so changing one rebuilds, and an unchanged one is never rebuilt.
"""
from __future__ import annotations

import hashlib
import time
from pathlib import Path

import docker.errors

from pytest_clawswe.engine.images import build
from pytest_clawswe.errors import BundleBuildError, InfraError
from pytest_clawswe.harness import recipes

DOCKER_DIR = Path(__file__).with_name("docker")
LABEL = "clawswe.wildclaw-image"
TASK_FILES = ("task.Dockerfile", "task-requirements.lock", "task-npm/package.json", "task-npm/package-lock.json",
              "playwright-browsers.sh")


def _node_args() -> dict[str, str]:
    spec = recipes.load_runtimes()["node"]
    return {"NODE_VERSION": spec["version"], "NODE_INTEGRITY": spec["integrity"],
            "NPM_VERSION": spec["npm_version"], "NPM_INTEGRITY": spec["npm_integrity"]}


def _task_files() -> dict[str, Path | bytes]:
    files: dict[str, Path | bytes] = {"Dockerfile": DOCKER_DIR / "task.Dockerfile"}
    files.update({name: DOCKER_DIR / name for name in TASK_FILES[1:]})
    files["ca.pem"] = build._host_ca_bundle()
    return files


def _hash(files: dict[str, Path | bytes], args: dict[str, str]) -> str:
    h = hashlib.sha256()
    for name in sorted(files):
        data = files[name]
        h.update(name.encode() + b"\0" + (data if isinstance(data, bytes) else Path(data).read_bytes()))
    h.update(repr(sorted(args.items())).encode())
    return h.hexdigest()[:12]


def task_image_tag() -> str:
    return f"clawswe-wildclaw-task:{_hash(_task_files(), _node_args())}"


def grader_image_tag() -> str:
    files = {**_task_files(), "grader.Dockerfile": DOCKER_DIR / "grader.Dockerfile"}
    return f"clawswe-wildclaw-grader:{_hash(files, _node_args())}"


def _build(client, files: dict, tag: str, progress, buildargs: dict) -> None:
    # one build per host at a time (xdist workers); the others say they wait, and reuse it
    with build._build_lock(tag, progress):
        if build._image_exists(client, tag):
            return
        progress(f"building {tag} (once; later runs reuse it; the task image takes minutes)")
        start = time.monotonic()
        try:  # its steps, and the time of a long one, as it goes (images/build.py: BuildProgress)
            build._docker_build(client, files, tag, buildargs, {LABEL: tag.split(":")[0]}, progress)
        except (BundleBuildError, docker.errors.APIError) as exc:
            raise InfraError(f"could not build {tag}: {exc}", retryable=False) from None
        size = client.images.get(tag).attrs["Size"]
        progress(f"built {tag} in {time.monotonic() - start:.0f} s, {size / 1e6:.0f} MB")


def ensure_images(client, progress=print) -> tuple[str, str]:
    """(task image, grader image), built if missing."""
    task, grader = task_image_tag(), grader_image_tag()
    mirrors = {k: v for k, v in build._mirror_args().items() if k in ("DEBIAN_MIRROR", "NPM_REGISTRY")}
    if not build._image_exists(client, task):
        _build(client, _task_files(), task, progress, {**_node_args(), **mirrors})
    if not build._image_exists(client, grader):
        _build(client, {"Dockerfile": DOCKER_DIR / "grader.Dockerfile"}, grader, progress, {"TASK_IMAGE": task})
    return task, grader


def check_task_image(client, image: str) -> None:
    """--task-image: the image must be on the engine already (loaded, never pulled: no Docker Hub here)."""
    import pytest

    if not build._image_exists(client, image):
        raise pytest.UsageError(f"--task-image {image}: no such image on this Docker engine; load it first "
                                "(docker load -i FILE) or leave --task-image out to use the task image built here")


if __name__ == "__main__":  # python -m pytest_clawswe.wildclaw.task.images: build both, print tags
    print(ensure_images(docker.from_env()))
