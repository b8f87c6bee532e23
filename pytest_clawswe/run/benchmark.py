"""What the run session asks of a benchmark, and the registry of installed benchmarks.

The session (run/session.py) owns the run: folder, run.json, gateway, Docker sweep, interrupts. A benchmark
owns what is collected and how one item runs; the session asks its Benchmark object, never its name. A
benchmark is a package of its own with two entry points (docs/architecture.md): its pytest plugin, which
answers the pytest_clawswe_benchmark hook, and its Benchmark class (group clawswe.benchmarks), which
`clawswe report` and `clawswe` subcommands use outside pytest:

    def pytest_clawswe_benchmark(config):            # mybench/plugin.py (a pytest11 entry point)
        return MyBench(config) if config.getoption("benchmark") == "mybench" else None

    OPTIONS = (Option("--my-option", "what it does", "MyBench.select", dict(default="")),)

    def pytest_addoption(parser):                     # its own options: a run of another benchmark refuses them
        add_options(parser, "clawswe-mybench", "MyBench", OPTIONS)

    class MyBench(Benchmark):
        name = "mybench"
        declared_options = OPTIONS
        def select(self): ...            # its targets, checked; raise pytest.UsageError for bad input
        def collector(self, session): ...  # a BenchmarkCollector (item.py) whose children are BenchmarkItems
        def runner(self, session): ...   # an ItemRunner (item_runner.py): what its items call to run one
        def rebuild(self, run_dir): ...  # its run-level files (and progress_line, junit_properties,
                                         # terminal_lines, run_info, start_run where it has something to say)

Its items are BenchmarkItems (item.py): their setup runs the item with the runner and reports the result to
the session, so the pytest_clawswe_instance_result hook and the run's files see every benchmark alike.
"""
from __future__ import annotations

from typing import Any

import pytest

from pytest_clawswe.model import Model
from pytest_clawswe.run.options import Option


REGRADE_KEY = pytest.StashKey[Any]()  # run/regrade/ puts the run --regrade names here, once checked


