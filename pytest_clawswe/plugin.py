"""pytest hooks of pytest-clawswe: options, collection of instance items, and run-level reporting.

`pytest --harness NAME` switches pytest into benchmark mode: the session collects one item per selected
instance instead of test files, so the project's own tests and benchmark items never mix. The work of an
item is done by runner.Runner; this module only wires it into pytest.
"""
from __future__ import annotations

import re
import shlex
import sys
import time
from pathlib import Path

import docker.errors
import pytest
from docker.utils import parse_bytes

from . import outputs
from .harness import HarnessError, get_harness_class
from .instances import LANGUAGE_MARKERS, DatasetError, Instance, language_marker, load_instances, \
    read_instances_file, select
from .results import RESOLVED, InstanceResult
from .runner import RunConfig, Runner
from .workspace import LABEL_RUN, InfraError

pytest_plugins = ("pytest_clawswe.wildclaw.plugin",)  # --benchmark wildclaw (WildClawBench)
RUN_KEY = pytest.StashKey["RunConfig"]()
ITEMS_KEY = pytest.StashKey["list"]()
# Time allowed on top of the agent budget and the evaluation timeout for image pulls and first preparation.
SETUP_ALLOWANCE_S = 1200


def pytest_addoption(parser: pytest.Parser) -> None:
    g = parser.getgroup("clawswe", "Claw-SWE-Bench: coding-agent harnesses on SWE-bench-style instances")
    g.addoption("--harness", help="run the benchmark with this harness adapter (e.g. openclaw, oracle, nop); "
                                  "without it pytest runs ordinary tests")
    g.addoption("--model", default="", help="model for the harness, e.g. openrouter/z-ai/glm-5.1 or scripted/gold")
    g.addoption("--dataset", default="claw-swe-bench",
                help="claw-swe-bench (350), multilingual, verified-mini, demo, or a path to a swebench task repo, "
                     ".json/.jsonl/.parquet file or datasets folder (default: %(default)s)")
    g.addoption("--lite", action="store_true", help="only the 80 Claw-SWE-Bench Lite instances")
    g.addoption("--instance-ids", default="", help="comma- or space-separated instance ids to run")
    g.addoption("--instances-file", help="file with one instance id per line (e.g. from `clawswe lite select`)")
    g.addoption("--dataset-revision", help="pin the Hugging Face dataset revision (commit or tag)")
    g.addoption("--run-dir", help="where the run's outputs go (default: reports/<run id>)")
    g.addoption("--run-id", help="name of the run (default: <harness>_<model>_<timestamp>)")
    g.addoption("--resume", metavar="RUN_DIR",
                help="continue a run: instances with a final result are kept, the rest run")
    g.addoption("--budget", type=float, default=3600.0,
                help="wall-clock seconds the agent may work on one instance (default: %(default)s, as the paper)")
    g.addoption("--eval-timeout", type=float, default=1800.0, help="seconds for the evaluation's test run")
    g.addoption("--mem-limit", default="8g", help="memory limit of each container (default: %(default)s)")
    g.addoption("--pids-limit", type=int, default=300, help="process limit of each container (default: %(default)s)")
    g.addoption("--disk-limit", default="20g",
                help="what an agent's container may write before the agent is stopped (finish reason "
                     "disk_limit), e.g. 20g; none: no limit (default: %(default)s)")
    g.addoption("--harness-option", action="append", default=[], metavar="KEY=VALUE",
                help="option passed to the harness adapter (repeatable)")
    g.addoption("--network", choices=("locked", "open"), default="locked",
                help="locked (default): agents reach the model gateway and nothing else; open: the Docker "
                     "default network, e.g. for harnesses that must install something")
    g.addoption("--prices", metavar="FILE", help="YAML/JSON model prices (USD per million tokens) that add to or "
                                                 "override the price library's")


def _benchmark_mode(config: pytest.Config) -> bool:
    return bool(config.getoption("harness", None))


def _safe(text: str) -> str:
    """Run ids end up in container and folder names: keep them to [A-Za-z0-9_.-]."""
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", text).strip("-.")


