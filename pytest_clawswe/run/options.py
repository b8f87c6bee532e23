"""The options every benchmark shares, declared in one table; each benchmark declares its own the same way.

A row says the flag, pytest's addoption keywords and where the value is read (`reads`), so every option's
reader is found from its declaration. The table is what pytest_addoption adds (plugin.py), what
run/benchmark.check_options walks to refuse an option the run's benchmark does not read, and what
run/regrade/ walks to refuse an option that describes the agents' work.
"""
from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pytest

from pytest_clawswe.harness.deadline import AGENT_ALLOWANCE_S
from pytest_clawswe.model import Model

CORE_GROUP = "clawswe"  # pytest's option group of every benchmark's options (`pytest --help`)


@dataclass(frozen=True)
class Option:
    """One command-line option: its flag, pytest's addoption keywords (`attrs`) and where it is read."""

    flag: str
    help: str
    reads: str  # where the value is read: a RunConfig field or the function that reads it
    attrs: dict[str, Any] = field(default_factory=dict)
    config_field: str = ""  # the RunConfig field read_fields fills from it ("": read elsewhere, see `reads`)
    check: Callable[[Any, str], Any] | None = None  # (value, flag) -> the field's value; pytest.UsageError if bad

    @property
    def dest(self) -> str:
        return self.flag.lstrip("-").replace("-", "_")

    @property
    def default(self) -> Any:
        """The value when not given, as argparse sets it (a flag's store_true: False; no default: None)."""
        if "default" in self.attrs:
            return self.attrs["default"]
        return {"store_true": False, "store_false": True}.get(self.attrs.get("action", ""))

    def given(self, config: pytest.Config) -> bool:
        """Whether the value is not the option's default (the option was given, or another plugin set it)."""
        return config.getoption(self.dest, None) != self.default


def add_options(parser: pytest.Parser, group: str, description: str, table: tuple[Option, ...]) -> None:
    """Add a table's options to pytest's option group `group` (`clawswe-NAME` for a benchmark's own)."""
    g = parser.getgroup(group, description)
    for option in table:
        g.addoption(option.flag, help=option.help, **option.attrs)


def read_fields(config: pytest.Config, table: tuple[Option, ...]) -> dict[str, Any]:
    """{field: value} of every row of `table` with a field, each checked by its row, in the table's order."""
    fields = {}
    for option in table:
        if option.config_field:
            value = config.getoption(option.dest)
            fields[option.config_field] = option.check(value, option.flag) if option.check else value
    return fields


# -- the checks of the rows (value, flag) -> value: a bad value is one sentence, a pytest.UsageError ----------------
def positive_seconds(value: float, flag: str) -> float:
    if not (value > 0 and math.isfinite(value)):
        raise pytest.UsageError(f"{flag} {value:g}: give a positive number of seconds, e.g. {flag} 600")
    return value


def optional_seconds(value: float | None, flag: str) -> float | None:
    return None if value is None else positive_seconds(value, flag)


def size(example: str) -> Callable[[str, str], int | None]:
    """A size such as 8g; none: no limit (None). 0 is refused: it would silently remove the limit."""
    def check(text: str, flag: str) -> int | None:
        import docker.errors
        from docker.utils import parse_bytes

        if text.strip().lower() == "none":
            return None
        try:
            found = parse_bytes(text)
        except docker.errors.DockerException:
            found = None
        if not found or found <= 0:
            raise pytest.UsageError(f"{flag} {text or repr(text)}: give a size such as {example}, or none for no limit")
        return found
    return check


def memory_limit(text: str, flag: str) -> str | None:
    """--mem-limit as Docker takes it (the text given, e.g. 8g), checked as a size; None: no limit."""
    return None if size("8g or 512m")(text, flag) is None else text


def positive_count(what: str, example: int) -> Callable[[int, str], int]:
    def check(value: int, flag: str) -> int:
        if value <= 0:
            raise pytest.UsageError(f"{flag} {value}: give a positive number of {what}, e.g. {flag} {example}")
        return value
    return check


def key_values(items: list[str], flag: str) -> dict[str, str]:
    options = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise pytest.UsageError(f"{flag} {item!r}: use KEY=VALUE")
        options[key] = value
    return options


def retries(value: int, flag: str) -> int:
    if value < 0:
        raise pytest.UsageError(f"{flag} {value}: give 0 (one attempt, as the released code) or more")
    return value


def shaping(setting: str, flag: str) -> str:
    from pytest_clawswe.gateway.upstream.shaping import parse_setting

    try:
        parse_setting(setting)
    except ValueError as exc:
        raise pytest.UsageError(f"{flag}: {exc}") from None
    return setting


def image_cache_option(config: pytest.Config) -> int | None:
    """--image-cache in bytes (None: not given); given with --cache-level, one sentence."""
    text = config.getoption("image_cache", None)
    if text is None:
        return None
    if config.getoption("cache_level") != "auto":
        raise pytest.UsageError("--image-cache and --cache-level both say which images stay: give one of them")
    return size("50g")(text, "--image-cache")


