"""pytest hooks of pytest-clawswe: its options, its hooks, and the switch into benchmark mode.

`pytest --harness NAME` switches pytest into benchmark mode: the session (run/session.py) collects one item
per selected target of the benchmark that answers the pytest_clawswe_benchmark hook (swe/plugin.py,
wildclaw/plugin.py, or an installed benchmark's plugin) instead of test files, so the project's own tests and
benchmark items never mix. Options every benchmark shares are here; each benchmark adds its own.
"""
from __future__ import annotations

import pytest

from pytest_clawswe.run.session import configure

DEFAULT_WORKERS = 3  # the paper ran 3 instances at once; -n N (also -n 0 / -n 1) wins


def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    """Declare the hooks other plugins may implement (hookspecs.py)."""
    from pytest_clawswe import hookspecs

    pluginmanager.add_hookspecs(hookspecs)


def pytest_addoption(parser: pytest.Parser) -> None:
    """Add the benchmark's command-line options."""
    from pytest_clawswe.run.benchmark import option_group

    g = option_group(parser, "", "pytest-clawswe: agent harnesses on a benchmark (every benchmark's options)")
    g.addoption("--harness", help="run the benchmark with this harness adapter (e.g. openclaw, oracle, nop); "
                                  "without it pytest runs ordinary tests")
    g.addoption("--model", default="", help="model for the harness, e.g. openrouter/z-ai/glm-5.1 or scripted/gold")
    g.addoption("--benchmark", default=None, metavar="NAME",
                help="the benchmark to run: swe (Claw-SWE-Bench, the default), wildclaw (WildClawBench), or any "
                     "installed benchmark package's name")
    g.addoption("--dataset", default=None,
                help="the benchmark's data: for swe claw-swe-bench (350, default), multilingual, verified-mini, "
                     "demo, or a path to a swebench task repo, .json/.jsonl/.parquet file or datasets folder; for "
                     "wildclaw a checkout of the suite, a folder of task files, or demo")
    g.addoption("--regrade", metavar="RUN",
                help="grade a finished run again, without an agent, into a new run folder (RUN is only read): its "
                     "harness, model, dataset and agent settings are RUN's; `clawswe regrade RUN` runs this")
    g.addoption("--run-dir", help="where the run's outputs go (default: reports/<run id>)")
    g.addoption("--run-id", help="name of the run (default: <harness>_<model>_<timestamp>)")
    g.addoption("--resume", metavar="RUN_DIR",
                help="continue a run with its own settings: instances with a final result are kept, the rest run")
    g.addoption("--budget", type=float, default=3600.0,
                help="wall-clock seconds the agent may work on one instance (default: %(default)s, as the paper)")
    g.addoption("--mem-limit", default="8g",
                help="memory limit of each container, e.g. 8g; none: no limit (default: %(default)s)")
    g.addoption("--pids-limit", type=int, default=300, help="process limit of each container (default: %(default)s)")
    g.addoption("--disk-limit", default="20g",
                help="what an agent's container may write before the agent is stopped (finish reason "
                     "disk_limit), e.g. 20g; none: no limit (default: %(default)s)")
    g.addoption("--no-build-bundles", action="store_true",
                help="refuse to start when the harness's bundle is not built (default: build it on first use, "
                     "before the run writes anything)")
    g.addoption("--harness-option", action="append", default=[], metavar="KEY=VALUE",
                help="option passed to the harness adapter (repeatable)")
    g.addoption("--network", choices=("locked", "internet", "open"), default=None,
                help="locked (Claw-SWE-Bench's default): agents reach the model gateway and nothing else; internet "
                     "(WildClawBench's default): also public addresses, never this host, private or link-local "
                     "addresses or each other (needs root and iptables); open: Docker's default network as it is")
    g.addoption("--retries", type=int, default=0, metavar="N",
                help="re-run an attempt that ends in a harness error up to N times, within the same budget "
                     "(default: 0, as the released code)")
    g.addoption("--cache-level", choices=("auto", "none", "base", "instance"), default="auto",
                help="images kept when an item ends: instance (the instance and prepared images), base (what "
                     "they are built on), none; auto (default): instance for runs of up to 25 items, else base")
    g.addoption("--image-cache", metavar="SIZE",
                help="keep instance and prepared images across runs up to SIZE per engine (e.g. 50g), least "
                     "recently used removed first; replaces --cache-level")
    g.addoption("--gateway-shaping", default="auto", metavar="auto|off|NAME,...",
                help="model-side request shaping in the gateway, as the released proxies did (DashScope cache "
                     "marker, zeroclaw's tool filter and Responses->Chat conversion, DeepSeek reasoning): auto "
                     "(default: where the released code had it), off, or a comma list (docs/fidelity.md)")
    g.addoption("--prices", metavar="FILE", help="YAML/JSON model prices (USD per million tokens) that add to or "
                                                 "override the price library's")
    g.addoption("--max-cost", type=float, metavar="USD",
                help="spending ceiling of the run: no item starts once the counted cost plus what the running "
                     "items are likely to add reaches it (items not started are not run; --resume runs them)")
    g.addoption("--max-instance-cost", type=float, metavar="USD",
                help="spending ceiling of one instance: the gateway refuses its model calls past it, and the patch "
                     "so far is graded (finish reason cost_limit)")
    g.addoption("--provider-breaker", type=int, default=3, metavar="N",
                help="stop starting items after N instances in a row ended in provider errors of the same kind "
                     "(401, 402, 429...; default %(default)s; 0: never)")
    g.addoption("--grade-provider-failures", action="store_true",
                help="grade an instance whose provider failed it (as the released code does) instead of ending it "
                     "as an error that --resume runs again")
    g.addoption("--no-model-check", action="store_true",
                help="skip the one cheap request per provider that checks the key, model name and credit first")
    from pytest_clawswe.engine.hosts import add_options
    from pytest_clawswe.run.kube_run import add_options as add_kube_options

    add_options(g)
    add_kube_options(g)