def _default_run_id(harness: str, model: str) -> str:
    parts = [harness, _safe(model), time.strftime("%Y%m%d-%H%M%S")]
    return "_".join(p for p in parts if p)


def _run_config(config: pytest.Config) -> RunConfig:
    spec = config.getoption("harness")
    name = get_harness_class(spec).name if ":" in spec else spec
    worker = getattr(config, "workerinput", None)
    if worker and "clawswe_run_id" in worker:  # xdist worker: the controller chose the run
        run_id, run_dir = worker["clawswe_run_id"], Path(worker["clawswe_run_dir"])
    elif config.getoption("resume"):
        run_dir = Path(config.getoption("resume")).resolve()
        if not run_dir.is_dir():
            raise pytest.UsageError(f"--resume {run_dir}: no such run directory")
        from .results import load_run_info

        # a resumed run is the same run: same id, so its clean-up also finds what the first attempt left
        run_id = _safe(config.getoption("run_id") or load_run_info(run_dir).get("run_id") or run_dir.name)
    else:
        run_id = _safe(config.getoption("run_id") or _default_run_id(name, config.getoption("model")))
        default = Path(config.invocation_params.dir, "reports", run_id)
        run_dir = Path(config.getoption("run_dir") or default).resolve()
    options = {}
    for item in config.getoption("harness_option"):
        key, sep, value = item.partition("=")
        if not sep:
            raise pytest.UsageError(f"--harness-option {item!r}: use KEY=VALUE")
        options[key] = value
    disk_limit = config.getoption("disk_limit")
    try:
        disk_limit = None if disk_limit.lower() in ("none", "0", "") else parse_bytes(disk_limit)
    except docker.errors.DockerException:
        raise pytest.UsageError(f"--disk-limit {disk_limit}: give a size such as 20g, 500m, or none") from None
    network = None
    if config.getoption("network") == "locked":
        # no model to reach: no network at all; else the run's internal network, where the gateway listens
        network = f"clawswe-{run_id}" if get_harness_class(spec).needs_model else "none"
    return RunConfig(run_id=run_id, run_dir=run_dir, harness_name=name, harness_spec=spec, network=network,
                     model=config.getoption("model"), budget_s=config.getoption("budget"),
                     eval_timeout_s=config.getoption("eval_timeout"),
                     mem_limit=config.getoption("mem_limit") or None,
                     pids_limit=config.getoption("pids_limit") or None,
                     disk_limit=disk_limit,
                     dataset_revision=config.getoption("dataset_revision"), harness_options=options,
                     prices_file=config.getoption("prices"))


def pytest_configure(config: pytest.Config) -> None:
    for language, marker in LANGUAGE_MARKERS.items():
        config.addinivalue_line("markers", f"{marker}: instances of the {language} language group")
    config.addinivalue_line("markers", "clawswe: a Claw-SWE-Bench instance item")
    if not _benchmark_mode(config):
        return
    try:
        get_harness_class(config.getoption("harness"))
    except HarnessError as exc:
        raise pytest.UsageError(str(exc)) from None
    if config.args_source == pytest.Config.ArgsSource.ARGS and not hasattr(config, "workerinput"):
        raise pytest.UsageError(f"a benchmark run takes no test paths (got {' '.join(config.args)}); select "
                                "instances with --instance-ids a,b, --instances-file, -k or -m")
    cfg = _run_config(config)
    try:  # bad harness options (e.g. zeroclaw without its binary): one sentence before anything starts
        get_harness_class(cfg.harness_spec)(cfg.model, cfg.harness_options)
    except HarnessError as exc:
        raise pytest.UsageError(str(exc)) from None
    session_cls = BenchmarkSession
    if config.getoption("benchmark", "swe") == "wildclaw":
        from .wildclaw.plugin import session_class

        session_cls = session_class()
    config.pluginmanager.register(session_cls(config, cfg), "clawswe-session")