class Benchmark:
    """One benchmark as the session sees it; subclasses fill in the three methods."""

    name = "benchmark"
    # its own options (run/options.py's Option rows), which its plugin adds in pytest_addoption; a run of another
    # benchmark refuses them when given (check_options)
    declared_options: tuple[Option, ...] = ()
    # options of every benchmark (plugin.py's group) this one does not read: given, they are refused
    unread_options: tuple[str, ...] = ()
    # what to do instead of another benchmark's option (its dest -> a short phrase), e.g. how to select items
    instead_of: dict[str, str] = {}
    # the agents' network when --network is not given (run/config.resolve_network): locked, internet or open
    default_network = "locked"

    def __init__(self, config: pytest.Config):
        self.config = config
        # --regrade RUN: the run this one grades again (run/regrade/'s Source, checked before), else None
        self.regrade = config.stash.get(REGRADE_KEY, None)

    def select(self) -> list:
        """The selected instances, every one checked; pytest.UsageError (one sentence) for bad input.

        Called in the controller before the run writes anything, and again (cached) when collecting."""
        raise NotImplementedError

    def collector(self, session: pytest.Session) -> pytest.Collector:
        """The root collector: its children are the items."""
        raise NotImplementedError

    def runner(self, run_session):
        """The item_runner.ItemRunner the items of this process use to run one instance (closed at the end)."""
        raise NotImplementedError

    def harness_defaults(self, harness: str) -> dict[str, str]:
        """Harness options this benchmark sets unless the user gives them (--harness-option wins)."""
        return {}

    # -- the run's own files: the session calls these; each benchmark writes its own ------------------
    def run_info(self) -> dict:
        """Extra keys for run.json (settings of this benchmark that a report or a resume needs)."""
        return {}

    # run_info keys -> the option that sets them, named when a resume is refused for a different value
    run_info_options: dict[str, str] = {}

    def start_run(self, run_dir) -> None:
        """Called once in the controller after the run folder and gateway exist."""

    def rebuild(self, run_dir):
        """Rebuild the run-level files from the per-item folders; returns the results (OSError: disk trouble)."""
        raise NotImplementedError

    def progress_line(self, results, total: int | None) -> str | None:
        """One line of progress after an item ended, or None."""
        return None

    def junit_properties(self, run_dir) -> list[tuple[str, object]]:
        """Run totals for the JUnit file's global properties."""
        return []

    def terminal_lines(self, run_dir) -> list[str]:
        """The run's totals for the terminal summary (empty: nothing to say)."""
        return []

    def warning_lines(self, run_dir) -> list[str]:
        """Lines the terminal summary shows in red before the totals (e.g. an ablation's results are not
        comparable)."""
        return []

    def check_engines(self, hosts: list, needs_model: bool) -> None:
        """Refuse engines this benchmark cannot use yet (pytest.UsageError, one sentence); all are fine here."""

    def check_grading_key(self) -> None:
        """Refuse a model its grading calls through the gateway (a judge) whose provider key is missing
        (run/config.check_key, the agents' rule); called before anything is written. No such model here."""

    def grading_model(self):
        """The model its grading calls through the gateway (a judge), given the key check at the start as the
        agents' model is (gateway/control/key_check.py); None: none."""
        return None

    def item_records(self, run_dir) -> list[dict]:
        """One record per ended item naming the images it used ("image", and "images" as engine/images/cache.py writes
        them): the session measures their disk use and the image cache's share for summary.json."""
        return []

    # -- outside pytest: `clawswe report` and the benchmark's own commands ------------------------------
    title = "benchmark"  # what people call it (Claw-SWE-Bench, WildClawBench)
    aliases: tuple[str, ...] = ()  # older values of run.json's "benchmark" that mean this one

    @classmethod
    def owns(cls, run_info: dict) -> bool:
        """Whether a run folder's run.json is a run of this benchmark."""
        return run_info.get("benchmark") in (cls.name, *cls.aliases)

    @classmethod
    def is_run_dir(cls, path) -> bool:
        """Whether a folder holds a run this benchmark could have written."""
        return (path / "run.json").is_file()

    @classmethod
    def report(cls, run_dirs: list, args) -> dict:
        """Write this benchmark's report of `run_dirs` (or its published figures) into args.out; returns what
        was written ({kind: [paths]}, "html" the page, "summary_html" a section for a page over benchmarks)."""
        raise NotImplementedError

    # `clawswe compare`: the run.json keys (beyond the core's) two runs must share to be compared, and whether
    # an item is scored (a paired test of mean scores) or passes (McNemar's test of the pass rate, so named)
    protocol_keys: tuple[str, ...] = ()
    protocol_defaults: dict = {}  # the value of a protocol key a run.json from before it existed ran with
    scored = False
    pass_metric = "pass_rate"

    @classmethod
    def item_scores(cls, run_dir) -> tuple[dict[str, float], dict[str, bool], list[str]]:
        """Every ended item of a run: its value (1.0/0.0, or a score), whether it passed, and the items that
        ended in an error (not results)."""
        raise NotImplementedError

    @classmethod
    def trajectory_outcome(cls, folder, result: dict) -> dict:
        """What an item's trajectory says of its end (trajectory/store.py): outcome, patch, tests, criteria,
        score; `result` is the item's result file, `folder` its folder."""
        from pytest_clawswe.trajectory.store import no_outcome

        return no_outcome(result)

    # -- an item as an agent-evaluation trial (`clawswe export harbor`, report/harbor.py) ------------------------
    # the item's timings (its result's "timings", in seconds) in the order its runner takes them, each with the
    # trial phase it counts in: "environment_setup", "agent_setup", "agent_execution", "verifier", or None (between
    # phases, e.g. collecting the patch)
    timing_phases: tuple[tuple[str, str | None], ...] = ()
    agent_log = ""  # the harness's output in an item folder ("": none)
    verifier_log = ""  # the grader's own output in an item folder ("": none)

    @classmethod
    def rewards(cls, folder, result: dict) -> dict[str, float] | None:
        """The item's rewards as a verifier gives them: {"reward": the item's value (1/0, or a score), and any
        further named values}; None when it was not graded (an error)."""
        return None

    @classmethod
    def item_folders(cls, run_dir) -> list:
        """(item id, folder, result) of every ended item of a run folder (`clawswe export atif`)."""
        return []

    @classmethod
    def add_cli(cls, subparsers) -> None:
        """Add this benchmark's own `clawswe` subcommands (none by default)."""

    # -- grading a finished run again (`clawswe regrade`, run/regrade/) ------------------------------------
    # With --regrade RUN, `self.regrade` is set and select, collector and runner give RUN's items graded again from
    # what RUN kept, without an agent (the benchmark's own choice of items and of what grading reads).
    can_regrade = False
    regrade_options: tuple[str, ...] = ()  # its own option dests a regrade reads (the rest describe the agents' work)
    grading_keys: tuple[str, ...] = ()  # run.json keys a regrade may change: `clawswe compare` pairs a run with its
    # regrade though these differ, and a resumed regrade must keep them

    def regrade_model(self) -> Model | None:
        """The model a regrade calls through the run's gateway (a judge), or None: it starts no gateway."""
        return None

    def regrade_info(self) -> dict:
        """What run.json's "regrade" record adds (the grader's settings or version)."""
        return {}

    def regrade_summary(self) -> str:
        """A few words on how this regrade grades, for the terminal summary."""
        return "graded again"


