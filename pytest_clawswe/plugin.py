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
    """Add the options every benchmark shares (run/options.py's table; each benchmark's plugin adds its own)."""
    from pytest_clawswe.run.options import CORE_GROUP, OPTIONS, add_options

    add_options(parser, CORE_GROUP, "pytest-clawswe: agent harnesses on a benchmark (every benchmark's options)", OPTIONS)


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
