"""pytest hooks of Claw-SWE-Bench (pytest11 entry point "clawswe-swe"): its options, markers and benchmark.

It answers the pytest_clawswe_benchmark hook when no --benchmark is given (the default benchmark) or
--benchmark swe.
"""
from __future__ import annotations

import pytest

from pytest_clawswe.run.benchmark import option_group
from pytest_clawswe.swe.dataset import LANGUAGE_MARKERS, UNKNOWN_MARKER

DEFAULT_DATASET = "claw-swe-bench"


def pytest_addoption(parser: pytest.Parser) -> None:
    g = option_group(parser, "swe", "Claw-SWE-Bench: coding-agent harnesses on SWE-bench-style instances")
    g.addoption("--lite", action="store_true", help="only the 80 Claw-SWE-Bench Lite instances")
    g.addoption("--instance-ids", default="", help="comma- or space-separated instance ids to run")
    g.addoption("--instances-file", help="file with one instance id per line (e.g. from `clawswe lite select`)")
    g.addoption("--dataset-revision", help="pin the Hugging Face dataset revision (commit or tag)")
    g.addoption("--eval-timeout", type=float, default=1800.0, help="seconds for the evaluation's test run")
    g.addoption("--no-purge", action="store_true",
                help="ABLATION (paper §5.3): keep the image's future commits; results are not comparable")
    g.addoption("--health", metavar="FILE",
                help="a health file (`clawswe health`; `demo`: the demo set's, shipped): items on instances it calls "
                     "flaky, broken or too slow are marked, and Pass@1 is also given over the healthy ones")


def is_swe(config: pytest.Config) -> bool:
    return config.getoption("benchmark", None) in (None, "swe")


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    """Register the markers; the default dataset (before the run's session reads the options)."""
    for language, marker in LANGUAGE_MARKERS.items():
        config.addinivalue_line("markers", f"{marker}: instances of the {language} language group")
    config.addinivalue_line("markers", f"{UNKNOWN_MARKER}: instances whose language group is not known")
    config.addinivalue_line("markers", "clawswe: a Claw-SWE-Bench instance item")
    if is_swe(config) and config.getoption("dataset", None) is None:
        config.option.dataset = DEFAULT_DATASET


@pytest.hookimpl
def pytest_clawswe_benchmark(config: pytest.Config):
    """Claw-SWE-Bench: the default benchmark, and --benchmark swe."""
    if not is_swe(config):
        return None
    from pytest_clawswe.swe.benchmark import ClawSweBench

    return ClawSweBench(config)