# -- options: each benchmark's own table (declared_options), and the options a run of another must not be given --
def option_tables() -> list[tuple[str, tuple[Option, ...]]]:
    """(owner, table): the options of every benchmark (owner "", run/options.py) and each installed benchmark's."""
    from pytest_clawswe.run.options import OPTIONS

    return [("", OPTIONS), *((cls.name, cls.declared_options) for cls in benchmark_classes())]


def given_by_owner(config: pytest.Config):
    """(owner, option) of every clawswe option whose value is not its default: owner is a benchmark's name, or "" for
    the options of every benchmark."""
    for owner, table in option_tables():
        for option in table:
            if option.given(config):
                yield owner, option


def check_options(config: pytest.Config, benchmark: Benchmark) -> None:
    """A UsageError, one sentence, for an option given that this run's benchmark does not read: another
    benchmark's (e.g. --instance-ids for WildClawBench) or one of every benchmark's it has no use for
    (Benchmark.unread_options). Silently ignored, it would run what the user did not ask for."""
    for owner, option in given_by_owner(config):
        dest = option.dest
        if owner == benchmark.name or (owner == "" and dest not in benchmark.unread_options):
            continue
        flag, instead = option.flag, benchmark.instead_of.get(dest)
        whose = f"{flag} is --benchmark {owner}'s option and " if owner else ""
        raise pytest.UsageError(f"{whose}{benchmark.title} (--benchmark {benchmark.name}) does not read "
                                f"{'it' if owner else flag}: drop it{'; ' + instead if instead else ''}")


# -- the registry: benchmarks installed as packages name their Benchmark class here -------------------------
ENTRY_POINT_GROUP = "clawswe.benchmarks"


def benchmark_classes() -> list[type[Benchmark]]:
    """Every installed benchmark's class (entry points of group clawswe.benchmarks), in name order."""
    from importlib.metadata import entry_points

    return sorted((ep.load() for ep in entry_points(group=ENTRY_POINT_GROUP)), key=lambda cls: cls.name)


def benchmark_of(run_info: dict) -> type[Benchmark] | None:
    """The installed benchmark whose run a run.json describes, or None."""
    return next((cls for cls in benchmark_classes() if cls.owns(run_info)), None)
