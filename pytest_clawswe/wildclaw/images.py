"""The two images a WildClawBench run needs, built locally on first use and reused after.

- task image: where the agent works (debian bookworm-slim + python3, git and a shell kit). The released
  runner uses one big image with the harness baked in; here the harness comes from its bundle, lent as
  a read-only volume, so any glibc base works, and bookworm-slim is the base the demo instance images
  and the bundles' smoke tests already use (cached layers, no second distribution to keep).
- grader image: the task image plus the grader dependencies (openai, Pillow, PyMuPDF) installed from
  wheels that `pip download` fetches on the host through its configured mirror.

Tags carry a hash of the Dockerfiles, so changing one rebuilds, and an unchanged one is never rebuilt.
"""
from __future__ import annotations

import hashlib
import subprocess
import sys
import tempfile
from pathlib import Path

import docker.errors

from ..errors import InfraError

DOCKER_DIR = Path(__file__).with_name("docker")
GRADER_PACKAGES = ("openai", "Pillow", "PyMuPDF")
LABEL = "clawswe.wildclaw-image"


def _hash(*names: str) -> str:
    h = hashlib.sha256()
    for name in names:
        h.update((DOCKER_DIR / name).read_bytes())
    h.update(" ".join(GRADER_PACKAGES).encode())
    return h.hexdigest()[:12]


def task_image_tag() -> str:
    return f"clawswe-wildclaw-task:{_hash('task.Dockerfile')}"


def grader_image_tag() -> str:
    return f"clawswe-wildclaw-grader:{_hash('task.Dockerfile', 'grader.Dockerfile')}"


def _exists(client, tag: str) -> bool:
    try:
        client.images.get(tag)
        return True
    except docker.errors.ImageNotFound:
        return False


def _build(client, context: Path, dockerfile: str, tag: str, progress, buildargs: dict | None = None) -> None:
    progress(f"building {tag} (once; later runs reuse it)")
    try:
        client.images.build(path=str(context), dockerfile=dockerfile, tag=tag, rm=True, forcerm=True,
                            buildargs=buildargs or {}, labels={LABEL: tag.split(":")[0]})
    except (docker.errors.BuildError, docker.errors.APIError) as exc:
        log = "".join(str(c.get("stream", "")) for c in getattr(exc, "build_log", []) or [])[-1500:]
        raise InfraError(f"could not build {tag}: {exc}\n{log}", retryable=False) from None


def ensure_images(client, progress=print) -> tuple[str, str]:
    """(task image, grader image), built if missing."""
    task, grader = task_image_tag(), grader_image_tag()
    if not _exists(client, task):
        _build(client, DOCKER_DIR, "task.Dockerfile", task, progress)
    if not _exists(client, grader):
        with tempfile.TemporaryDirectory(prefix="clawswe-grader-") as tmp:
            context = Path(tmp)
            (context / "Dockerfile").write_bytes((DOCKER_DIR / "grader.Dockerfile").read_bytes())
            # the host's pip and mirror configuration; the image's Python is 3.11 on x86_64 glibc
            cmd = [sys.executable, "-m", "pip", "download", "--quiet", "--only-binary=:all:",
                   "--python-version", "3.11", "--platform", "manylinux_2_28_x86_64",
                   "--platform", "manylinux_2_17_x86_64", "--platform", "manylinux2014_x86_64",
                   "-d", str(context / "wheels"), *GRADER_PACKAGES]
            done = subprocess.run(cmd, capture_output=True, text=True, check=False)
            if done.returncode != 0:
                raise InfraError(f"could not download the grader's packages with pip "
                                 f"({done.stderr.strip().splitlines()[-1:] or ['no output']}); "
                                 "check the pip index configuration and run again", retryable=False)
            _build(client, context, "Dockerfile", grader, progress, {"TASK_IMAGE": task})
    return task, grader
