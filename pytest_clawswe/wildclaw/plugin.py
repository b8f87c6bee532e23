"""pytest hooks of the WildClawBench mode: `pytest --benchmark wildclaw --dataset PATH|demo --harness H`.

Registered from pytest_clawswe.plugin (its `pytest_plugins`); the run machinery (run id, run dir, gateway,
locked network, leftovers sweep, xdist hand-over, resume) is the Claw-SWE-Bench session's, reused by
subclassing it; only collection, the runner and the run-level files differ.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from ..paths import INSTANCES_DIR
from . import outputs
from .items import SuiteCollector, register_markers

DEMO_DIR = INSTANCES_DIR / "wildclaw-demo"
BENCHMARKS = ("swe", "wildclaw")


def pytest_addoption(parser: pytest.Parser) -> None:
    g = parser.getgroup("clawswe-wildclaw", "WildClawBench: long-horizon agent tasks graded outside the agent")
    g.addoption("--benchmark", choices=BENCHMARKS, default="swe",
                help="swe: Claw-SWE-Bench instances (default); wildclaw: WildClawBench task files from --dataset "
                     "(a checkout of the suite, any folder of task files, or demo)")
    g.addoption("--judge-model", default="openai/gpt-5.4",
                help="WildClawBench judge model, reached through the gateway (default: %(default)s, as released); "
                     "scripted: answers from each task's judge.json fixtures, offline")
    g.addoption("--pass-score", type=float, default=outputs.DEFAULT_PASS_SCORE,
                help="a WildClawBench task passes when its overall_score is at least this (default: %(default)s; "
                     "the benchmark number is the mean score, which does not depend on it)")
    g.addoption("--grade-timeout", type=float, default=120.0,
                help="seconds grade() may run in the grader container (default: %(default)s, as released)")


def is_wildclaw(config: pytest.Config) -> bool:
    return config.getoption("benchmark", "swe") == "wildclaw"


def dataset_root(config: pytest.Config) -> Path:
    dataset = config.getoption("dataset")
    if dataset == "demo":
        return DEMO_DIR
    path = Path(dataset)
    if not path.is_dir():
        raise pytest.UsageError(f"--benchmark wildclaw needs --dataset PATH, a folder of task files or a checkout "
                                f"of the suite (with tasks/ and workspace/), or --dataset demo; {dataset!r} is "
                                "not a folder")
    return path.resolve()


def pytest_configure(config: pytest.Config) -> None:
    register_markers(config)
    resume = config.getoption("resume", None)
    if resume and not is_wildclaw(config):
        try:
            kind = json.loads((Path(resume) / "run.json").read_text()).get("benchmark")
        except (OSError, ValueError):
            kind = None
        if kind == "wildclaw":
            raise pytest.UsageError(f"--resume {resume} is a WildClawBench run: add --benchmark wildclaw and its "
                                    "--dataset")
    if not is_wildclaw(config):
        return
    spec = config.getoption("harness", None)
    if spec:
        from ..harness import HarnessError, get_harness_class

        try:
            if not get_harness_class(spec).needs_model:
                raise pytest.UsageError(f"--harness {spec} calls no model, so it cannot run WildClawBench tasks; use "
                                        "an agent harness (openclaw, claude-code, codex, hermes) with "
                                        "--model scripted/gold for a check without a key")
        except HarnessError:
            pass  # the Claw-SWE-Bench configure reports an unknown harness in its own words
    config._clawswe_wildclaw = options(config)


def options(config: pytest.Config):
    from .runner import WildOptions

    found = getattr(config, "_clawswe_wildclaw", None)
    if found is not None:
        return found
    if not 0.0 <= config.getoption("pass_score") <= 1.0:
        raise pytest.UsageError("--pass-score must be between 0 and 1 (overall_score is in [0, 1])")
    return WildOptions(dataset_root(config), config.getoption("judge_model"), config.getoption("pass_score"),
                       config.getoption("grade_timeout"))


def session_class():
    """The session plugin of a wildclaw run (imported late: plugin.py imports this module)."""
    from ..plugin import BenchmarkSession

    class WildclawSession(BenchmarkSession):
        def __init__(self, config, cfg):
            config._clawswe_wildclaw = self.options = options(config)  # before anything is written
            super().__init__(config, cfg)
            if self.writes and self.gateway_process is not None:
                from ..gateway.conversation import DIR_NAME

                (cfg.run_dir / "gateway" / DIR_NAME).mkdir(parents=True, exist_ok=True)
            if self.writes:
                info = cfg.run_dir / "run.json"
                data = json.loads(info.read_text())
                data.update({"benchmark": "wildclaw", "judge_model": self.options.judge_model,
                             "pass_score": self.options.pass_score, "grade_timeout_s": self.options.grade_timeout_s,
                             "dataset_root": str(self.options.dataset_root)})
                info.write_text(json.dumps(data, indent=2) + "\n")

        @property
        def runner(self):
            if self._runner is None:
                from ..harness import get_harness_class
                from ..workspace import docker_client
                from .runner import Runner

                harness = get_harness_class(self.cfg.harness_spec)(self.cfg.model, self.cfg.harness_options)
                self._runner = Runner(self.cfg, self.options, harness, docker_client(), progress=_progress)
                if self.needs_model:
                    from ..gateway.run import RunGateway

                    self._runner.gateway = RunGateway(self.cfg.run_dir / "gateway", self.cfg.model)
            return self._runner

        @pytest.hookimpl(tryfirst=True)
        def pytest_collection(self, session: pytest.Session):
            if self.config.pluginmanager.hasplugin("dsession"):
                return None
            return collect(session, self.options.dataset_root)

        def _rebuild(self):
            try:
                return outputs.rebuild(self.cfg.run_dir)
            except OSError as exc:
                import warnings

                warnings.warn(f"clawswe: could not update {self.cfg.run_dir} ({exc.strerror or exc}); "
                              "the task folders are intact and a resumed run rebuilds these files")
                return None

        def pytest_runtest_logreport(self, report) -> None:
            if report.when == "teardown" and self.writes:
                self._rebuild()

        @pytest.hookimpl(tryfirst=True)
        def pytest_sessionfinish(self, session) -> None:
            if not self.writes:
                return
            from ..plugin import _remove_leftovers

            _remove_leftovers(self.cfg.run_id, wait_s=60)
            results = self._rebuild()
            from _pytest.junitxml import xml_key

            xml = self.config.stash.get(xml_key, None)
            if xml is not None and results is not None:
                summary = outputs.summarise(results)
                for key in ("mean_score", "tasks", "passed", "errors", "judge_tokens", "pass_score"):
                    xml.add_global_property(f"wildclaw.{key}", summary[key])

        def pytest_terminal_summary(self, terminalreporter) -> None:
            path = self.cfg.run_dir / "summary.json"
            if not self.writes or not path.is_file():
                return
            terminalreporter.write_sep("=", "clawswe wildclaw summary")
            terminalreporter.write_line(f"run dir: {self.cfg.run_dir}")
            for line in outputs.terminal_lines(json.loads(path.read_text())):
                terminalreporter.write_line(line)

    return WildclawSession


def collect(session: pytest.Session, root: Path) -> bool:
    from _pytest.runner import collect_one_node

    config = session.config
    name = "wildclaw-demo" if root == DEMO_DIR else root.name
    collector = SuiteCollector.from_parent(session, name=name, nodeid=name, root=root)
    session.ihook.pytest_collectstart(collector=collector)
    report = collect_one_node(collector)
    session.ihook.pytest_collectreport(report=report)
    items = list(report.result) if report.passed else []
    session.ihook.pytest_collection_modifyitems(session=session, config=config, items=items)
    session.items = items
    session.testscollected = len(items)
    session.ihook.pytest_collection_finish(session=session)
    if report.failed:
        session.testsfailed += 1
    return True


def _progress(message: str) -> None:
    print(f"[clawswe] {message}", file=sys.__stderr__, flush=True)