def registry_option(config: pytest.Config) -> str | None:
    from pytest_clawswe.engine.hosts import registry

    found = registry(config)
    return found.address if found is not None else None


def usd(value: float | None, flag: str) -> float | None:
    if value is not None and not (value > 0 and math.isfinite(value)):
        raise pytest.UsageError(f"{flag} {value:g}: give a positive amount of USD, e.g. {flag} 50")
    return value


def breaker(value: int, flag: str) -> int:
    if value < 0:
        raise pytest.UsageError(f"{flag} {value}: give 0 (never stop) or a number of instances, e.g. 3")
    return value


def bool_value(value: Any, flag: str) -> bool:
    return bool(value)


def model_value(text: str, flag: str) -> Model:
    """The run's Model, parsed and its name checked once here ("": no model, for a harness that needs none)."""
    try:
        return Model.parse(text) if text.strip() else Model.none()
    except ValueError as exc:
        raise pytest.UsageError(str(exc)) from None


def check_prices_known(fields: dict[str, Any]) -> None:
    """A spending ceiling needs the model's price: one sentence when it is unknown."""
    if fields["max_cost"] is None and fields["max_instance_cost"] is None:
        return
    from pytest_clawswe.run.spending import unit_prices

    if unit_prices(fields["model"].spec, fields["prices_file"]) is None:
        flag = "--max-cost" if fields["max_cost"] is not None else "--max-instance-cost"
        raise pytest.UsageError(f"{flag} needs the price of {fields['model'].spec}, which is unknown; give it in a --prices "
                                "file (USD per million tokens) or drop the ceiling")


