"""From pytest's options to a checked RunConfig, and the settings a resumed run must share with its first part.

Everything here only reads: a bad option is one sentence (a pytest.UsageError) before the run writes a byte
or creates a Docker object.
"""
from __future__ import annotations

import hashlib
import math
import re
import secrets
import time
from dataclasses import dataclass, field
from pathlib import Path

import docker.errors
import pytest
from docker.utils import parse_bytes

from pytest_clawswe.engine.cache_level import CacheLevel
from pytest_clawswe.errors import HarnessError
from pytest_clawswe.files import load_run_info
from pytest_clawswe.harness.adapter import Harness, get_harness_class

# run.json keys whose value changes results: a resume with another value would mix two configurations.
# Selection (--lite, --instance-ids, -k) may differ: a resume may extend or narrow the run.
RESULT_SETTINGS = {
    "harness": "--harness", "model": "--model", "dataset": "--dataset", "dataset_revision": "--dataset-revision",
    "budget_s": "--budget", "eval_timeout_s": "--eval-timeout", "mem_limit": "--mem-limit",
    "pids_limit": "--pids-limit", "disk_limit": "--disk-limit", "network": "--network",
    "harness_options": "--harness-option", "prices_sha256": "--prices (the file's contents)",
    "retries": "--retries", "purge": "--no-purge", "gateway_shaping": "--gateway-shaping",
    "grade_provider_failures": "--grade-provider-failures",
}


DEFAULT_EVAL_TIMEOUT_S = 1800.0  # --eval-timeout's default (the paper's)


def _usage(text: str) -> pytest.UsageError:
    return pytest.UsageError(text)


def safe_id(text: str) -> str:
    """Run ids end up in container and folder names: keep them to [A-Za-z0-9_.-]."""
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", text).strip("-.")


def default_run_id(harness: str, model: str) -> str:
    # the run id names the run's Docker networks and swebench's evaluation containers: two runs started in the
    # same second on one engine must not share it, hence the random tail
    parts = [harness, safe_id(model), f"{time.strftime('%Y%m%d-%H%M%S')}-{secrets.token_hex(2)}"]
    return "_".join(p for p in parts if p)


def _positive_seconds(config: pytest.Config, name: str, option: str, default: float | None = None) -> float:
    value = config.getoption(name)
    if value is None:  # an option whose default is None, so that a regrade can tell it was given
        value = default
    if not (value > 0 and math.isfinite(value)):
        raise _usage(f"{option} {value:g}: give a positive number of seconds, e.g. {option} 600")
    return value


def _size(text: str, option: str, example: str) -> int | None:
    """A size such as 8g; none: no limit. 0 is refused: it would silently remove the limit."""
    if text.strip().lower() == "none":
        return None
    try:
        size = parse_bytes(text)
    except docker.errors.DockerException:
        size = None
    if not size or size <= 0:
        raise _usage(f"{option} {text or repr(text)}: give a size such as {example}, or none for no limit")
    return size


def image_cache_option(config: pytest.Config) -> int | None:
    text = config.getoption("image_cache", None)
    if text is None:
        return None
    if config.getoption("cache_level") != "auto":
        raise _usage("--image-cache and --cache-level both say which images stay: give one of them")
    return _size(text, "--image-cache", "50g")


def registry_option(config: pytest.Config) -> str | None:
    from pytest_clawswe.engine.hosts import registry

    found = registry(config)
    return found.address if found is not None else None


def _harness_options(config: pytest.Config) -> dict[str, str]:
    options = {}
    for item in config.getoption("harness_option"):
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise _usage(f"--harness-option {item!r}: use KEY=VALUE")
        options[key] = value
    return options


def _shaping(config: pytest.Config) -> str:
    from pytest_clawswe.gateway.upstream.shaping import parse_setting

    setting = config.getoption("gateway_shaping")
    try:
        parse_setting(setting)
    except ValueError as exc:
        raise _usage(f"--gateway-shaping: {exc}") from None
    return setting


def _retries(config: pytest.Config) -> int:
    retries = config.getoption("retries")
    if retries < 0:
        raise _usage(f"--retries {retries}: give 0 (one attempt, as the released code) or more")
    return retries


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


