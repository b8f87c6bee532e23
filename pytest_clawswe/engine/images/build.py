"""Building images with the classic builder: the Debian/PyPI/npm mirrors and the host's CA passed in, one build per tag at a time across processes, quiet removal. Bundles, the relay, the sidecar and the task image use it."""
from __future__ import annotations

import contextlib
import fcntl
import io
import os
import re
import tarfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

from pytest_clawswe.errors import BundleBuildError, InfraError, UserError
from pytest_clawswe.files import safe_name


def _docker():
    from pytest_clawswe.engine.docker.client import docker_client

    try:
        return docker_client()
    except InfraError as exc:
        raise UserError(str(exc)) from None


def _image_id(client, tag: str) -> str | None:
    import docker

    try:
        return client.images.get(tag).id
    except docker.errors.ImageNotFound:
        return None


def _image_exists(client, tag: str) -> bool:
    return _image_id(client, tag) is not None


def _remove_quietly(client, image_id: str) -> None:
    import docker

    try:
        client.images.remove(image_id)
    except docker.errors.APIError:
        pass


STEP = re.compile(r"Step (\d+)/(\d+) : (.*)")  # the classic builder's line at the start of each step


class BuildProgress:
    """What the terminal sees of a build: one line per step and, while a step runs long (the task image's package
    installs run for minutes, some of them silent), a line every `every_s` seconds with how long it has run and
    its latest output. Use as a context manager: a thread says the time while the build says nothing."""

    def __init__(self, tag: str, progress: Callable[[str], None], every_s: float = 30.0, clock=time.monotonic):
        self.tag, self.progress, self.every_s, self.clock = tag, progress, every_s, clock
        self.step, self.latest = "", ""  # "3/14"; the step's latest output line
        self.step_started = self.said_at = clock()
        self._done = threading.Event()
        self._ticker = threading.Thread(target=self._tick_on, name="clawswe-build-progress", daemon=True)

    def line(self, text: str) -> None:
        """One line of the build's output."""
        text = text.strip()
        step = STEP.match(text)
        if step:
            self.step, self.latest = f"{step[1]}/{step[2]}", ""
            self.step_started = self.said_at = self.clock()
            self.progress(f"{self.tag}: step {self.step}: {step[3][:100]}")
        elif text:
            self.latest = text
            self.tick()

    def tick(self) -> None:
        now = self.clock()
        if self.step and now - self.said_at >= self.every_s:
            self.said_at = now
            latest = f": {self.latest[:100]}" if self.latest else ""
            self.progress(f"{self.tag}: step {self.step} running for {now - self.step_started:.0f} s{latest}")

    def _tick_on(self) -> None:
        while not self._done.wait(min(self.every_s, 5.0)):
            self.tick()

    def __enter__(self) -> "BuildProgress":
        self._ticker.start()
        return self

    def __exit__(self, *exc) -> None:
        self._done.set()
        self._ticker.join()


def _docker_build(client, files: dict, tag: str, buildargs: dict, labels: dict, progress, nocache=False):
    """Classic-builder build from an in-memory context (works with a remote daemon); `progress` gets its steps
    (BuildProgress), an error its last lines."""
    context = io.BytesIO()
    with tarfile.open(fileobj=context, mode="w") as tar:
        for arcname, source in files.items():
            data = source if isinstance(source, bytes) else Path(source).read_bytes()
            info = tarfile.TarInfo(arcname)
            info.size, info.mode = len(data), 0o755
            tar.addfile(info, io.BytesIO(data))
    context.seek(0)
    tail: list[str] = []
    with BuildProgress(tag, progress) as steps:
        stream = client.api.build(fileobj=context, custom_context=True, tag=tag, buildargs=buildargs, labels=labels,
                                  rm=True, forcerm=True, nocache=nocache, decode=True)
        for chunk in stream:
            for line in chunk.get("stream", "").splitlines():
                steps.line(line)
                tail = (tail + [line])[-20:]
            if "error" in chunk:
                raise BundleBuildError(f"building {tag} failed: {chunk['error'].strip()}\n" + "\n".join(tail))


@contextlib.contextmanager
def _build_lock(tag: str, progress: Callable[[str], None] | None = None):
    """One build of a tag at a time on this host (xdist workers, parallel runs); the others wait (saying so to
    `progress`) and reuse it."""
    cache = Path(os.environ.get("CLAWSWE_CACHE", Path.home() / ".cache" / "clawswe"))
    cache.mkdir(parents=True, exist_ok=True)
    with open(cache / ("build-" + safe_name(tag) + ".lock"), "w") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            if progress is not None:
                progress(f"{tag}: another process is building it; waiting for its build")
            fcntl.flock(lock, fcntl.LOCK_EX)
        yield


def _host_ca_bundle() -> bytes:
    """The host's CA bundle, so builds trust what the host trusts (e.g. a proxy's CA); empty if none."""
    for candidate in (os.environ.get("SSL_CERT_FILE"), os.environ.get("REQUESTS_CA_BUNDLE"),
                      os.environ.get("PIP_CERT"), "/etc/ssl/certs/ca-certificates.crt"):
        if candidate and Path(candidate).is_file():
            return Path(candidate).read_bytes()
    return b""


def _mirror_args() -> dict:
    """Registry mirrors the host is set up with through the environment, passed on to the builds."""
    names = {"PIP_INDEX_URL": "PIP_INDEX_URL", "NPM_REGISTRY": "NPM_CONFIG_REGISTRY",
             "DEBIAN_MIRROR": "CLAWSWE_DEBIAN_MIRROR"}
    args = {arg: os.environ[env] for arg, env in names.items() if os.environ.get(env)}
    if "NPM_REGISTRY" not in args and os.environ.get("npm_config_registry"):
        args["NPM_REGISTRY"] = os.environ["npm_config_registry"]
    return args
