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

import dataclasses
import functools
import types
import typing
from dataclasses import dataclass, field
from importlib.metadata import entry_points
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pytest_clawswe.errors import HarnessError
from pytest_clawswe.harness.deadline import Deadline

if TYPE_CHECKING:
    from pytest_clawswe.engine.workspace import BaseWorkspace

ENTRY_POINT_GROUP = "clawswe.harnesses"


@dataclass
class AgentContext:
    """What an adapter may use for one item (an instance, a task). It never holds a real API key."""

    instance_id: str
    row: dict  # the dataset row (problem_statement, base_commit, ...); adapters must not leak tests
    workspace: BaseWorkspace
    artifacts_dir: Path  # the instance's artifact folder on the host
    model: str
    # the item's deadline (harness/deadline.py), made once by the runner and never rewritten; a number of seconds
    # is taken as the deadline of that budget (how AgentContext was made before it held one)
    deadline: Deadline
    gateway_url: str = ""  # the model gateway as seen from inside the container
    gateway_token: str = ""  # per-instance token; stands in for an API key
    workdir: str = "/testbed"

    def __post_init__(self) -> None:
        if not isinstance(self.deadline, Deadline):
            self.deadline = Deadline(float(self.deadline))

    @property
    def budget_s(self) -> float:
        """The wall-clock budget of this attempt of the agent (read only: `deadline.budget_s`, kept for adapters
        that read it)."""
        return self.deadline.budget_s


@dataclass
class AgentRun:
    """What send_task reports. finish_reason: stop | timeout | error (the runner decides empty from the patch,
    and disk_limit when its watch stopped the agent)."""

    finish_reason: str
    output: str = ""  # the agent's stdout/stderr, kept as agent.log
    exit_code: int | None = None
    harness_usage: dict = field(default_factory=dict)  # usage as the harness itself reports it
    message: str = ""  # why it errored, in a sentence


_TRUE, _FALSE = ("1", "true", "yes", "on"), ("0", "false", "no", "off")


@dataclass
class HarnessOptions:
    """An adapter's typed options (`--harness-option KEY=VALUE`). Subclasses add dataclass fields with a
    default and `metadata={"help": ...}`; str, int, float, bool and `X | None` fields are parsed from the
    command line's strings. Unknown keys and bad values are one HarnessError, raised at configure time."""

    @classmethod
    def fields(cls) -> dict[str, tuple[dataclasses.Field, Any]]:
        hints = typing.get_type_hints(cls)
        return {f.name: (f, hints[f.name]) for f in dataclasses.fields(cls)}

    @classmethod
    def parse(cls, raw: dict | None, harness: str = "") -> HarnessOptions:
        known = cls.fields()
        values = {}
        for key, value in (raw or {}).items():
            if key not in known:
                names = ", ".join(sorted(known)) or "none"
                raise HarnessError(f"harness {harness!r} has no option {key!r} (its options: {names}; "
                                   "see `clawswe harness list`)")
            values[key] = _convert(key, value, known[key][1], harness)
            number = values[key]
            if isinstance(number, (int, float)) and not isinstance(number, bool) and number < 0:
                raise HarnessError(f"--harness-option {key}={value}: {harness or 'the harness'} expects 0 or more "
                                   "(a count, a size or seconds)")
        return cls(**values)

    def as_dict(self) -> dict:
        return dataclasses.asdict(self)

    @classmethod
    def describe(cls) -> list[tuple[str, str, Any, str]]:
        """(name, type, default, help) per option, for `clawswe harness list`."""
        rows = []
        for name, (f, hint) in cls.fields().items():
            default = f.default if f.default is not dataclasses.MISSING else f.default_factory()  # type: ignore[misc]
            rows.append((name, _type_name(hint), default, f.metadata.get("help", "")))
        return rows


def _type_name(hint) -> str:
    args = [a for a in typing.get_args(hint) if a is not type(None)]
    if isinstance(hint, types.UnionType) or typing.get_origin(hint) is typing.Union:
        return _type_name(args[0]) if len(args) == 1 else str(hint)
    return getattr(hint, "__name__", str(hint))


