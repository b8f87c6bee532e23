"""What the adapters of bundled harnesses share: the run's bundle data container and headless CLI runs.

A bundle (see harness/bundles.py) is lent to every instance container through ONE data container per bundle image,
`clawswe-bundle-<name>-<version>-<image id>`: created (never started) the first time a run needs it, its
volume filled once with a copy of the bundle (a minute for a big one), and kept for later runs, since
the data is read-only and the name changes when the bundle is rebuilt. `clawswe clean --bundles` removes
these caches. xdist workers race to create it: the loser gets a 409 Conflict and waits for the winner's.
Per-instance agent state lives under STATE_ROOT inside the container, never in /testbed.
"""
from __future__ import annotations

import re
import shlex
import time
from dataclasses import dataclass, field
from pathlib import Path

from pytest_clawswe.engine.workspace import ExecResult
from pytest_clawswe.harness.adapter import AgentContext, AgentRun, Harness, HarnessError, HarnessOptions
from pytest_clawswe.labels import LABEL_BUNDLE_CACHE as BUNDLE_CACHE_LABEL

STATE_ROOT = "/tmp/clawswe-agent"
CREATE_WAIT_S = 600  # how long a worker waits for the bundle container another worker is creating


def bundle_container_name(name: str, version: str, image_id: str) -> str:
    short = image_id.split(":")[-1][:12]
    return re.sub(r"[^A-Za-z0-9_.-]", "-", f"clawswe-bundle-{name}-{version}-{short}")


def ensure_bundle_container(client, name: str, version: str) -> str:
    """Get or create (never start) the data container of a built bundle; returns its name."""
    import docker.errors

    from pytest_clawswe.engine.images.build import _image_id
    from pytest_clawswe.harness.bundles import LABEL
    from pytest_clawswe.harness.recipes import bundle_path, bundle_tag

    tag = bundle_tag(name, version)
    image_id = _image_id(client, tag)
    if image_id is None:
        raise HarnessError(f"the {name} bundle {tag} is not built; run: clawswe harness build {name} "
                           f"--version {version}")
    cname = bundle_container_name(name, version, image_id)
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


@dataclass
class BundledOptions(HarnessOptions):
    """Options every bundled adapter takes."""

    version: str | None = field(default=None, metadata={"help": "bundle version (default: the recipe's)"})
    model_name: str | None = field(default=None, metadata={
        "help": "model id the harness sends to the gateway (default: --model)"})
    grace: float | None = field(default=None, metadata={
        "help": "seconds the wrapper waits past the budget before it kills the harness (default: the released value)"})


class BundledHarness(Harness):
    """The shared life cycle of an adapter whose harness runs from a bundle lent read-only to the instance
    container: per-instance state in one agent home outside /testbed (made by create_agent from
    `config_files`, copied out by backup_session, removed by delete_agent), one headless CLI run per task
    (`run`) and one mapping of its result to an AgentRun (`finish`). An adapter adds its options dataclass,
    its config files, its command line and its usage parser."""

    bundle_name = ""  # recipe name: harnesses/<bundle_name>/bundle.yaml
    Options = BundledOptions

    def __init__(self, model: str = "", options: dict | None = None):
        super().__init__(model, options)
        from pytest_clawswe.harness.recipes import bundle_path, get_recipe

        self.version = self.opts.version or self.default_version(get_recipe(self.bundle_name))
        self.home = bundle_path(self.bundle_name, self.version)  # the bundle's tree in the container
        self.data_container = ""  # grace_s: the base's (Harness.grace_with: --harness-option grace, else the class's)

    def default_version(self, recipe) -> str:
        return recipe.version

    def resolved_options(self) -> dict:
        return {**super().resolved_options(), "version": self.version, "grace": self.grace_s}

    def images(self) -> list[str]:
        from pytest_clawswe.harness.recipes import bundle_tag

        return [bundle_tag(self.bundle_name, self.version)]

    def setup(self, client, run_id: str) -> None:
        self.data_container = ensure_bundle_container(client, self.bundle_name, self.version)

    def get_docker_args(self, instance_id: str) -> dict:
        # no key of any kind here: the gateway URL and the per-instance token are given per agent
        return {"volumes_from": [f"{self.data_container}:ro"], "environment": {}}

    def bin(self, entry_point: str) -> str:
        return f"{self.home}/bin/{entry_point}"

    def model_id(self, ctx: AgentContext) -> str:
        return self.opts.model_name or ctx.model

    # -- the shared life cycle ---------------------------------------------------------------------------
    @property
    def agent_home(self) -> str:
        return f"{STATE_ROOT}/{self.name}"

    def config_files(self, ctx: AgentContext) -> dict[str, str]:
        """Absolute path -> content of the files create_agent writes (mode 0600: they may hold the token)."""
        return {}

    def create_agent(self, ctx: AgentContext) -> None:
        ctx.workspace.exec(["rm", "-rf", self.agent_home], check=True)
        ctx.workspace.exec(["mkdir", "-p", self.agent_home], check=True)
        for path, content in self.config_files(ctx).items():
            ctx.workspace.write_file(path, content, mode=0o600)

    def backup_session(self, ctx: AgentContext, dest: Path) -> None:
        # what the home holds: configs with at most the per-instance token, revoked by now
        ctx.workspace.copy_out(self.agent_home, dest)

    def delete_agent(self, ctx: AgentContext) -> None:
        ctx.workspace.exec(["rm", "-rf", self.agent_home])

    def run(self, ctx: AgentContext, argv: list[str], env: dict[str, str] | None = None,
            prompt: str = "") -> tuple[ExecResult, str, str]:
        """Run argv in the workdir until it exits or budget + grace_s ends it (then every process in the
        container is killed); "{prompt}" in argv stands for the prompt's exact bytes, "{prompt_file}" for the
        file holding them. stdout and stderr are kept apart (JSON output parses cleanly)."""
        return run_headless(ctx, self.agent_home, argv, env or {}, prompt,
                            timeout=ctx.deadline.agent_timeout(self.grace_s))

    def finish(self, result: ExecResult, stdout: str, stderr: str, usage: dict | None = None,
               failed: str = "", name: str = "", *, ctx: AgentContext | None = None) -> AgentRun:
        """`ctx`: the attempt's context, whose budget tells the harness's own timeout from a failure."""
        run = finish(name or self.name, result, stdout, stderr, usage or {}, failed)
        if run.finish_reason == "error" and ctx is not None and result.seconds >= ctx.deadline.budget_s:
            # the harness's own timeout (set to the budget) ended it within the grace period: a timeout
            run = AgentRun("timeout", run.output, run.exit_code, run.harness_usage,
                           f"{name or self.name} stopped itself at the budget ({run.message})"[:300])
        return run