def pytest_ignore_collect(collection_path, config: pytest.Config) -> bool | None:
    """A run folder (it holds run.json) is never collected as tests: it holds swebench's test output and the
    agents' files, which pytest's doctest plugin, or a test file an agent wrote, would take for the project's."""
    if collection_path.is_dir() and (collection_path / "run.json").is_file():
        return True
    return None


def pytest_load_initial_conftests(early_config: pytest.Config, parser, args: list[str]) -> None:
    """Benchmark mode runs DEFAULT_WORKERS xdist workers unless -n (or --dist) says otherwise."""
    import os

    ns = early_config.known_args_namespace
    if not (getattr(ns, "harness", None) or getattr(ns, "regrade", None)) or os.environ.get("PYTEST_XDIST_WORKER"):
        return
    if not early_config.pluginmanager.hasplugin("xdist") or getattr(ns, "collectonly", False):
        return
    if getattr(ns, "numprocesses", None) is not None or getattr(ns, "dist", "no") != "no" or getattr(ns, "usepdb", False):
        return
    args[:] = [*args, "-n", str(DEFAULT_WORKERS)]


def pytest_configure(config: pytest.Config) -> None:
    """With --harness (or --regrade), check everything and start (or join) the run; --benchmark alone lists its
    items."""
    if config.getoption("harness", None) or config.getoption("regrade", None):
        configure(config)
    elif config.getoption("benchmark", None):
        if not config.option.collectonly:
            raise pytest.UsageError(f"--benchmark {config.getoption('benchmark')} runs its items with an agent: give "
                                    "--harness (e.g. openclaw, claude-code, codex, hermes) and --model, or "
                                    "--collect-only to list them")
        config.option.harness = "nop"  # listing runs nothing: no harness, no model
        configure(config)
