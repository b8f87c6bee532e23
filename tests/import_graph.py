"""The package's import graph, read with `ast`, and the layout rules docs/architecture.md states: no cycle, no
import from the core into a benchmark package or between two of them, imports down the layers only (LAYERS), no
module over MAX_LINES lines.

Every import counts, those inside functions too. tests/test_architecture.py holds the code to these rules; run
`python tests/import_graph.py` for the figures (modules, arrows, cycles, arrows back up, arrows up the layers);
`python tests/import_graph.py --floors [pytest_clawswe.gateway]` for the floors of the package's (or a folder's) units;
`python tests/import_graph.py --long-functions [60]` for the functions longer than that.
"""
from __future__ import annotations

import ast
import sys
from dataclasses import dataclass, field
from pathlib import Path

MAX_LINES = 450
PACKAGE = "pytest_clawswe"
SKIP = ("data", "mock")  # shipped data; the code run inside the WildClawBench sidecar (stdlib only, its own root)
BENCHMARKS = "benchmarks"  # in LAYERS: the packages the clawswe.benchmarks entry points name
# The layers of docs/architecture.md, top first: a module imports its own layer or a lower one. Each names the
# package's top-level modules and folders it holds.
LAYERS: list[tuple[str, tuple[str, ...]]] = [
    ("doors", ("plugin", "cli", "hookspecs", "api")),
    (BENCHMARKS, ()),
    ("report", ("report",)),
    ("run", ("run",)),
    ("trajectory", ("trajectory",)),
    ("harness", ("harness",)),
    ("gateway", ("gateway",)),
    ("engine", ("engine",)),
    ("vocabulary", ("errors", "labels", "paths", "files", "usage", "prices", "model")),
]
# Arrows that run up the layers today, each kept until the move that ends it (issue 33's stage B empties it):
# (importer, imported): why it is still there.
LAYER_EXCEPTIONS: dict[tuple[str, str], str] = {}
MAX_FUNCTION_LINES = 60
# Functions allowed over MAX_FUNCTION_LINES, "module.name": why each must stay long (none today).
LONG_FUNCTION_EXCEPTIONS: dict[str, str] = {
}
# Module file names that stand in more than one folder of the package (issue 33: no module named twice for two
# jobs): each means one job wherever it stands. A new name in a second folder, for another job, takes its own name.
ONE_JOB_NAMES: dict[str, str] = {
    "cli.py": "the `clawswe` command (the package's top), or a package's subcommands of it",
    "plugin.py": "a package's pytest hooks and options",
    "options.py": "a package's command-line options, declared in one table, and the frozen object they make",
    "paths.py": "where a package's shipped data lives",
    "benchmark.py": "the Benchmark the run session asks: the base and its registry (run/), each benchmark's own",
    "items.py": "a benchmark's pytest collector and items",
    "runner.py": "an item's runner: the base every benchmark's runner extends (run/item/), a benchmark's own",
    "phases.py": "an item's run as named phases: how they run (run/item/), a benchmark's list of them",
    "regrade.py": "a benchmark's items graded again (`clawswe regrade`)",
    "images.py": "the container images a package's runs need, made or found",
    "html.py": "a report's HTML page",
    "tables.py": "a report's tables, Markdown and CSV",
    "app.py": "an HTTP service's process side: its listeners, routes and handlers (the gateway's, the mock services')",
}