def run_config(config: pytest.Config) -> RunConfig:
    """The run's configuration, every option checked (pytest.UsageError names the first bad one)."""
    spec = config.getoption("harness")
    try:
        harness_cls = get_harness_class(spec)
    except HarnessError as exc:
        raise _usage(str(exc)) from None
    name = harness_cls.name if ":" in spec else spec
    budget = _positive_seconds(config, "budget", "--budget")
    eval_timeout = _positive_seconds(config, "eval_timeout", "--eval-timeout", DEFAULT_EVAL_TIMEOUT_S)
    pids = config.getoption("pids_limit")
    if pids <= 0:
        raise _usage(f"--pids-limit {pids}: give a positive number of processes, e.g. --pids-limit 300")
    mem = _size(config.getoption("mem_limit"), "--mem-limit", "8g or 512m")
    disk = _size(config.getoption("disk_limit"), "--disk-limit", "20g, 500m")
    options = _harness_options(config)
    prices_sha256 = prices_digest(config.getoption("prices"))
    run_id, run_dir = run_location(config, name)
    cfg = RunConfig(run_id=run_id, run_dir=run_dir, harness_name=name, harness_spec=spec,
                    model=config.getoption("model"), budget_s=budget, eval_timeout_s=eval_timeout,
                    mem_limit=None if mem is None else config.getoption("mem_limit"), pids_limit=pids,
                    disk_limit=disk, dataset_revision=config.getoption("dataset_revision"),
                    harness_options=options, prices_file=config.getoption("prices"), prices_sha256=prices_sha256,
                    retries=_retries(config), purge=not config.getoption("no_purge"),
                    cache_level=config.getoption("cache_level"), gateway_shaping=_shaping(config),
                    image_cache=image_cache_option(config), registry=registry_option(config),
                    harness_class=harness_cls)
    _spending(config, cfg)
    check_harness_options(cfg)
    if harness_cls.needs_model and not getattr(config, "workerinput", None) and not config.option.collectonly:
        from pytest_clawswe.gateway.upstream.providers import check_upstream

        try:  # no model, no key: found before the run's network or gateway exists
            check_upstream(cfg.model)
        except ValueError as exc:
            raise _usage(str(exc)) from None
    return cfg


def _spending(config: pytest.Config, cfg: RunConfig) -> None:
    """--max-cost, --max-instance-cost, --provider-breaker, --grade-provider-failures: checked into cfg."""
    for name, option in (("max_cost", "--max-cost"), ("max_instance_cost", "--max-instance-cost")):
        value = config.getoption(name)
        if value is not None and not (value > 0 and math.isfinite(value)):
            raise _usage(f"{option} {value:g}: give a positive amount of USD, e.g. {option} 50")
        setattr(cfg, name, value)
    breaker = config.getoption("provider_breaker")
    if breaker < 0:
        raise _usage(f"--provider-breaker {breaker}: give 0 (never stop) or a number of instances, e.g. 3")
    cfg.provider_breaker = breaker
    cfg.grade_provider_failures = bool(config.getoption("grade_provider_failures"))
    if cfg.max_cost is not None or cfg.max_instance_cost is not None:
        from pytest_clawswe.run.spending import unit_prices

        if unit_prices(cfg.model, cfg.prices_file) is None:
            option = "--max-cost" if cfg.max_cost is not None else "--max-instance-cost"
            raise _usage(f"{option} needs the price of {cfg.model}, which is unknown; give it in a --prices file "
                         "(USD per million tokens) or drop the ceiling")


NETWORK_MODES = ("locked", "internet", "open")


def resolve_network(config: pytest.Config, cfg: RunConfig, default: str) -> None:
    """cfg.network_mode (--network, else the benchmark's `default`) and cfg.network, the agents' Docker network.

    `internet` needs host firewall rules (engine/internet.py): without root or iptables it is one sentence
    before anything is written, never a silent fall-back to Docker's open network."""
    mode = config.getoption("network") or default
    if mode not in NETWORK_MODES:
        raise _usage(f"--network {mode}: use one of {', '.join(NETWORK_MODES)}")
    cfg.network_mode = mode
    if mode == "open":
        cfg.network = None  # Docker's default bridge
    elif not cfg.harness_class or cfg.harness_class.needs_model:
        cfg.network = f"clawswe-{cfg.run_id}"  # the run's own network, where the gateway listens
    else:
        cfg.network = "none"  # no model to reach: no network at all
    if mode != "internet" or cfg.network == "none" or getattr(config, "workerinput", None) \
            or config.option.collectonly:
        return
    from pytest_clawswe.engine.internet import why_not_possible

    why = why_not_possible()
    if why:
        given = "--network internet" if config.getoption("network") else "the default --network internet"
        raise _usage(f"{given} (public addresses only: not this host, private or link-local addresses, nor other "
                     f"containers) needs host firewall rules, which need root and iptables ({why}); run as root, "
                     "or give --network open (Docker's default network: this host's services and other containers "
                     "are reachable too) or --network locked (no internet)")


