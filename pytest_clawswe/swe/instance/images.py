"""Instance images: build them from a task repo's Dockerfiles, or find or pull them.

swebench 5 builds with `docker buildx`, which Debian's docker.io lacks, so we build with the
Docker SDK's classic builder instead. Each image records a hash of its task folder (the build
context) in the label `clawswe.context-hash`; an image whose label matches is up to date and
is not rebuilt, and one whose Dockerfile or context changed is.
"""
from __future__ import annotations

import hashlib
import os
import time
from pathlib import Path
from typing import Callable, Iterable

import docker
import docker.errors

from pytest_clawswe.engine.images.cache_level import PULLED_BASE_LABEL, missing_bases, registry_names
from pytest_clawswe.engine.images.build import BuildProgress
from pytest_clawswe.errors import ClawsweError, InfraError, UserError
from pytest_clawswe.labels import LABEL_CONTEXT_HASH as HASH_LABEL
from pytest_clawswe.labels import LABEL_IMAGE_INSTANCE as INSTANCE_LABEL
from pytest_clawswe.labels import LABEL_PREPARED
from pytest_clawswe.swe.paths import DEMO_TASK_REPO

# the key under which an instance dict carries its task folder (from swebench's task_paths)
TASK_DIR = "task_dir"

Progress = Callable[[str], None]


class ImageError(ClawsweError, RuntimeError):
    """An instance image could not be built or pulled; the message is one sentence."""


def build_log_dir() -> Path:
    cache = Path(os.environ.get("CLAWSWE_CACHE", Path.home() / ".cache" / "clawswe"))
    return cache / "build-logs"


def command_client() -> docker.DockerClient:
    """A client for a running engine (engine/docker/client.py's), or a UserError saying how to get one (the
    `clawswe` commands' words)."""
    from pytest_clawswe.engine.docker.client import docker_client

    try:
        return docker_client()
    except InfraError as exc:
        raise UserError(str(exc)) from None


def load_instances(task_repo: str | Path, instance_ids: list[str] | None = None) -> list[dict]:
    """A task repo's instances as swebench loads them, each with its task folder added.

    Without ids: what the repo publishes; with ids: exactly those (swebench's select_tasks).
    """
    from swebench.task.repo import select_tasks, task_paths

    instances = select_tasks(task_repo, instance_ids)
    folders = task_paths(task_repo, [i["instance_id"] for i in instances])
    return [{**i, TASK_DIR: str(folders[i["instance_id"]])} for i in instances]


def context_hash(task_dir: str | Path) -> str:
    """sha256 over every file of the build context: relative path, executable bit, bytes."""
    root = Path(task_dir)
    digest = hashlib.sha256()
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        rel = path.relative_to(root).as_posix()
        executable = os.access(path, os.X_OK)
        digest.update(f"{rel}\0{int(executable)}\0".encode())
        digest.update(path.read_bytes())
        digest.update(b"\0")
    return digest.hexdigest()


def _local_image(client: docker.DockerClient, name: str):
    try:
        return client.images.get(name)
    except docker.errors.ImageNotFound:
        return None


def _is_current(image, task_dir: str | Path) -> bool:
    return image is not None and (image.labels or {}).get(HASH_LABEL) == context_hash(task_dir)


def _build_one(client, instance: dict, prefix: str, force: bool, progress: Progress) -> None:
    iid, tag, task_dir = instance["instance_id"], instance["image"], instance[TASK_DIR]
    log_dir = build_log_dir()
    log_dir.mkdir(parents=True, exist_ok=True)
    log_path = log_dir / f"{iid}.log"
    labels = {HASH_LABEL: context_hash(task_dir), INSTANCE_LABEL: iid}
    dockerfile = Path(task_dir, "Dockerfile")
    pulled = missing_bases(client, dockerfile) if dockerfile.is_file() else []
    if pulled:  # `--cache-level none` removes these with the instance image (see engine/images/cache_level.py)
        labels[PULLED_BASE_LABEL] = ",".join(pulled)
    previous = _local_image(client, tag)
    started = time.monotonic()
    last_error = None
    with open(log_path, "w") as log:
        log.write(f"# building {tag} from {task_dir} (nocache={force})\n")
        try:
            # the classic builder: no buildx needed; forcerm cleans intermediate containers
            stream = client.api.build(path=str(task_dir), tag=tag, labels=labels, rm=True,
                                      forcerm=True, nocache=force, pull=False, decode=True)
            with BuildProgress(prefix.rstrip(":"), progress) as steps:  # its steps, and a long one's time
                for chunk in stream:
                    text = chunk.get("stream") or chunk.get("status") or ""
                    if text:
                        log.write(text if text.endswith("\n") else text + "\n")
                        for line in text.splitlines():
                            steps.line(line)
                    if "error" in chunk:
                        last_error = chunk["error"].strip()
                        log.write(f"ERROR: {last_error}\n")
        except (docker.errors.APIError, docker.errors.BuildError) as exc:
            last_error = str(exc)
            log.write(f"ERROR: {last_error}\n")
    image = _local_image(client, tag)
    if last_error or image is None:
        reason = (last_error or "no image was produced").splitlines()[-1][:200]
        raise ImageError(f"{iid}: building its image failed ({reason}); see {log_path}.")
    progress(f"{prefix} built {tag} in {time.monotonic() - started:.0f}s")
    if previous is not None and previous.id != image.id and HASH_LABEL in (previous.labels or {}):
        _drop_replaced(client, previous, tag)