def _convert(key: str, value, hint, harness: str):
    optional = type(None) in typing.get_args(hint)
    base = next((a for a in typing.get_args(hint) if a is not type(None)), hint) if optional else hint
    if value is None or (optional and isinstance(value, str) and value.lower() in ("", "none")):
        if optional:
            return None
    elif isinstance(value, base) and not (base is int and isinstance(value, bool)):
        return value
    elif isinstance(value, str):
        text = value.strip()
        if base is bool and text.lower() in _TRUE + _FALSE:
            return text.lower() in _TRUE
        try:
            if base is int:
                return int(text)
            if base is float:
                return float(text)
            if base is str:
                return value
        except ValueError:
            pass
    elif base is float and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    want = {"int": "an integer", "float": "a number", "bool": "true or false", "str": "a string"}
    raise HarnessError(f"--harness-option {key}={value}: {harness or 'the harness'} expects "
                       f"{want.get(_type_name(base), _type_name(base))}{' or none' if optional else ''}")


class Harness:
    """Base adapter: override what your harness needs. Instances are created once per worker process."""

    name = "base"
    # where the harness's CLI reads skills (WildClawBench copies a task's skill folders into each), and whether
    # it reads them from the prompt instead (Codex, as released: each SKILL.md inlined before the task)
    skill_dirs: tuple[str, ...] = ("/root/skills",)
    inline_skills = False
    # whether a benchmark that has one gives it an image helper script, named in its prompt (WildClawBench's Codex)
    image_helper = False
    prompt_template = "default.txt"  # which of a benchmark's prompt templates this harness gets (swe/instance/prompt.py)
    # Files or folders the harness writes into /testbed that are not part of the solution; saved into
    # the artifacts and removed before the patch is collected (only when git does not track them).
    workspace_artifacts: tuple[str, ...] = ()
    needs_model = True  # False for adapters that call no model (oracle, nop)
    Options: type[HarnessOptions] = HarnessOptions  # the adapter's typed options
    # Seconds the wrapper waits past the budget before it kills the harness, so the harness's own timeout
    # (set to the budget) fires first; the released code's values (+60 openclaw, +120 hermes/nanobot/zeroclaw).
    grace_s: float = 0.0

    def __init__(self, model: str = "", options: dict | None = None):
        self.model = model
        self.options = dict(options or {})  # as given (strings from the command line)
        self.opts = self.Options.parse(self.options, self.name)  # typed, validated: unknown keys fail here
        self.grace_s = self.grace_with(self.opts)

    @classmethod
    def grace_with(cls, opts: HarnessOptions) -> float:
        """The wrapper's grace under these options, without making the adapter (the item's hard stop counts it):
        a `grace` option where the adapter takes one (--harness-option grace), else the released value."""
        given = getattr(opts, "grace", None)
        return cls.grace_s if given is None else max(0.0, float(given))

    def resolved_options(self) -> dict:
        """Every option with its effective value (defaults included): what run.json records."""
        return self.opts.as_dict()

    def images(self) -> list[str]:
        """Images setup() needs on its engine; a run over several engines loads them from the first one."""
        return []

    def setup(self, client, run_id: str) -> None:
        """Once per process, before the first item: the place to create shared Docker objects."""

    def teardown(self) -> None:
        """Once per process, at the end. Objects labelled with the run are swept up anyway."""

    def get_docker_args(self, instance_id: str) -> dict:
        """Extra Workspace settings for the instance container: environment, volumes_from, network."""
        return {}

    def create_agent(self, ctx: AgentContext) -> None:
        pass

    def send_task(self, ctx: AgentContext, prompt: str) -> AgentRun:
        raise NotImplementedError

    def backup_session(self, ctx: AgentContext, dest: Path) -> None:
        pass

    def delete_agent(self, ctx: AgentContext) -> None:
        pass


@functools.lru_cache(maxsize=None)
def available() -> dict[str, object]:
    """name -> entry point, for every installed adapter."""
    return {ep.name: ep for ep in entry_points(group=ENTRY_POINT_GROUP)}


def options_lines(name: str) -> list[str]:
    """`  key=default  (type) help` per option of an installed adapter, for `clawswe harness list`."""
    try:
        cls = get_harness_class(name)
    except HarnessError:
        return []
    return [f"    {key}={'' if default is None else default}  ({kind}) {help_}".rstrip()
            for key, kind, default, help_ in cls.Options.describe()]


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
        raise HarnessError(f"entry point {name!r} does not name a pytest_clawswe.harness.adapter.Harness subclass")
    return cls
