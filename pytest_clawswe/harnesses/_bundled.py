"""What the adapters of bundled harnesses share: the run's bundle data container and headless CLI runs.

A bundle (see bundles.py) is lent to every instance container through ONE data container per bundle image,
`clawswe-bundle-<name>-<version>-<image id>`: created (never started) the first time a run needs it, its
volume filled once with a copy of the bundle (a minute for a big one), and kept for later runs, since
the data is read-only and the name changes when the bundle is rebuilt. `clawswe clean --bundles` removes
these caches. xdist workers race to create it: the loser gets a 409 Conflict and waits for the winner's.
Per-instance agent state lives under STATE_ROOT inside the container, never in /testbed.
"""
from __future__ import annotations

import re
import time

from ..harness import AgentRun, Harness, HarnessError, TaskContext
from ..labels import LABEL_BUNDLE_CACHE as BUNDLE_CACHE_LABEL
from ..workspace import ExecResult

STATE_ROOT = "/tmp/clawswe-agent"
CREATE_WAIT_S = 600  # how long a worker waits for the bundle container another worker is creating


def bundle_container_name(name: str, version: str, image_id: str) -> str:
    short = image_id.split(":")[-1][:12]
    return re.sub(r"[^A-Za-z0-9_.-]", "-", f"clawswe-bundle-{name}-{version}-{short}")


def ensure_bundle_container(client, name: str, version: str) -> str:
    """Get or create (never start) the data container of a built bundle; returns its name."""
    import docker.errors

    from ..bundles import LABEL, bundle_path, bundle_tag

    tag = bundle_tag(name, version)
    try:
        image = client.images.get(tag)
    except docker.errors.ImageNotFound:
        raise HarnessError(f"the {name} bundle {tag} is not built; run: clawswe harness build {name} "
                           f"--version {version}") from None
    cname = bundle_container_name(name, version, image.id)
    try:
        client.containers.get(cname)
        return cname
    except docker.errors.NotFound:
        pass
    labels = {LABEL: f"{name}-{version}", BUNDLE_CACHE_LABEL: "1"}
    try:
        # the volume at the bundle path is filled from the image when the container is created
        client.api.create_container(tag, name=cname, volumes=[bundle_path(name, version)], labels=labels,
                                    network_disabled=True)
    except docker.errors.APIError as exc:
        if exc.status_code != 409:  # 409: another process created it first
            raise
        # The daemon reserves the name first and lists the container only once its volume holds a full copy of
        # the bundle, which takes a while for a big bundle on a busy machine: wait for it.
        deadline = time.monotonic() + CREATE_WAIT_S
        while True:
            try:
                client.containers.get(cname)
                break
            except docker.errors.NotFound:
                if time.monotonic() > deadline:
                    raise HarnessError(f"the bundle container {cname} was still not created after "
                                       f"{CREATE_WAIT_S} s") from None
                time.sleep(0.2)
    return cname


class BundledHarness(Harness):
    """An adapter whose harness runs from a bundle lent read-only to the instance container."""

    bundle_name = ""  # recipe name: harnesses/<bundle_name>/bundle.yaml

    def __init__(self, model: str = "", options: dict | None = None):
        super().__init__(model, options)
        from ..bundles import bundle_path, get_recipe

        self.version = self.options.get("version") or get_recipe(self.bundle_name).version
        self.home = bundle_path(self.bundle_name, self.version)  # the bundle's tree in the container
        self.data_container = ""

    def setup(self, client, run_id: str) -> None:
        self.data_container = ensure_bundle_container(client, self.bundle_name, self.version)

    def get_docker_args(self, instance_id: str) -> dict:
        # no key of any kind here: the gateway URL and the per-instance token are given per agent
        return {"volumes_from": [f"{self.data_container}:ro"], "environment": {}}

    def bin(self, entry_point: str) -> str:
        return f"{self.home}/bin/{entry_point}"


def run_cli(ctx: TaskContext, cmd: str, env: dict | None = None, prompt: str | None = None,
            prompt_path: str | None = None) -> ExecResult:
    """Run a shell command line in the workdir until it exits or the budget ends (then every process in the
    container is killed). The prompt, if given, is written to prompt_path first (no quoting hazards)."""
    if prompt is not None and prompt_path:
        ctx.workspace.write_file(prompt_path, prompt)
    return ctx.workspace.exec(cmd, workdir=ctx.workdir, env=env, timeout=ctx.budget_s)


def agent_run(result: ExecResult, usage: dict | None = None, failed: str = "", name: str = "the harness") -> AgentRun:
    """timeout when the budget ended it, error when it failed (exit code, or `failed`: why a run that exited 0
    still failed, in a sentence), else stop."""
    usage = usage or {}
    if result.timed_out:
        return AgentRun("timeout", result.output, None, usage, f"{name} was stopped at the budget")
    if result.exit_code != 0:
        lines = [line for line in result.output.splitlines() if line.strip()]
        last = lines[-1].strip()[:300] if lines else "no output"
        return AgentRun("error", result.output, result.exit_code, usage,
                        f"{name} exited with code {result.exit_code}: {last}")
    if failed:
        return AgentRun("error", result.output, result.exit_code, usage, failed)
    return AgentRun("stop", result.output, 0, usage)
