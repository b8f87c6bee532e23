"""The scripts in benchmarks/ name modules and objects of the package that still exist: a move of the package
(the redesign) once left bench_overhead.py importing `engine.client.cache_level`, and nothing ran it until a
measurement was due. Every import in them, at the top or inside a function, is resolved here."""
import ast
import importlib
from pathlib import Path

import pytest

BENCHMARKS = sorted((Path(__file__).parent.parent / "benchmarks").glob("*.py"))


def _package_imports(path: Path) -> list[tuple[str, str | None]]:
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("pytest_clawswe"):
            found += [(node.module, alias.name) for alias in node.names]
        elif isinstance(node, ast.Import):
            found += [(alias.name, None) for alias in node.names if alias.name.startswith("pytest_clawswe")]
    return found


def test_there_are_benchmark_scripts_to_check():
    assert len(BENCHMARKS) >= 10 and any(_package_imports(p) for p in BENCHMARKS)


@pytest.mark.parametrize("script", BENCHMARKS, ids=lambda p: p.name)
def test_every_package_import_of_a_benchmark_script_resolves(script):
    missing = []
    for module, name in _package_imports(script):
        try:
            mod = importlib.import_module(module)
        except ImportError as exc:
            missing.append(f"{module}: {exc}")
            continue
        if name is not None and not hasattr(mod, name):
            try:
                importlib.import_module(f"{module}.{name}")
            except ImportError:
                missing.append(f"{module}.{name}")
    assert not missing, f"{script.name} imports what the package no longer has: {missing}"
