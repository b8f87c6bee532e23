"""One home per setting (issue 33): the run's settings are frozen once made, so no phase of a run can change
what another phase reads."""
from __future__ import annotations

import ast
import dataclasses
from pathlib import Path

import pytest

import pytest_clawswe
from pytest_clawswe.run.benchmark import option_tables
from pytest_clawswe.run.config import RunConfig
from pytest_clawswe.run.options import OPTIONS as CORE_OPTIONS
from pytest_clawswe.swe.benchmark import ClawSweBench
from pytest_clawswe.swe.options import OPTIONS as SWE_OPTIONS
from pytest_clawswe.swe.options import SweOptions
from pytest_clawswe.wildclaw.benchmark import WildClawBench
from pytest_clawswe.wildclaw.options import OPTIONS as WILD_OPTIONS
from pytest_clawswe.wildclaw.options import WildOptions

PACKAGE = Path(pytest_clawswe.__file__).parent
TABLES = (CORE_OPTIONS, SWE_OPTIONS, WILD_OPTIONS)


def test_run_config_is_frozen(tmp_path):
    cfg = RunConfig("r", tmp_path, "oracle", "")
    assert dataclasses.fields(cfg)  # a dataclass
    with pytest.raises(dataclasses.FrozenInstanceError):
        cfg.budget_s = 1.0  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        cfg.cache_level = "none"  # type: ignore[misc]


def test_claw_swe_bench_options_are_frozen_and_not_in_the_run_config():
    opts = SweOptions()
    with pytest.raises(dataclasses.FrozenInstanceError):
        opts.purge = False  # type: ignore[misc]
    # the core's RunConfig names no Claw-SWE-Bench setting (run.json still has them: ClawSweBench.run_info)
    assert {"eval_timeout_s", "purge", "dataset_revision"} & {f.name for f in dataclasses.fields(RunConfig)} == set()


def test_wildclawbench_options_are_frozen(tmp_path):
    opts = WildOptions(tmp_path)
    assert dataclasses.fields(opts)
    with pytest.raises(dataclasses.FrozenInstanceError):
        opts.budget_factor = 2.0  # type: ignore[misc]


def _addoption_calls(path: Path) -> list[int]:
    return [node.lineno for node in ast.walk(ast.parse(path.read_text()))
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "addoption"]


def test_every_option_of_the_package_is_a_row_of_a_table():
    """Options are declared in three tables (run/options.py, swe/options.py, wildclaw/options.py), each row naming
    its reader; the only addoption call is the one that adds a table's rows."""
    calls = {str(path.relative_to(PACKAGE)): lines for path in sorted(PACKAGE.rglob("*.py"))
             if (lines := _addoption_calls(path))}
    assert list(calls) == ["run/options.py"] and len(calls["run/options.py"]) == 1, calls
    flags = [option.flag for table in TABLES for option in table]
    assert len(flags) == len(set(flags)), "a flag declared twice"
    assert all(option.reads and option.help for table in TABLES for option in table)


def test_the_core_table_reads_run_config_fields():
    """A row that fills a RunConfig field (run/options.read_fields) names it as where it is read."""
    names = {f.name for f in dataclasses.fields(RunConfig)}
    filled = [o for o in CORE_OPTIONS if o.config_field]
    assert len(filled) >= 10 and all(o.config_field in names for o in filled)
    assert all(f"RunConfig.{o.config_field}" in o.reads for o in filled)
    assert len({o.config_field for o in filled}) == len(filled)


def test_the_tables_are_what_pytest_knows(pytestconfig):
    """Every row is an option pytest parsed (its dest is on config.option), and the benchmarks' tables are what their
    Benchmark classes declare (run/benchmark.check_options walks those)."""
    known = vars(pytestconfig.option)
    assert [o.flag for table in TABLES for o in table if o.dest not in known] == []
    assert ClawSweBench.declared_options is SWE_OPTIONS and WildClawBench.declared_options is WILD_OPTIONS
    owners = dict(option_tables())
    assert owners[""] is CORE_OPTIONS and owners["swe"] is SWE_OPTIONS and owners["wildclaw"] is WILD_OPTIONS