def check_harness_options(cfg: RunConfig) -> None:
    """Bad harness options (e.g. zeroclaw without its binary): one sentence before anything starts."""
    try:
        cfg.new_harness()
    except HarnessError as exc:
        raise _usage(str(exc)) from None


def result_settings(config: pytest.Config, cfg: RunConfig) -> dict:
    """The settings that change results, as run.json stores them."""
    return {
        "harness": cfg.harness_name, "model": cfg.model, "dataset": config.getoption("dataset"),
        "dataset_revision": cfg.dataset_revision, "budget_s": cfg.budget_s, "eval_timeout_s": cfg.eval_timeout_s,
        "mem_limit": cfg.mem_limit, "pids_limit": cfg.pids_limit, "disk_limit": cfg.disk_limit,
        "network": cfg.network_mode, "harness_options": cfg.harness_options,
        "prices_sha256": cfg.prices_sha256, "retries": cfg.retries, "purge": cfg.purge,
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
                raise _usage(f"{name} is {now!r} but the run in {cfg.run_dir} used {stored[key]!r}; resume with "
                             "the run's own settings, or start a new run")
    for key, now in result_settings(config, cfg).items():
        if key not in stored:  # a run from before this setting was recorded
            continue
        before = stored[key]
        if key in ("budget_s", "eval_timeout_s") and before is not None and now is not None:
            same = float(before) == float(now)
        else:
            same = before == now
        if not same:
            raise _usage(f"{RESULT_SETTINGS[key]} is {now!r} but the run in {cfg.run_dir} used {before!r}; "
                         "resume with the run's own settings, or start a new run")



@dataclass
class RunConfig:
    """Everything a worker needs to run items; identical in the controller and every xdist worker."""

    run_id: str
    run_dir: Path
    harness_name: str
    model: str
    budget_s: float = 3600.0
    eval_timeout_s: float = 1800.0
    mem_limit: str | None = "8g"
    pids_limit: int | None = 300
    disk_limit: int | None = 20 * 2**30  # bytes an agent's container may write; None: no limit
    dataset_revision: str | None = None
    harness_options: dict = field(default_factory=dict)
    harness_spec: str = ""  # what to load: an installed name, module:Class or file.py:Class
    prices_file: str | None = None  # extra or overriding model prices (see prices.py)
    prices_sha256: str | None = None  # the prices file's digest: a resume must price alike
    network: str | None = None  # agent containers' Docker network; None = the default bridge (open)
    network_mode: str = "locked"  # --network: locked, internet or open (resolve_network)
    retries: int = 0  # re-runs of an attempt that ended in a harness error, within the same budget
    purge: bool = True  # False: the paper's §5.3 ablation (--no-purge), the future commits stay
    gateway_shaping: str = "auto"  # the gateway's model-side shaping (gateway/upstream/shaping.py)
    cache_level: CacheLevel = "instance"  # which images an item leaves behind when it ends (engine/cache_level.py)
    image_cache: int | None = None  # bytes of images kept per engine across runs, LRU (engine/image_cache.py)
    registry: str | None = None  # HOST:PORT images reach the other engines through (engine/registry.py)
    max_cost: float | None = None  # USD: no item starts past it (spending.py)
    max_instance_cost: float | None = None  # USD: the gateway refuses an instance's calls past it
    provider_breaker: int = 3  # instances in a row ending in the same provider error that stop the run; 0: off
    grade_provider_failures: bool = False  # True: as the released code, a provider failure is graded
    regrade_of: str | None = None  # --regrade: the run folder this run grades again, without an agent (run/regrade.py)
    # the adapter class harness_spec names, resolved once (run_config); new_harness() builds the adapter
    harness_class: type[Harness] | None = field(default=None, repr=False, compare=False)

    def new_harness(self) -> Harness:
        """The run's adapter with its options (after the benchmark's defaults joined them)."""
        cls = self.harness_class or get_harness_class(self.harness_spec)
        return cls(self.model, self.harness_options)

    @property
    def model_label(self) -> str:
        return f"{self.harness_name}/{self.model}" if self.model else self.harness_name
