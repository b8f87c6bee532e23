"""The layout docs/architecture.md draws, held by a test: one core that names no benchmark, benchmark packages
as peers, imports down the layers only, no import cycle, no module over 450 lines (tests/import_graph.py reads the
imports with ast)."""
import ast
from pathlib import Path

import pytest
from import_graph import (
    LAYER_EXCEPTIONS,
    LAYERS,
    LONG_FUNCTION_EXCEPTIONS,
    MAX_FUNCTION_LINES,
    MAX_LINES,
    ONE_JOB_NAMES,
    Graph,
    installed_benchmark_packages,
    layers,
    names_in_two_folders,
)

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def graph() -> Graph:
    return Graph.read(ROOT)


def test_benchmarks_are_the_installed_entry_points():
    assert installed_benchmark_packages() == ["pytest_clawswe.swe", "pytest_clawswe.wildclaw"]


def test_no_function_over_60_lines(graph):
    """A function a newcomer reads in one screen: none over MAX_FUNCTION_LINES but the allow-listed few, each
    with its reason (tests/import_graph.py)."""
    long = graph.long_function_names(MAX_FUNCTION_LINES)
    assert [f for f in long if f not in LONG_FUNCTION_EXCEPTIONS] == [], "split these into named steps"
    assert all(LONG_FUNCTION_EXCEPTIONS.values())


def test_a_long_function_is_found(tmp_path):
    pkg = tmp_path / "pytest_clawswe"
    (pkg / "run").mkdir(parents=True)
    (pkg / "run" / "a.py").write_text("def long():\n" + "    x = 1\n" * MAX_FUNCTION_LINES + "\n\ndef short():\n"
                                      "    return 1\n")
    assert Graph.read(tmp_path).long_function_names(MAX_FUNCTION_LINES) == ["pytest_clawswe.run.a.long"]


def test_no_import_cycle(graph):
    assert graph.cycles() == []


def test_the_core_imports_no_benchmark_and_benchmarks_not_each_other(graph):
    assert graph.arrows_back_up(installed_benchmark_packages()) == []


def test_imports_go_down_the_layers(graph):
    """doors > benchmarks > report > run > trajectory > harness > gateway > engine > vocabulary: a module imports
    its own layer or a lower one, and every module is in a layer."""
    up, placeless = graph.layer_breaks(layers(installed_benchmark_packages()))
    assert placeless == [], "put these in a layer of tests/import_graph.py's LAYERS (and docs/architecture.md)"
    assert [a for a in up if a not in LAYER_EXCEPTIONS] == [], "these import a higher layer"
    assert [a for a in LAYER_EXCEPTIONS if a not in up] == [], "these allowed arrows are gone: strike them"


def test_a_benchmark_of_our_own_imports_only_the_authors_face():
    """tests/tinybench, a benchmark and harness written as an author outside the package would, imports from
    pytest_clawswe.api alone; every name that face offers is there and is defined elsewhere (it only hands names on)."""
    import pytest_clawswe.api as face

    imported = set()
    for path in (ROOT / "tests" / "tinybench").glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and not node.level:
                imported.add(node.module or "")
            elif isinstance(node, ast.Import):
                imported.update(a.name for a in node.names)
    assert sorted(m for m in imported if m.split(".")[0] == "pytest_clawswe") == ["pytest_clawswe.api"]
    offered = [n for n in vars(face) if n.isidentifier() and not n.startswith("_")]  # (not pytest's own, "@py_...")
    assert sorted(face.__all__) == sorted(offered)
    assert all(getattr(face, name).__module__ != face.__name__ for name in face.__all__)


def test_no_module_over_the_limit(graph):
    assert graph.oversized() == [], f"split these by job (limit {MAX_LINES} lines)"


def test_the_checks_find_what_they_look_for(tmp_path):
    """The rules above fail on a layout that breaks them (a check that cannot fail checks nothing)."""
    pkg = tmp_path / "pytest_clawswe"
    for folder in ("run", "mybench", "other", "mybench/mock"):
        (pkg / folder).mkdir(parents=True)
        (pkg / folder / "__init__.py").write_text("")
    (pkg / "__init__.py").write_text("")
    (pkg / "run" / "a.py").write_text("from pytest_clawswe.run import b\n")
    (pkg / "run" / "b.py").write_text("def f():\n    from . import a\n    from pytest_clawswe.mybench.x import y\n")
    (pkg / "mybench" / "x.py").write_text("y = 1\n" + "z = 2\n" * MAX_LINES)
    (pkg / "mybench" / "mock" / "inside.py").write_text("import os\n" * (MAX_LINES + 1))  # skipped: its own root
    (pkg / "other" / "z.py").write_text("import pytest_clawswe.mybench.x\n")
    g = Graph.read(tmp_path)
    assert g.cycles() == [["pytest_clawswe.run.a", "pytest_clawswe.run.b"]]
    assert g.arrows_back_up(["pytest_clawswe.mybench", "pytest_clawswe.other"]) == [
        ("pytest_clawswe.other.z", "pytest_clawswe.mybench.x"), ("pytest_clawswe.run.b", "pytest_clawswe.mybench.x")]
    assert g.oversized() == [("pytest_clawswe.mybench.x", MAX_LINES + 1)]


