"""From pytest's options to a checked RunConfig, and the settings a resumed run must share with its first part.

Everything here only reads: a bad option is one sentence (a pytest.UsageError) before the run writes a byte
or creates a Docker object.
"""
from __future__ import annotations

import hashlib
import re
import secrets
import shlex
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from pytest_clawswe.engine.images.cache_level import CacheLevel
from pytest_clawswe.errors import HarnessError
from pytest_clawswe.files import load_run_info
from pytest_clawswe.harness.adapter import Harness, get_harness_class
from pytest_clawswe.harness.deadline import AGENT_ALLOWANCE_S
from pytest_clawswe.model import NO_MODEL, Model
from pytest_clawswe.run.options import (
    OPTIONS,
    check_prices_known,
    image_cache_option,
    read_fields,
    registry_option,
)

# run.json keys whose value changes results: a resume with another value would mix two configurations.
# Selection (--lite, --instance-ids, -k) may differ: a resume may extend or narrow the run.
RESULT_SETTINGS = {
    "harness": "--harness", "model": "--model", "dataset": "--dataset",
    "budget_s": "--budget", "mem_limit": "--mem-limit",
    "pids_limit": "--pids-limit", "disk_limit": "--disk-limit", "network": "--network",
    "harness_options": "--harness-option", "prices_sha256": "--prices (the file's contents)",
    "retries": "--retries", "gateway_shaping": "--gateway-shaping",
    "grade_provider_failures": "--grade-provider-failures",
}


def _usage(text: str) -> pytest.UsageError:
    return pytest.UsageError(text)


def safe_id(text: str) -> str:
    """Run ids end up in container and folder names: keep them to [A-Za-z0-9_.-]."""
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", text).strip("-.")


def default_run_id(harness: str, model: str) -> str:
    # the run id names the run's Docker networks and swebench's evaluation containers: two runs started in the
    # same second on one engine must not share it, hence the random tail: 32 bits, so that even many runs started
    # in one second collide about never (16 bits made 1 in 65,536 for two)
    parts = [harness, safe_id(model), f"{time.strftime('%Y%m%d-%H%M%S')}-{secrets.token_hex(4)}"]
    return "_".join(p for p in parts if p)


def prices_digest(path: str | None) -> str | None:
    """The prices file's digest, after checking it parses (a bad file is found here, not on every item)."""
    if not path:
        return None
    from pytest_clawswe.prices import PriceFileError, load_price_file

    try:
        load_price_file(path)
    except PriceFileError as exc:
        raise _usage(f"--prices: {exc}") from None
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def run_location(config: pytest.Config, name: str = "", default_id: str = "") -> tuple[str, Path]:
    """(run id, run folder): an xdist worker's from the controller, a resumed run's own, or a new one (--run-id,
    --run-dir, else `default_id` or <harness>_<model>_<time> under reports/)."""
    worker = getattr(config, "workerinput", None)
    if worker and "clawswe_run_id" in worker:  # xdist worker: the controller chose the run
        return worker["clawswe_run_id"], Path(worker["clawswe_run_dir"])
    resume = config.getoption("resume")
    if not resume:
        run_id = safe_id(config.getoption("run_id") or default_id or default_run_id(name, config.getoption("model")))
        default = Path(config.invocation_params.dir, "reports", run_id)
        run_dir = Path(config.getoption("run_dir") or default).resolve()
        if (run_dir / "run.json").is_file():  # its finished results would be taken over under new settings
            raise _usage(f"{run_dir} already holds a run; continue it with --resume {run_dir}, "
                         "or give another --run-dir")
        return run_id, run_dir
    run_dir = Path(resume).resolve()
    if not (run_dir / "run.json").is_file():
        what = "no such folder" if not run_dir.exists() else "it holds no run (no run.json)"
        raise _usage(f"--resume {run_dir}: {what}; give the folder of an earlier run")
    if config.getoption("run_dir") and Path(config.getoption("run_dir")).resolve() != run_dir:
        raise _usage("--run-dir and --resume name two folders; a resumed run stays in its folder: drop --run-dir")
    stored = load_run_info(run_dir).get("run_id") or run_dir.name
    asked = config.getoption("run_id")
    if asked and safe_id(asked) != stored:
        raise _usage(f"--run-id {asked} differs from the resumed run's id {stored}; drop --run-id")
    # a resumed run is the same run: same id, so its clean-up also finds what the first attempt left
    return safe_id(stored), run_dir


