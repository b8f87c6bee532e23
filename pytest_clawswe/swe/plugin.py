"""pytest hooks of Claw-SWE-Bench (pytest11 entry point "clawswe-swe"): its options, markers and benchmark.

It answers the pytest_clawswe_benchmark hook when no --benchmark is given (the default benchmark) or
--benchmark swe. Its options select it as --benchmark swe does (`pytest --lite --collect-only` lists the Lite set
with no harness), and so does --dataset or a -m made only of its language groups, when no benchmark is named.
"""
from __future__ import annotations

import re

import pytest

from pytest_clawswe.run.options import add_options
from pytest_clawswe.swe.dataset import LANGUAGE_MARKERS, UNKNOWN_MARKER
from pytest_clawswe.swe.options import GROUP, OPTIONS

DEFAULT_DATASET = "claw-swe-bench"


def pytest_addoption(parser: pytest.Parser) -> None:
    add_options(parser, GROUP, "Claw-SWE-Bench: coding-agent harnesses on SWE-bench-style instances", OPTIONS)


def _language_selection(config: pytest.Config) -> bool:
    """-m names only language groups (`-m go`, `-m "go or js_ts"`) that the project itself does not declare."""
    names = set(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", config.getoption("markexpr", "") or "")) - {"and", "or", "not"}
    ours = {*LANGUAGE_MARKERS.values(), UNKNOWN_MARKER}
    declared = {line.split(":")[0].split("(")[0].strip() for line in config.getini("markers")}
    return bool(names) and names <= ours and not names & declared


def _selects_swe(config: pytest.Config) -> bool:
    """Without --harness or --benchmark: an option that only Claw-SWE-Bench reads selects it (a regrade's benchmark is
    the run's own: run/regrade/)."""
    if config.getoption("harness", None) or config.getoption("benchmark", None) or config.getoption("regrade", None):
        return False
    return any(option.given(config) for option in OPTIONS) or config.getoption("dataset", None) is not None \
        or _language_selection(config)


def is_swe(config: pytest.Config) -> bool:
    return config.getoption("benchmark", None) in (None, "swe")


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    """Register the markers; select the benchmark by its options; the default dataset (before the run's session
    reads the options)."""
    if _selects_swe(config):
        config.option.benchmark = "swe"  # then plugin.py lists its items with no harness, or asks for one
    for language, marker in LANGUAGE_MARKERS.items():
        config.addinivalue_line("markers", f"{marker}: instances of the {language} language group")
    config.addinivalue_line("markers", f"{UNKNOWN_MARKER}: instances whose language group is not known")
    config.addinivalue_line("markers", "clawswe: a Claw-SWE-Bench instance item")
    # (a regrade takes the dataset of the run it grades: run/regrade/)
    if is_swe(config) and config.getoption("dataset", None) is None and not config.getoption("regrade", None):
        config.option.dataset = DEFAULT_DATASET


@pytest.hookimpl
def pytest_clawswe_benchmark(config: pytest.Config):
    """Claw-SWE-Bench: the default benchmark, and --benchmark swe."""
    if not is_swe(config):
        return None
    from pytest_clawswe.swe.benchmark import ClawSweBench

    return ClawSweBench(config)