STDOUT, STDERR, PROMPT = "stdout.txt", "stderr.txt", "prompt.txt"
PROMPT_VAR = "CLAWSWE_PROMPT"
# "$(cat f)" drops the prompt's trailing newlines; a sentinel character keeps them (the released code passed
# the prompt as an argv element: byte for byte).
_READ_PROMPT = PROMPT_VAR + '="$(cat {path}; printf x)"; ' + PROMPT_VAR + '="${{' + PROMPT_VAR + '%x}}"; '


def run_headless(ctx: AgentContext, home: str, argv: list[str], env: dict[str, str], prompt: str,
                 timeout: float | None = None) -> tuple[ExecResult, str, str]:
    """Write the prompt to home/prompt.txt, run argv in the workdir; return (result, stdout, stderr)."""
    prompt_path = f"{home}/{PROMPT}"
    ctx.workspace.write_file(prompt_path, prompt)
    words, prefix = [], ""
    for arg in argv:
        if arg == "{prompt}":
            words.append(f'"${PROMPT_VAR}"')
            prefix = _READ_PROMPT.format(path=shlex.quote(prompt_path))
        else:
            words.append(shlex.quote(arg.replace("{prompt_file}", prompt_path)))
    out, err = f"{home}/{STDOUT}", f"{home}/{STDERR}"
    cmd = f"{prefix}{' '.join(words)} </dev/null >{shlex.quote(out)} 2>{shlex.quote(err)}"
    result = ctx.workspace.exec(["sh", "-c", cmd], workdir=ctx.workdir, env=env,
                                timeout=ctx.budget_s if timeout is None else timeout)
    stdout = (ctx.workspace.read_file(out) or b"").decode("utf-8", "replace")
    stderr = (ctx.workspace.read_file(err) or b"").decode("utf-8", "replace")
    return result, stdout, stderr


def agent_log(stdout: str, stderr: str) -> str:
    text = stdout.rstrip("\n") + "\n" if stdout else ""
    if stderr:
        text += "--- stderr ---\n" + stderr.rstrip("\n") + "\n"
    return text


def last_line(text: str, default: str = "no output") -> str:
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return (lines[-1] if lines else default)[:300]


def finish(name: str, result: ExecResult, stdout: str, stderr: str, usage: dict, failed: str = "") -> AgentRun:
    """The one mapping of a harness run to an AgentRun: timeout when the wrapper's deadline ended it, error
    when the CLI failed (exit code, or `failed`: why a run that exited 0 still failed, in a sentence), else
    stop (the runner decides empty from the patch)."""
    output = agent_log(stdout, stderr)
    if result.timed_out:
        return AgentRun("timeout", output, None, usage, f"{name} was stopped at the budget")
    if result.exit_code != 0:
        why = failed or last_line(stderr or stdout)
        return AgentRun("error", output, result.exit_code, usage, f"{name} exited with code {result.exit_code}: {why}")
    if failed:
        return AgentRun("error", output, 0, usage, failed)
    return AgentRun("stop", output, 0, usage)
