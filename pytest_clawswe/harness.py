"""The adapter protocol between the benchmark and a harness, and the registry that finds adapters.

Once per process: setup(client, run_id) before the first item (e.g. create the bundle's data container),
teardown() at the end. Lifecycle of one item, in the order the runner calls it (the paper's names):
    get_docker_args  -> extra container settings (environment, bundle volumes, ...)
    create_agent     -> per-instance agent state inside the started container
    send_task        -> run the agent on the prompt until it stops or the budget runs out
    backup_session   -> copy the harness's session/transcript files into the artifacts
    delete_agent     -> remove per-instance agent state
The runner then collects the patch from /testbed (minus `workspace_artifacts`), so an adapter never
has to produce a patch. A third party adds a harness by exposing a Harness subclass in the entry-point
group `clawswe.harnesses`; no fork needed.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass, field
from importlib.metadata import entry_points
from pathlib import Path
from typing import TYPE_CHECKING

from .errors import HarnessError
from .paths import PROMPTS_DIR

if TYPE_CHECKING:
    from .workspace import Workspace

ENTRY_POINT_GROUP = "clawswe.harnesses"


@dataclass
class TaskContext:
    """What an adapter may use for one instance. It never holds a real API key."""

    instance_id: str
    row: dict  # the dataset row (problem_statement, base_commit, ...); adapters must not leak tests
    workspace: "Workspace"
    artifacts_dir: Path  # the instance's artifact folder on the host
    model: str
    budget_s: float  # wall-clock budget of the agent phase
    gateway_url: str = ""  # the model gateway as seen from inside the container
    gateway_token: str = ""  # per-instance token; stands in for an API key
    workdir: str = "/testbed"


@dataclass
class AgentRun:
    """What send_task reports. finish_reason: stop | timeout | error (the runner decides empty from the patch,
    and disk_limit when its watch stopped the agent)."""

    finish_reason: str
    output: str = ""  # the agent's stdout/stderr, kept as agent.log
    exit_code: int | None = None
    harness_usage: dict = field(default_factory=dict)  # usage as the harness itself reports it
    message: str = ""  # why it errored, in a sentence


class Harness:
    """Base adapter: override what your harness needs. Instances are created once per worker process."""

    name = "base"
    prompt_template = "default.txt"
    # Files or folders the harness writes into /testbed that are not part of the solution; saved into
    # the artifacts and removed before the patch is collected (only when git does not track them).
    workspace_artifacts: tuple[str, ...] = ()
    needs_model = True  # False for adapters that call no model (oracle, nop)

    def __init__(self, model: str = "", options: dict | None = None):
        self.model = model
        self.options = options or {}

    def prompt(self, row: dict) -> str:
        template = (PROMPTS_DIR / self.prompt_template).read_text()
        # str.replace, not str.format: problem statements are full of braces
        return (template.replace("{problem_statement}", row["problem_statement"])
                .replace("{base_commit}", row["base_commit"]))

    def setup(self, client, run_id: str) -> None:
        """Once per process, before the first item: the place to create shared Docker objects."""

    def teardown(self) -> None:
        """Once per process, at the end. Objects labelled with the run are swept up anyway."""

    def get_docker_args(self, instance_id: str) -> dict:
        """Extra Workspace settings for the instance container: environment, volumes_from, network."""
        return {}

    def create_agent(self, ctx: TaskContext) -> None:
        pass

    def send_task(self, ctx: TaskContext, prompt: str) -> AgentRun:
        raise NotImplementedError

    def backup_session(self, ctx: TaskContext, dest: Path) -> None:
        pass

    def delete_agent(self, ctx: TaskContext) -> None:
        pass


@functools.lru_cache(maxsize=None)
def available() -> dict[str, object]:
    """name -> entry point, for every installed adapter."""
    return {ep.name: ep for ep in entry_points(group=ENTRY_POINT_GROUP)}


def _load_by_path(spec: str) -> object:
    """`pkg.module:Class` or `path/to/file.py:Class`: a harness that is not installed as a package."""
    import importlib
    import importlib.util

    target, _, attr = spec.rpartition(":")
    try:
        if target.endswith(".py"):
            path = Path(target).resolve()
            module_spec = importlib.util.spec_from_file_location(f"clawswe_user_harness_{path.stem}", path)
            module = importlib.util.module_from_spec(module_spec)
            module_spec.loader.exec_module(module)
        else:
            module = importlib.import_module(target)
        return getattr(module, attr)
    except (ImportError, AttributeError, FileNotFoundError) as exc:
        raise HarnessError(f"cannot load harness {spec!r}: {exc}") from exc


def get_harness_class(name: str) -> type[Harness]:
    eps = available()
    if ":" in name:
        cls = _load_by_path(name)
    elif name not in eps:
        known = ", ".join(sorted(eps)) or "none"
        raise HarnessError(f"unknown harness {name!r}; installed harnesses are: {known} "
                           f"(a plugin adds one through the {ENTRY_POINT_GROUP!r} entry-point group, "
                           "or pass module:Class / path/to/file.py:Class)")
    else:
        try:
            cls = eps[name].load()
        except ImportError as exc:
            raise HarnessError(f"harness {name!r} is registered but cannot be imported ({exc}); "
                               "reinstall the package that provides it") from exc
    if not (isinstance(cls, type) and issubclass(cls, Harness)):
        raise HarnessError(f"entry point {name!r} does not name a pytest_clawswe.harness.Harness subclass")
    return cls