OPTIONS: tuple[Option, ...] = (
    Option("--harness", "run the benchmark with this harness adapter (e.g. openclaw, oracle, nop); without it pytest "
           "runs ordinary tests", "RunConfig.harness_spec, harness_name, harness_class"),
    Option("--model", "model for the harness, e.g. openrouter/z-ai/glm-5.1 or scripted/gold", "RunConfig.model",
           dict(default=""), config_field="model", check=model_value),
    Option("--benchmark", "the benchmark to run: swe (Claw-SWE-Bench, the default), wildclaw (WildClawBench), or any "
           "installed benchmark package's name", "the pytest_clawswe_benchmark hook of each benchmark's plugin",
           dict(default=None, metavar="NAME")),
    Option("--dataset", "the benchmark's data: for swe claw-swe-bench (350, default), multilingual, verified-mini, "
           "demo, or a path to a swebench task repo, .json/.jsonl/.parquet file or datasets folder; for wildclaw a "
           "checkout of the suite, a folder of task files, or demo", "the benchmark's select()",
           dict(default=None)),
    Option("--regrade", "grade a finished run again, without an agent, into a new run folder (RUN is only read): its "
           "harness, model, dataset and agent settings are RUN's; `clawswe regrade RUN` runs this",
           "run/regrade/__init__.py:source", dict(metavar="RUN")),
    Option("--run-dir", "where the run's outputs go (default: reports/<run id>)", "run/config.py:run_location"),
    Option("--run-id", "name of the run (default: <harness>_<model>_<timestamp>)", "run/config.py:run_location"),
    Option("--resume", "continue a run with its own settings: instances with a final result are kept, the rest run",
           "run/config.py:run_location, check_resume", dict(metavar="RUN_DIR")),
    Option("--budget", "wall-clock seconds the agent may work on one instance (default: %(default)s, as the paper)",
           "RunConfig.budget_s", dict(type=float, default=3600.0), config_field="budget_s", check=positive_seconds),
    Option("--setup-timeout", "seconds an item's setup stage (images, containers, the sandbox's services and warmup) "
           "may take before it is stopped as an error (default: the benchmark's, 1200 for Claw-SWE-Bench, 900 for "
           "WildClawBench)", "RunConfig.setup_timeout_s", dict(type=float, default=None, metavar="SECONDS"),
           config_field="setup_timeout_s", check=optional_seconds),
    Option("--agent-allowance", "seconds the agent stage may take past the budget and the harness's grace (its "
           "set-up, its session backup, the collection of its work) before it is stopped as an error "
           "(default: %(default)s)", "RunConfig.agent_allowance_s", dict(type=float, default=AGENT_ALLOWANCE_S,
                                                                         metavar="SECONDS"),
           config_field="agent_allowance_s", check=positive_seconds),
    Option("--mem-limit", "memory limit of each container, e.g. 8g; none: no limit (default: %(default)s)",
           "RunConfig.mem_limit", dict(default="8g"), config_field="mem_limit", check=memory_limit),
    Option("--pids-limit", "process limit of each container (default: %(default)s)", "RunConfig.pids_limit",
           dict(type=int, default=300), config_field="pids_limit", check=positive_count("processes", 300)),
    Option("--disk-limit", "what an agent's container may write before the agent is stopped (finish reason "
           "disk_limit), e.g. 20g; none: no limit (default: %(default)s)", "RunConfig.disk_limit",
           dict(default="20g"), config_field="disk_limit", check=size("20g, 500m")),
    Option("--no-build-bundles", "refuse to start when the harness's bundle is not built (default: build it on first "
           "use, before the run writes anything)", "run/bundle_check.py:ensure_bundle", dict(action="store_true")),
    Option("--harness-option", "option passed to the harness adapter (repeatable)", "RunConfig.harness_options",
           dict(action="append", default=[], metavar="KEY=VALUE"), config_field="harness_options", check=key_values),
    Option("--network", "locked (Claw-SWE-Bench's default): agents reach the model gateway and nothing else; "
           "internet (WildClawBench's default): also public addresses, never this host, private or link-local "
           "addresses or each other (needs root and iptables); open: Docker's default network as it is",
           "RunConfig.network_mode, network", dict(choices=("locked", "internet", "open"), default=None)),
    Option("--retries", "re-run an attempt that ends in a harness error up to N times, within the same budget "
           "(default: 0, as the released code)", "RunConfig.retries", dict(type=int, default=0, metavar="N"),
           config_field="retries", check=retries),
    Option("--cache-level", "images kept when an item ends: instance (the instance and prepared images), base (what "
           "they are built on), none; auto (default): instance for runs of up to 25 items, else base",
           "RunConfig.cache_level (auto: RunSession.cache_level)",
           dict(choices=("auto", "none", "base", "instance"), default="auto"), config_field="cache_level"),
    Option("--image-cache", "keep instance and prepared images across runs up to SIZE per engine (e.g. 50g), least "
           "recently used removed first; replaces --cache-level", "RunConfig.image_cache", dict(metavar="SIZE")),
    Option("--gateway-shaping", "model-side request shaping in the gateway, as the released proxies did (DashScope "
           "cache marker, zeroclaw's tool filter and Responses->Chat conversion, DeepSeek reasoning): auto (default: "
           "where the released code had it), off, or a comma list (docs/fidelity.md)", "RunConfig.gateway_shaping",
           dict(default="auto", metavar="auto|off|NAME,..."), config_field="gateway_shaping", check=shaping),
    Option("--prices", "YAML/JSON model prices (USD per million tokens) that add to or override the price library's",
           "RunConfig.prices_file, prices_sha256", dict(metavar="FILE"), config_field="prices_file"),
    Option("--max-cost", "spending ceiling of the run: no item starts once the counted cost plus what the running "
           "items are likely to add reaches it (items not started are not run; --resume runs them)",
           "RunConfig.max_cost", dict(type=float, metavar="USD"), config_field="max_cost", check=usd),
    Option("--max-instance-cost", "spending ceiling of one instance: the gateway refuses its model calls past it, and "
           "the patch so far is graded (finish reason cost_limit)", "RunConfig.max_instance_cost",
           dict(type=float, metavar="USD"), config_field="max_instance_cost", check=usd),
    Option("--provider-breaker", "stop starting items after N instances in a row ended in provider errors of the same "
           "kind (401, 402, 429...; default %(default)s; 0: never)", "RunConfig.provider_breaker",
           dict(type=int, default=3, metavar="N"), config_field="provider_breaker", check=breaker),
    Option("--grade-provider-failures", "grade an instance whose provider failed it (as the released code does) "
           "instead of ending it as an error that --resume runs again", "RunConfig.grade_provider_failures",
           dict(action="store_true"), config_field="grade_provider_failures", check=bool_value),
    Option("--no-model-check", "skip the one cheap request per model (the agents', a judge's) that checks the key, "
           "model name and credit first", "run/session.py:RunSession.start", dict(action="store_true")),
    # the run's engines (engine/hosts.py) and its cluster (run/kube_run.py)
    Option("--docker-host", "a Docker engine for the run's containers (repeatable; xdist workers are spread over "
           "them): unix:///var/run/docker.sock, tcp://HOST:2376 (TLS, see --docker-tls-dir) or ssh://USER@HOST "
           "(default: DOCKER_HOST or the local socket)", "engine/hosts.py:hosts",
           dict(action="append", default=[], metavar="URL")),
    Option("--docker-tls-dir", "folder with ca.pem, cert.pem and key.pem for the tcp:// hosts (default: "
           "DOCKER_CERT_PATH, else ~/.docker)", "engine/hosts.py:hosts", dict(metavar="DIR")),
    Option("--registry", "a registry every engine reaches and trusts: images another engine needs are made once on "
           "the first engine, pushed there and pulled by the engine that needs them (default: docker save | load "
           "between the engines; docs/scale-out.md)", "RunConfig.registry (engine/hosts.py:registry)",
           dict(metavar="HOST:PORT")),
    Option("--kubernetes", "run the items' sandboxes as pods of a Kubernetes cluster: the kubeconfig's CONTEXT "
           "(default: its current one; KUBECONFIG as kubectl reads it); needs --registry, which the nodes pull from "
           "(docs/scale-out.md)", "run/kube_run.py:from_config",
           dict(nargs="?", const="", default=None, metavar="CONTEXT")),
)