def _drop_replaced(client, previous, tag: str) -> None:
    """The version a build replaced, now untagged, off the disk unless a container still uses it: with the images
    prepared from it (swe/instance/prepare.py: its children, stale with it) and its registry names (pushed by a run
    on a cluster, engine/images/registry.py: `<registry>/<tag>`), which would otherwise keep it as a dangling copy."""
    try:
        for child in client.images.list(filters={"label": LABEL_PREPARED}):
            if child.attrs.get("Parent") == previous.id:
                client.images.remove(child.id)
        for name in registry_names(previous, tag):
            client.images.remove(name)
        client.images.remove(previous.id)
    except docker.errors.APIError:
        pass  # in use (a container of another run): it stays, dangling; `docker image prune --filter
        # label=clawswe.instance-id` removes it once free


def build_images(
    instances: Iterable[dict],
    client: docker.DockerClient | None = None,
    force: bool = False,
    progress: Progress = print,
) -> dict[str, str]:
    """Build each instance's image from its task folder; return instance_id -> image tag.

    An image whose recorded context hash matches its task folder is reused. force=True
    rebuilds without the layer cache. A failed build raises ImageError naming the log file.
    """
    client = client or command_client()
    instances = list(instances)
    built = {}
    for n, instance in enumerate(instances, 1):
        iid, tag = instance["instance_id"], instance["image"]
        if not instance.get(TASK_DIR):
            raise ImageError(f"{iid}: it has no task folder, so its image cannot be built here (a run pulls {tag} instead).")
        prefix = f"[{n}/{len(instances)}] {iid}:"
        if not force and _is_current(_local_image(client, tag), instance[TASK_DIR]):
            progress(f"{prefix} up to date ({tag})")
        else:
            _build_one(client, instance, prefix, force, progress)
        built[iid] = tag
    return built


def is_ready(instance: dict, client: docker.DockerClient) -> bool:
    """Whether ensure_instance_image would use the local image as it is."""
    image = _local_image(client, instance["image"])
    task_dir = instance.get(TASK_DIR)
    return image is not None and not (task_dir and HASH_LABEL in (image.labels or {})
                                      and not _is_current(image, task_dir))


def ensure_instance_image(instance: dict, client: docker.DockerClient, progress: Progress = print) -> str:
    """Make the instance's image available locally and return its name.

    A local image is used as it is, unless it was built by us from a task folder that has
    changed since (a stale demo image would grade old code). An instance with a task folder
    is built; any other is pulled with visible progress.
    """
    tag = instance["image"]
    task_dir = instance.get(TASK_DIR)
    if is_ready(instance, client):
        return tag
    if task_dir:
        build_images([instance], client, progress=progress)
        return tag
    _pull(client, instance["instance_id"], tag, progress)
    return tag


def _pull(client, iid: str, tag: str, progress: Progress) -> None:
    repository, _, version = tag.rpartition(":")
    if "/" in version or not repository:  # no tag given: the colon belonged to a registry port
        repository, version = tag, "latest"
    progress(f"{iid}: pulling {tag}")
    layers: dict[str, str] = {}
    try:
        for event in client.api.pull(repository, tag=version, stream=True, decode=True):
            if "error" in event:
                raise ImageError(f"{iid}: pulling {tag} failed: {event['error'].strip()}.")
            layer, status = event.get("id"), event.get("status", "")
            # one line per layer state change, not one per progress tick
            if layer and status and layers.get(layer) != status and status not in ("Downloading", "Extracting"):
                layers[layer] = status
                done = sum(s in ("Pull complete", "Already exists") for s in layers.values())
                progress(f"{iid}: {layer} {status} ({done}/{len(layers)} layers)")
    except docker.errors.APIError as exc:
        raise ImageError(f"{iid}: pulling {tag} failed: {exc.explanation or exc}.") from None
    if _local_image(client, tag) is None:
        raise ImageError(f"{iid}: pulling {tag} produced no image.")
    progress(f"{iid}: pulled {tag}")


# --- command line: `clawswe images build` -------------------------------------------------


def resolve_task_repo(dataset: str) -> Path:
    path = DEMO_TASK_REPO if dataset == "demo" else Path(dataset)
    if not (path / "sweb.yaml").is_file():
        raise UserError(f"{dataset} is not a task repo (no sweb.yaml in {path}); use demo or a task repo path.")
    return path


def _cmd_build(args) -> int:
    repo = resolve_task_repo(args.dataset)
    ids = [i for part in (args.instance_ids or []) for i in part.split(",") if i] or None
    try:
        instances = load_instances(repo, ids)
    except KeyError as exc:
        raise UserError(f"Unknown instance id(s) in {repo}: {exc.args[0].split(': ', 1)[-1]}.") from None
    if not instances:
        raise UserError(f"{repo} publishes no instances.")
    client = command_client()
    started = time.monotonic()
    try:
        build_images(instances, client, force=args.force, progress=lambda line: print(line, flush=True))
    except ImageError as exc:
        raise UserError(str(exc)) from None
    print(f"{len(instances)} image(s) ready in {time.monotonic() - started:.0f}s; logs in {build_log_dir()}")
    return 0


def add_cli(subparsers) -> None:
    images = subparsers.add_parser("images", help="build instance images")
    sub = images.add_subparsers(dest="images_command", required=True)
    build = sub.add_parser("build", help="build instance images from a task repo (reuses up-to-date images)")
    build.add_argument("--dataset", default="demo", help="demo, or the path of a swebench 5 task repo")
    build.add_argument("--instance-ids", nargs="+", metavar="ID", help="only these instances")
    build.add_argument("--force", action="store_true", help="rebuild without the layer cache")
    build.set_defaults(func=_cmd_build)