def given_settings(config: pytest.Config) -> dict:
    """The options every benchmark shares, each checked (pytest.UsageError names the first bad one): RunConfig's
    fields but the network, which the benchmark's default completes (run_config). The fields are read by
    run/options.py's table, each by its row; the harness class, the run's folder and the prices' digest are
    derived from them here."""
    spec = config.getoption("harness")
    try:
        harness_cls = get_harness_class(spec)
    except HarnessError as exc:
        raise _usage(str(exc)) from None
    name = harness_cls.name if ":" in spec else spec
    given = read_fields(config, OPTIONS)
    prices_sha256 = prices_digest(given["prices_file"])
    run_id, run_dir = run_location(config, name)
    given.update(run_id=run_id, run_dir=run_dir, harness_name=name, harness_spec=spec, harness_class=harness_cls,
                 prices_sha256=prices_sha256, image_cache=image_cache_option(config), registry=registry_option(config))
    check_prices_known(given)
    _check_harness(harness_cls, given["model"].spec, given["harness_options"])
    if harness_cls.needs_model and not getattr(config, "workerinput", None) and not config.option.collectonly:
        if not given["model"]:
            raise _usage(NO_MODEL)
        check_key(given["model"])
    return given


def check_key(model: Model, flag: str = "", keyless: str = "") -> None:
    """pytest.UsageError (one sentence, after `flag` when given) when the gateway has no key for `model`'s provider:
    the one rule for every model a run's gateway serves (the agents', a benchmark's judge), checked before the run's
    network or gateway exists. `keyless` says how to go without a key (default: the scripted agent model)."""
    from pytest_clawswe.gateway.upstream.providers import check_upstream

    try:
        check_upstream(model, keyless=keyless)
    except ValueError as exc:
        raise _usage(f"{flag}: {exc}" if flag else str(exc)) from None


def run_config(config: pytest.Config, benchmark, given: dict) -> RunConfig:
    """The run's RunConfig, made once the benchmark is known: the `given` settings (given_settings, or a
    regrade's), the network (--network, else the benchmark's default) and the benchmark's harness defaults
    (--harness-option wins; a regrade keeps its run's options as they were)."""
    mode, network = resolve_network(config, given, benchmark.default_network)
    options = given["harness_options"]
    defaults = benchmark.harness_defaults(given["harness_name"]) if given.get("regrade_of") is None else {}
    if defaults:
        options = {**defaults, **options}
    cfg = RunConfig(**{**given, "harness_options": options, "network_mode": mode, "network": network})
    if defaults:
        check_harness_options(cfg)
    return cfg


NETWORK_MODES = ("locked", "internet", "open")


def resolve_network(config: pytest.Config, given: dict, default: str) -> tuple[str, str | None]:
    """(network mode, the agents' Docker network): --network, else the benchmark's `default`.

    `internet` needs host firewall rules (engine/network/internet.py): without root or iptables it is one sentence
    before anything is written, never a silent fall-back to Docker's open network."""
    mode = config.getoption("network") or default
    if mode not in NETWORK_MODES:
        raise _usage(f"--network {mode}: use one of {', '.join(NETWORK_MODES)}")
    harness_cls = given.get("harness_class")
    network: str | None
    if mode == "open":
        network = None  # Docker's default bridge
    elif not harness_cls or harness_cls.needs_model:
        network = f"clawswe-{given['run_id']}"  # the run's own network, where the gateway listens
    else:
        network = "none"  # no model to reach: no network at all
    if mode != "internet" or network == "none" or getattr(config, "workerinput", None) \
            or config.option.collectonly:
        return mode, network
    from pytest_clawswe.engine.network.internet import why_not_possible

    why = why_not_possible()
    if why:
        given_flag = "--network internet" if config.getoption("network") else "the default --network internet"
        raise _usage(f"{given_flag} (public addresses only: not this host, private or link-local addresses, nor other "
                     f"containers) needs host firewall rules, which need root and iptables ({why}); run as root, "
                     "or give --network open (Docker's default network: this host's services and other containers "
                     "are reachable too) or --network locked (no internet)")
    return mode, network


def _check_harness(harness_cls: type[Harness], model: str, options: dict[str, str]) -> None:
    try:
        harness_cls(model, options)
    except HarnessError as exc:
        raise _usage(str(exc)) from None


def check_harness_options(cfg: RunConfig) -> None:
    """Bad harness options (e.g. zeroclaw without its binary): one sentence before anything starts."""
    try:
        cfg.new_harness()
    except HarnessError as exc:
        raise _usage(str(exc)) from None


def result_settings(config: pytest.Config, cfg: RunConfig) -> dict:
    """The settings that change results, as run.json stores them."""
    return {
        "harness": cfg.harness_name, "model": cfg.model.spec, "dataset": config.getoption("dataset"),
        "budget_s": cfg.budget_s,
        "mem_limit": cfg.mem_limit, "pids_limit": cfg.pids_limit, "disk_limit": cfg.disk_limit,
        "network": cfg.network_mode, "harness_options": cfg.harness_options,
        "prices_sha256": cfg.prices_sha256, "retries": cfg.retries,
        "gateway_shaping": cfg.gateway_shaping, "grade_provider_failures": cfg.grade_provider_failures,
    }