@dataclass
class Graph:
    modules: dict[str, Path]
    arrows: set[tuple[str, str]] = field(default_factory=set)

    @classmethod
    def read(cls, root: Path, package: str = PACKAGE) -> Graph:
        pkg = root / package
        modules = {}
        for path in sorted(pkg.rglob("*.py")):
            if any(part in SKIP for part in path.relative_to(pkg).parts[:-1]):
                continue
            parts = list(path.relative_to(root).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts = parts[:-1]
            modules[".".join(parts)] = path
        graph = cls(modules)
        for name, path in modules.items():
            for node in ast.walk(ast.parse(path.read_text())):
                if isinstance(node, (ast.Import, ast.ImportFrom)):
                    for target in graph._targets(name, node):
                        if target != name:
                            graph.arrows.add((name, target))
        return graph

    def _targets(self, name: str, node: ast.Import | ast.ImportFrom) -> list[str]:
        if isinstance(node, ast.Import):
            found = [a.name for a in node.names]
        else:
            base: list[str] = []
            if node.level:
                parts = name.split(".")
                keep = len(parts) - node.level + (self.modules[name].name == "__init__.py")
                base = parts[:keep]
            module = ".".join(base + ([node.module] if node.module else []))
            found = [f"{module}.{a.name}" if f"{module}.{a.name}" in self.modules else module for a in node.names]
        out = []
        for target in found:
            while target and target not in self.modules:  # a name inside a module: the module
                target = target.rpartition(".")[0]
            if target:
                out.append(target)
        return out

    def cycles(self) -> list[list[str]]:
        """Strongly connected components of more than one module (Tarjan, iterative)."""
        succ: dict[str, list[str]] = {m: [] for m in self.modules}
        for a, b in self.arrows:
            succ[a].append(b)
        index: dict[str, int] = {}
        low: dict[str, int] = {}
        stack: list[str] = []
        on: set[str] = set()
        found = []
        for root in sorted(self.modules):
            if root in index:
                continue
            work = [(root, iter(sorted(succ[root])))]
            index[root] = low[root] = len(index)
            stack.append(root)
            on.add(root)
            while work:
                v, it = work[-1]
                w = next(it, None)
                if w is not None:
                    if w not in index:
                        index[w] = low[w] = len(index)
                        stack.append(w)
                        on.add(w)
                        work.append((w, iter(sorted(succ[w]))))
                    elif w in on:
                        low[v] = min(low[v], index[w])
                    continue
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[v])
                if low[v] == index[v]:
                    component = []
                    while True:
                        w = stack.pop()
                        on.discard(w)
                        component.append(w)
                        if w == v:
                            break
                    if len(component) > 1:
                        found.append(sorted(component))
        return found

    def arrows_back_up(self, benchmarks: list[str]) -> list[tuple[str, str]]:
        """Arrows from the core into a benchmark package, or from one benchmark package into another."""
        def owner(module: str) -> str | None:
            return next((b for b in benchmarks if module == b or module.startswith(b + ".")), None)

        return sorted((a, b) for a, b in self.arrows if owner(b) is not None and owner(a) != owner(b))

    def layer_breaks(self, layers: list[tuple[str, tuple[str, ...]]]) -> tuple[list[tuple[str, str]], list[str]]:
        """(arrows from a module to one in a higher layer, modules in no layer): `layers` top first, each a name
        and the top-level modules and folders of the package it holds. The package's own __init__ is in none."""
        rank = {top: number for number, (_, holds) in enumerate(layers) for top in holds}
        ranks = {m: rank.get(m.split(".")[1]) for m in self.modules if "." in m}
        up = sorted((a, b) for a, b in self.arrows
                    if ranks.get(a) is not None and ranks.get(b) is not None and ranks[a] > ranks[b])  # type: ignore[operator]
        return up, sorted(m for m, r in ranks.items() if r is None)

    def floors(self, inside: str = PACKAGE) -> dict[str, int]:
        """The floor of each unit under `inside` (a module, or a folder taken as one): 1 for a unit that imports
        no other, else one above the highest it imports (imports inside functions too). The units' arrows only;
        a unit in a cycle (there is none) takes the floor of the first pass."""
        depth = inside.count(".") + 1

        def unit(module: str) -> str | None:
            if module != inside and not module.startswith(inside + "."):
                return None
            return ".".join(module.split(".")[:depth + 1]) if module != inside else None

        units = {u for u in map(unit, self.modules) if u}
        under = {(unit(a), unit(b)) for a, b in self.arrows}
        succ = {u: {b for a, b in under if a == u and b and b != u} for u in units}
        floor: dict[str, int] = {}

        def rise(u: str, seen: tuple = ()) -> int:
            if u not in floor:
                below = [rise(b, (*seen, u)) for b in succ[u] if b not in seen]
                floor[u] = 1 + max(below, default=0)
            return floor[u]

        for u in sorted(units):
            rise(u)
        return floor

    def long_function_names(self, limit: int = MAX_FUNCTION_LINES) -> list[str]:
        """"module.name" of every function or method longer than `limit` lines."""
        return sorted({f"{where.split(':')[0]}.{where.split(' ')[1]}" for _, where in self.long_functions(limit)})

    def long_functions(self, limit: int = 60) -> list[tuple[int, str]]:
        """(lines, module:line name) of every function or method longer than `limit` lines, longest first."""
        found = []
        for module, path in self.modules.items():
            for node in ast.walk(ast.parse(path.read_text())):
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    lines = (node.end_lineno or node.lineno) - node.lineno + 1
                    if lines > limit:
                        found.append((lines, f"{module}:{node.lineno} {node.name}"))
        return sorted(found, reverse=True)

    def oversized(self, max_lines: int = MAX_LINES) -> list[tuple[str, int]]:
        sizes = ((m, len(p.read_text().splitlines())) for m, p in self.modules.items())
        return sorted((m, n) for m, n in sizes if n > max_lines)