def test_the_layer_check_finds_what_it_looks_for(tmp_path):
    """An import from a lower layer into a higher one, and a module in no layer, are found; imports down, and
    within a layer, are not (a check that cannot fail checks nothing)."""
    pkg = tmp_path / "pytest_clawswe"
    for folder in ("run", "engine", "gateway", "harness", "mybench", "elsewhere"):
        (pkg / folder).mkdir(parents=True)
        (pkg / folder / "__init__.py").write_text("")
    (pkg / "__init__.py").write_text("")
    (pkg / "plugin.py").write_text("from pytest_clawswe.mybench import bench\nfrom pytest_clawswe.run import a\n")
    (pkg / "mybench" / "bench.py").write_text("from pytest_clawswe.run.a import x\n")
    (pkg / "run" / "a.py").write_text("from pytest_clawswe.engine import w\nfrom pytest_clawswe.run import b\n")
    (pkg / "run" / "b.py").write_text("from pytest_clawswe import errors\n")
    (pkg / "engine" / "w.py").write_text("def f():\n    from pytest_clawswe.run.b import y\n")  # up: engine -> run
    (pkg / "gateway" / "g.py").write_text("import pytest_clawswe.harness.h\n")  # up: gateway -> harness
    (pkg / "harness" / "h.py").write_text("from pytest_clawswe.gateway import g\n")  # down (a cycle, checked apart)
    (pkg / "errors.py").write_text("from pytest_clawswe.mybench.bench import x\n")  # up: vocabulary -> benchmark
    (pkg / "elsewhere" / "z.py").write_text("")  # in no layer
    up, placeless = Graph.read(tmp_path).layer_breaks(layers(["pytest_clawswe.mybench", "other_package.bench"]))
    assert up == [("pytest_clawswe.engine.w", "pytest_clawswe.run.b"), ("pytest_clawswe.errors", "pytest_clawswe.mybench.bench"),
                  ("pytest_clawswe.gateway.g", "pytest_clawswe.harness.h")]
    assert placeless == ["pytest_clawswe.elsewhere", "pytest_clawswe.elsewhere.z"]
    assert [name for name, _ in LAYERS] == ["doors", "benchmarks", "report", "run", "trajectory", "harness", "gateway",
                                            "engine", "vocabulary"]


MAX_MODULES_PER_FOLDER = 15  # issue 33: a folder a newcomer takes in at a glance; more is a subpackage by job


def folders_over(root: Path, limit: int) -> list[tuple[str, int]]:
    counts = ((folder, len(list(folder.glob("*.py")))) for folder in [root, *root.rglob("*")] if folder.is_dir())
    return sorted((folder.relative_to(root.parent).as_posix(), n) for folder, n in counts if n > limit)


def test_no_folder_over_15_modules():
    assert folders_over(ROOT / "pytest_clawswe", MAX_MODULES_PER_FOLDER) == [], "group these into subpackages by job"


def test_a_crowded_folder_is_found(tmp_path):
    (tmp_path / "pkg" / "sub").mkdir(parents=True)
    for n in range(MAX_MODULES_PER_FOLDER + 1):
        (tmp_path / "pkg" / "sub" / f"m{n}.py").write_text("")
    (tmp_path / "pkg" / "one.py").write_text("")
    assert folders_over(tmp_path / "pkg", MAX_MODULES_PER_FOLDER) == [("pkg/sub", MAX_MODULES_PER_FOLDER + 1)]


def test_a_module_name_in_two_folders_means_one_job_in_both():
    """A newcomer who knows what one cli.py or runner.py does knows them all: a name used in two folders is on
    ONE_JOB_NAMES (tests/import_graph.py) with its one job; any other is used once."""
    twice = names_in_two_folders(ROOT / "pytest_clawswe")
    assert {n: w for n, w in twice.items() if n not in ONE_JOB_NAMES} == {}, \
        "two jobs under one name: rename one, or list the name with the one job it has everywhere"
    assert [n for n in ONE_JOB_NAMES if n not in twice] == [], "these listed names are used once now: strike them"
    assert all(ONE_JOB_NAMES.values())


def test_a_name_in_two_folders_is_found(tmp_path):
    for folder in ("pkg/a", "pkg/b/c"):
        (tmp_path / folder).mkdir(parents=True)
        for name in ("__init__.py", "search.py", "cli.py"):
            (tmp_path / folder / name).write_text("")
    (tmp_path / "pkg" / "a" / "once.py").write_text("")
    assert names_in_two_folders(tmp_path / "pkg") == {"cli.py": ["pkg/a", "pkg/b/c"], "search.py": ["pkg/a", "pkg/b/c"]}