def check_resume(config: pytest.Config, cfg: RunConfig, benchmark=None) -> None:
    """A resume continues the same configuration: refuse one that would relabel or mix results.

    `benchmark`: the run's Benchmark (benchmark.py); its name and run_info() must match too."""
    if not config.getoption("resume"):
        return
    stored = load_run_info(cfg.run_dir)
    if benchmark is not None:
        if stored.get("benchmark") and not benchmark.owns(stored):
            from pytest_clawswe.run.benchmark import benchmark_of

            owner = benchmark_of(stored)
            flag = f"--benchmark {owner.name if owner else stored['benchmark']}"
            raise _usage(f"{cfg.run_dir} is a {stored['benchmark']} run: resume it with {flag} and its --dataset")
        for key, now in benchmark.run_info().items():
            if key in stored and stored[key] != now:
                name = benchmark.run_info_options.get(key, key)
                raise _usage(f"{name} is {now!r} but the run in {cfg.run_dir} used {stored[key]!r}; "
                             f"{_resume_with(name, stored[key])}, or start a new run")
    for key, now in result_settings(config, cfg).items():
        if key not in stored:  # a run from before this setting was recorded
            continue
        before = stored[key]
        if key == "budget_s" and before is not None and now is not None:
            same = float(before) == float(now)
        else:
            same = before == now
        if not same:
            raise _usage(f"{RESULT_SETTINGS[key]} is {now!r} but the run in {cfg.run_dir} used {before!r}; "
                         f"{_resume_with(RESULT_SETTINGS[key], before)}, or start a new run")


def _resume_with(flag: str, before) -> str:
    """What to add to the command to resume: the flag with the run's value where one flag says it (a run made before
    WildClawBench's default network became `internet` resumes with `--network locked`)."""
    if re.fullmatch(r"--[a-z-]+", flag) and isinstance(before, (str, int, float)) and not isinstance(before, bool):
        return f"resume with {flag} {shlex.quote(str(before))} (the run's own setting)"
    return "resume with the run's own settings"



@dataclass(frozen=True)
class RunConfig:
    """Everything a worker needs to run items; identical in the controller and every xdist worker. Made once
    (run_config), after the benchmark is known; nothing changes it afterwards."""

    run_id: str
    run_dir: Path
    harness_name: str
    model: Model  # --model, parsed once (run/options.py:model_value); a str given here is parsed (__post_init__)
    budget_s: float = 3600.0
    setup_timeout_s: float | None = None  # --setup-timeout: the setup stage's limit (None: the benchmark's own)
    agent_allowance_s: float = AGENT_ALLOWANCE_S  # --agent-allowance: the agent stage's limit past budget + grace
    mem_limit: str | None = "8g"
    pids_limit: int | None = 300
    disk_limit: int | None = 20 * 2**30  # bytes an agent's container may write; None: no limit
    harness_options: dict = field(default_factory=dict)
    harness_spec: str = ""  # what to load: an installed name, module:Class or file.py:Class
    prices_file: str | None = None  # extra or overriding model prices (see prices.py)
    prices_sha256: str | None = None  # the prices file's digest: a resume must price alike
    network: str | None = None  # agent containers' Docker network; None = the default bridge (open)
    network_mode: str = "locked"  # --network: locked, internet or open (resolve_network)
    retries: int = 0  # re-runs of an attempt that ended in a harness error, within the same budget
    gateway_shaping: str = "auto"  # the gateway's model-side shaping (gateway/shaping.py)
    # --cache-level as given (auto included): which images an item leaves behind; the session resolves auto
    cache_level: CacheLevel = "instance"
    image_cache: int | None = None  # bytes of images kept per engine across runs, LRU (engine/images/cache.py)
    registry: str | None = None  # HOST:PORT images reach the other engines through (engine/images/registry.py)
    max_cost: float | None = None  # USD: no item starts past it (spending.py)
    max_instance_cost: float | None = None  # USD: the gateway refuses an instance's calls past it
    provider_breaker: int = 3  # instances in a row ending in the same provider error that stop the run; 0: off
    grade_provider_failures: bool = False  # True: as the released code, a provider failure is graded
    regrade_of: str | None = None  # --regrade: the run folder this run grades again, without an agent (run/regrade/)
    # the adapter class harness_spec names, resolved once (run_config); new_harness() builds the adapter
    harness_class: type[Harness] | None = field(default=None, repr=False, compare=False)

    def __post_init__(self) -> None:
        if isinstance(self.model, str):  # a RunConfig made from run.json (a regrade) or by hand
            object.__setattr__(self, "model", Model.parse(self.model) if self.model.strip() else Model.none())

    def new_harness(self) -> Harness:
        """The run's adapter with its options (after the benchmark's defaults joined them)."""
        cls = self.harness_class or get_harness_class(self.harness_spec)
        return cls(self.model.spec, self.harness_options)

    def harness_grace_s(self) -> float:
        """The run's harness wrapper's grace past the budget, its options included (in each item's hard stop);
        0 when no adapter class was resolved (a RunConfig made by hand)."""
        cls = self.harness_class
        return 0.0 if cls is None else cls.grace_with(cls.Options.parse(self.harness_options, cls.name))

    @property
    def model_label(self) -> str:
        return f"{self.harness_name}/{self.model.spec}" if self.model else self.harness_name