class BenchmarkSession:
    """The benchmark run inside one pytest process (the controller, or an xdist worker)."""

    def __init__(self, config: pytest.Config, cfg: RunConfig):
        self.config = config
        self.cfg = cfg
        self.is_worker = hasattr(config, "workerinput")
        self._runner: Runner | None = None
        self.gateway_process = None
        self.needs_model = get_harness_class(cfg.harness_spec).needs_model
        config.stash[RUN_KEY] = cfg
        # --collect-only lists items and runs nothing: it leaves no run directory behind
        self.writes = not self.is_worker and not config.option.collectonly
        if self.writes:
            client = _docker_or_usage_error()  # no engine, no permission: one sentence before anything runs
            cfg.run_dir.mkdir(parents=True, exist_ok=True)
            _write_run_info(config, cfg)
            _remove_leftovers(cfg.run_id, include_live=False)  # an earlier, killed attempt of this run
            if self.needs_model:
                self.gateway_process = _start_gateway(cfg, client)

    @property
    def runner(self) -> Runner:
        if self._runner is None:
            from .workspace import docker_client

            harness = get_harness_class(self.cfg.harness_spec)(self.cfg.model, self.cfg.harness_options)
            self._runner = Runner(self.cfg, harness, docker_client(), progress=_progress)
            if self.needs_model:
                from .gateway.run import RunGateway

                self._runner.gateway = RunGateway(self.cfg.run_dir / "gateway", self.cfg.model)
        return self._runner

    @pytest.hookimpl(optionalhook=True)
    def pytest_configure_node(self, node) -> None:  # xdist: every worker runs the controller's run
        node.workerinput["clawswe_run_id"] = self.cfg.run_id
        node.workerinput["clawswe_run_dir"] = str(self.cfg.run_dir)

    @pytest.hookimpl(tryfirst=True)
    def pytest_collection(self, session: pytest.Session):
        if self.config.pluginmanager.hasplugin("dsession"):
            return None  # xdist controller: the workers collect
        return _collect(session)

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        # the controller keeps the run-level files current, so a crash loses nothing already finished
        if report.when != "teardown" or not self.writes:
            return
        results = self._rebuild()
        if results is None:
            return
        self._done += 1
        total = len(self.config.stash.get(ITEMS_KEY, [])) or None
        every = max(1, (total or 10) // 10)
        if self.config.option.verbose > 0 or self._done % every == 0 or self._done == total:
            from .summary import progress_line

            reporter = self.config.pluginmanager.get_plugin("terminalreporter")
            if reporter is not None:
                if not self.config.option.verbose > 0:
                    reporter.write("\n")  # the line of dots is still open
                reporter.write_line(f"[clawswe] {progress_line(results, total)}")

    _done = 0

    def _rebuild(self):
        """Rebuild the run-level files; a full disk costs a warning, not the run (resume rebuilds them)."""
        try:
            return outputs.rebuild(self.cfg.run_dir)
        except OSError as exc:
            import warnings

            warnings.warn(f"clawswe: could not update {self.cfg.run_dir} ({exc.strerror or exc}); "
                          "the instance folders are intact and a resumed run rebuilds these files")
            return None

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        self.config.stash[ITEMS_KEY] = list(session.items)

    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_node_collection_finished(self, node, ids) -> None:
        self.config.stash[ITEMS_KEY] = list(ids)

    @pytest.hookimpl(tryfirst=True)  # before junitxml writes its file
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        if not self.writes:
            return
        _remove_leftovers(self.cfg.run_id, wait_s=60)
        self._rebuild()
        summary_file = self.cfg.run_dir / "summary.json"
        from _pytest.junitxml import xml_key

        xml = self.config.stash.get(xml_key, None)
        if xml is not None and summary_file.is_file():
            import json

            from .summary import junit_properties

            for name, value in junit_properties(json.loads(summary_file.read_text())):
                xml.add_global_property(name, value)

    def pytest_unconfigure(self) -> None:
        if self._runner is not None:
            self._runner.close()
        if self.gateway_process is not None:
            self.gateway_process.stop()

    def pytest_terminal_summary(self, terminalreporter) -> None:
        summary_file = self.cfg.run_dir / "summary.json"
        if not self.writes or not summary_file.is_file():
            return
        import json

        tr = terminalreporter
        tr.write_sep("=", "clawswe summary")
        tr.write_line(f"run dir: {self.cfg.run_dir}")
        from .summary import terminal_lines

        for line in terminal_lines(json.loads(summary_file.read_text())):
            tr.write_line(line)


def _docker_or_usage_error():
    from .workspace import docker_client

    try:
        return docker_client()
    except InfraError as exc:
        raise pytest.UsageError(str(exc)) from None


def _start_gateway(cfg: RunConfig, client):
    from .gateway.run import start
    from .workspace import create_locked_network

    try:
        locked = cfg.network and cfg.network != "none"
        if locked:
            create_locked_network(client, cfg.network, {LABEL_RUN: cfg.run_id})
        gateway = start(cfg.run_dir / "gateway", cfg.model, client, cfg.network)
    except (ValueError, InfraError) as exc:
        raise pytest.UsageError(str(exc)) from None
    if locked:
        from urllib.parse import urlsplit

        from .hostguard import guard

        why = guard(client, cfg.network, urlsplit(gateway.url).port, cfg.run_id)
        if why:
            import warnings

            warnings.warn(f"clawswe: agents on the locked network can still reach services listening on this "
                          f"host's every address (host firewall: {why}); run as root with iptables to close it")
    return gateway


def _write_run_info(config: pytest.Config, cfg: RunConfig) -> None:
    import json

    from .results import write_atomic

    info_path = cfg.run_dir / "run.json"
    info = json.loads(info_path.read_text()) if info_path.is_file() else {}
    info.update({
        "run_id": cfg.run_id, "harness": cfg.harness_name, "model": cfg.model,
        "dataset": config.getoption("dataset"), "lite": config.getoption("lite"),
        "budget_s": cfg.budget_s, "eval_timeout_s": cfg.eval_timeout_s,
        "mem_limit": cfg.mem_limit, "pids_limit": cfg.pids_limit,
        "dataset_revision": cfg.dataset_revision, "harness_options": cfg.harness_options,
    })
    info.setdefault("started_at", time.strftime("%Y-%m-%dT%H:%M:%S%z"))
    info.setdefault("invocations", []).append(" ".join(shlex.quote(a) for a in sys.argv))
    write_atomic(info_path, json.dumps(info, indent=2) + "\n")


# -- collection ------------------------------------------------------------------------------------

def _selected_instances(config: pytest.Config) -> list[Instance]:
    instances = load_instances(config.getoption("dataset"), lite=config.getoption("lite"))
    ids = [i for i in re.split(r"[,\s]+", config.getoption("instance_ids")) if i]
    if config.getoption("instances_file"):
        ids += read_instances_file(config.getoption("instances_file"))
    return select(instances, ids)


def _collect(session: pytest.Session) -> bool:
    from _pytest.runner import collect_one_node

    config = session.config
    dataset = config.getoption("dataset")
    name = dataset if dataset in ("demo", "claw-swe-bench", "multilingual", "verified-mini") else Path(dataset).name
    # node ids are "<dataset>::<instance id>", wherever pytest was started from
    collector = DatasetCollector.from_parent(session, name=name, nodeid=name)
    session.ihook.pytest_collectstart(collector=collector)
    report = collect_one_node(collector)
    session.ihook.pytest_collectreport(report=report)
    items = list(report.result) if report.passed else []
    session.ihook.pytest_collection_modifyitems(session=session, config=config, items=items)
    session.items = items  # before collection_finish: xdist workers report session.items from it
    session.testscollected = len(items)
    session.ihook.pytest_collection_finish(session=session)
    if report.failed:
        session.testsfailed += 1
    return True


class DatasetCollector(pytest.Collector):
    """The dataset as a pytest collector: its children are the instance items."""

    def collect(self):
        try:
            instances = _selected_instances(self.config)
        except DatasetError as exc:
            raise self.CollectError(str(exc)) from None
        for inst in instances:
            yield InstanceItem.from_parent(self, name=inst.instance_id, instance=inst)

    def repr_failure(self, excinfo):
        if excinfo.errisinstance(self.CollectError):
            return str(excinfo.value.args[0])
        return super().repr_failure(excinfo)

    def reportinfo(self):
        return self.path, None, f"dataset {self.name}"


class NotResolved(Exception):
    """The evaluator says the instance is not resolved: a test failure with the reason."""


class InstanceItem(pytest.Item):
    """One benchmark instance. The run happens in setup, so an infrastructure failure is a pytest error;
    the call phase only asserts the evaluator's verdict, so 'not resolved' is a failure."""

    def __init__(self, *, instance: Instance, **kwargs):
        super().__init__(**kwargs)
        self.instance = instance
        self.result: InstanceResult | None = None
        self.add_marker("clawswe")
        self.add_marker(language_marker(instance.language))
        # -k matches these: the language, the repository and its short name
        self.extra_keyword_matches.update({instance.language, instance.repo, instance.repo_name})
        cfg = self.config.stash.get(RUN_KEY, None)
        if cfg is not None and self.config.getoption("timeout", None) is None:
            # pytest-timeout is the hard stop of the whole item; the agent's own budget ends earlier inside it
            limit = cfg.budget_s + cfg.eval_timeout_s + SETUP_ALLOWANCE_S
            self.add_marker(pytest.mark.timeout(limit, method="signal"))

    def setup(self) -> None:
        runner = self.config.pluginmanager.get_plugin("clawswe-session").runner
        previous = runner.finished(self.instance.instance_id)
        if previous is not None:
            self.result, self.reused = previous, True
            return
        self.reused = False
        try:
            self.result = runner.run(self.instance)
        except InfraError as exc:
            if not exc.retryable:
                raise
            _progress(f"{self.instance.instance_id}: {exc}; retrying once from scratch")
            self.result = runner.run(self.instance)

    def runtest(self) -> None:
        from .summary import instance_properties

        r = self.result
        for key, value in _properties(r).items():
            self.user_properties.append((key, value))
        self.user_properties.extend(instance_properties(r))
        if r.outcome != RESOLVED:
            raise NotResolved(f"{r.outcome}: {r.error or 'not resolved'}")

    def repr_failure(self, excinfo, style=None):
        if excinfo.errisinstance((NotResolved, InfraError, DatasetError, HarnessError)):
            return f"{self.instance.instance_id}: {excinfo.value}"
        return super().repr_failure(excinfo, style)

    def reportinfo(self):
        return self.path, None, f"{self.instance.instance_id} [{self.instance.language}, {self.instance.repo}]"


def _properties(r: InstanceResult) -> dict:
    # the accounting (clawswe.* properties) comes from summary.instance_properties
    return {"resolved": bool(r.resolved), "language": r.language, "repo": r.repo}


def _progress(message: str) -> None:
    # xdist captures workers' stdout; their stderr reaches the terminal
    print(f"[clawswe] {message}", file=sys.__stderr__, flush=True)


def _remove_leftovers(run_id: str, include_live: bool = True, wait_s: float = 0) -> None:
    """What this run created and still exists (a killed worker leaves its container behind).

    `wait_s`: how long to wait for an engine that does not answer (a daemon restarting mid-run)."""
    import docker

    from .clean import clean, leftovers

    deadline = time.monotonic() + wait_s
    while True:
        try:
            client = docker.from_env(timeout=30)
            clean(client, run_id, include_live=include_live, progress=lambda m: None)
            left = sum(map(len, leftovers(client, run_id).values())) if include_live else 0
            if not left:
                return
            problem = f"{left} container(s), volume(s) or network(s) of this run could not be removed"
        except (docker.errors.DockerException, OSError) as exc:
            problem = f"the Docker engine did not answer ({type(exc).__name__})"
        if time.monotonic() >= deadline:
            break
        time.sleep(2)
    if wait_s:
        _progress(f"{problem}; remove what is left with `clawswe clean --run-id {run_id}`")