def names_in_two_folders(package_dir: Path) -> dict[str, list[str]]:
    """Module file names (not __init__.py or __main__.py) that stand in more than one folder under package_dir:
    name -> those folders, relative to package_dir's parent."""
    folders: dict[str, list[str]] = {}
    for path in sorted(package_dir.rglob("*.py")):
        if path.name not in ("__init__.py", "__main__.py"):
            folders.setdefault(path.name, []).append(path.parent.relative_to(package_dir.parent).as_posix())
    return {name: where for name, where in sorted(folders.items()) if len(where) > 1}


def layers(benchmarks: list[str], package: str = PACKAGE) -> list[tuple[str, tuple[str, ...]]]:
    """LAYERS with the benchmark layer holding `benchmarks` (packages such as pytest_clawswe.swe; one outside
    `package` is no module of its graph)."""
    mine = tuple(b.split(".")[1] for b in benchmarks if b.startswith(package + "."))
    return [(name, mine if name == BENCHMARKS else holds) for name, holds in LAYERS]


def installed_benchmark_packages() -> list[str]:
    """The packages the clawswe.benchmarks entry points name (a benchmark's Benchmark class lives in it)."""
    from importlib.metadata import entry_points

    return sorted({ep.value.split(":")[0].rpartition(".")[0] for ep in entry_points(group="clawswe.benchmarks")})


def print_floors(graph: Graph, inside: str) -> None:
    """`--floors [PACKAGE.FOLDER]`: each unit's floor, top first, with its modules and lines."""
    floors = graph.floors(inside)
    lines = {u: sum(len(p.read_text().splitlines()) for m, p in graph.modules.items() if m == u or m.startswith(u + "."))
             for u in floors}
    count = {u: sum(1 for m in graph.modules if m == u or m.startswith(u + ".")) for u in floors}
    arrows = {(a, b) for a, b in graph.arrows if a in floors and b in floors} | {
        (ua, ub) for a, b in graph.arrows for ua in floors for ub in floors
        if ua != ub and (a == ua or a.startswith(ua + ".")) and (b == ub or b.startswith(ub + "."))}
    print(f"{inside}: {len(floors)} units on {max(floors.values(), default=0)} floors, {len(arrows)} arrows between them")
    for unit, floor in sorted(floors.items(), key=lambda x: (-x[1], x[0])):
        print(f"  floor {floor:2d}  {unit.removeprefix(inside + '.')}  {count[unit]} modules, {lines[unit]} lines")


def main() -> int:
    root = Path(__file__).resolve().parents[1]
    graph = Graph.read(root)
    if sys.argv[1:2] == ["--floors"]:
        print_floors(graph, sys.argv[2] if len(sys.argv) > 2 else PACKAGE)
        return 0
    if sys.argv[1:2] == ["--long-functions"]:
        for lines, where in graph.long_functions(int(sys.argv[2]) if len(sys.argv) > 2 else 60):
            print(f"{lines:4d}  {where}")
        return 0
    benchmarks = installed_benchmark_packages()
    sizes = sorted(((len(p.read_text().splitlines()), m) for m, p in graph.modules.items()), reverse=True)
    up, placeless = graph.layer_breaks(layers(benchmarks))
    print(f"{len(graph.modules)} modules, {len(graph.arrows)} arrows, {len(graph.cycles())} cycles, "
          f"{len(graph.arrows_back_up(benchmarks))} arrows back up (benchmarks: {', '.join(benchmarks)}), "
          f"{len(up)} up the layers ({len(LAYER_EXCEPTIONS)} allowed), {len(placeless)} in no layer; "
          f"largest: {sizes[0][1]} {sizes[0][0]}")
    for a, b in up:
        print(f"  up the layers: {a} -> {b}" + (f" (allowed: {LAYER_EXCEPTIONS[a, b]})" if (a, b) in LAYER_EXCEPTIONS else ""))
    for module in placeless:
        print(f"  in no layer: {module}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
