"""The benchmark run inside one pytest process (the controller, or an xdist worker): its life cycle.

The controller checks every option and the selection, then (and only then) writes: the run folder,
run.json, a sweep of what a killed attempt of the run left, the run's network, gateway and host firewall.
It keeps the run-level files current as items finish and sweeps the run's Docker objects at the very end,
after xdist has stopped its workers. Collection and the items belong to a benchmark (benchmark.py).

Ctrl-C: the first SIGINT interrupts the running items (each ends as an error that a resume runs again,
or stays absent) and no item starts after it; a second SIGINT stops at once.
"""
from __future__ import annotations

import json
import os
import shlex
import signal
import sys
import time
import warnings

import pytest

from pytest_clawswe.engine import hosts
from pytest_clawswe.errors import InfraError
from pytest_clawswe.files import load_run_info, write_atomic
from pytest_clawswe.run import regrade
from pytest_clawswe.run.benchmark import Benchmark, check_options
from pytest_clawswe.run.bundle_check import ensure_bundle
from pytest_clawswe.run.clean import sweep_run
from pytest_clawswe.run.config import RunConfig, check_resume, given_settings, result_settings, run_config
from pytest_clawswe.run.gateway_start import start_gateway
from pytest_clawswe.run.item.nodes import BenchmarkItem
from pytest_clawswe.run.item.runner import progress as _progress
from pytest_clawswe.run.reporter import ITEMS_KEY, RunReporter

RUN_KEY = pytest.StashKey["RunConfig"]()


def configure(config: pytest.Config) -> None:
    """Check everything, then start the run (controller) or join it (xdist worker)."""
    if config.args_source == pytest.Config.ArgsSource.ARGS and not hasattr(config, "workerinput"):
        raise pytest.UsageError(f"a benchmark run takes no test paths (got {' '.join(config.args)}); select "
                                "instances with --instance-ids a,b, --instances-file, -k or -m")
    src = regrade.source(config)  # --regrade RUN: the run graded again, checked (run/regrade/)
    if src is not None:
        regrade.adopt(config, src)  # its benchmark, dataset and agent settings; an agent option given is refused
    given = regrade.given_settings(config, src) if src is not None else given_settings(config)
    benchmark = config.hook.pytest_clawswe_benchmark(config=config)
    check_options(config, benchmark)  # another benchmark's option, given: one sentence, nothing run
    if src is not None:
        regrade.check_benchmark_options(config, benchmark)
    cfg = run_config(config, benchmark, given)  # made once: nothing changes it afterwards
    run = RunSession(config, cfg, benchmark)
    if not run.is_worker:
        benchmark.select()  # a bad dataset, id or row: one sentence, before anything is written
        if run.writes:
            benchmark.check_grading_key()  # a judge without its key: as the agents' model, before anything is written
        if src is None:
            check_resume(config, cfg, benchmark)
        else:
            regrade.check_resume(config, cfg, benchmark, src)
        if run.writes and src is None:  # a regrade runs no agent: no bundle
            ensure_bundle(config, cfg, run.hosts[0])
    config.pluginmanager.register(run, "clawswe-session")
    reporter = RunReporter(run)  # the terminal side, a plugin of its own (as xdist's DSession and its reporter)
    config.pluginmanager.register(reporter, "clawswe-reporter")
    if run.is_worker:
        run.install_interrupts()
    elif run.writes:
        try:
            run.start()
        except BaseException:
            config.pluginmanager.unregister(reporter)
            config.pluginmanager.unregister(run)
            raise


class RunSession:
    """The run as one pytest process sees it."""

    def __init__(self, config: pytest.Config, cfg: RunConfig, benchmark: Benchmark):
        self.config = config
        self.cfg = cfg
        self.benchmark = benchmark
        self.is_worker = hasattr(config, "workerinput")
        self._runner = None
        self.gateway_process = None
        self.regrade = getattr(benchmark, "regrade", None)  # the run graded again (run/regrade/), or None
        # the model the run's gateway serves: the agents', or a regrade's judge (None: a regrade starts no gateway)
        self.gateway_model = cfg.model if self.regrade is None else benchmark.regrade_model()
        self.needs_model = cfg.new_harness().needs_model if self.regrade is None else self.gateway_model is not None
        self.hosts = hosts.hosts(config)  # the run's Docker engines (engine/hosts.py)
        benchmark.check_engines(self.hosts, self.needs_model)  # a benchmark may refuse some (one sentence)
        if cfg.network_mode == "internet" and any(hosts.is_remote(h.url) for h in self.hosts):
            raise pytest.UsageError("--network internet guards this machine's firewall only; drop the tcp:// and "
                                    "ssh:// --docker-host, or give --network locked")
        from pytest_clawswe.run.kube_run import from_config

        self.kube = from_config(config, cfg)  # --kubernetes: the sandboxes are pods of a cluster (run/kube_run.py)
        config.stash[RUN_KEY] = cfg
        # --collect-only lists items and runs nothing: it leaves no run directory behind
        self.writes = not self.is_worker and not config.option.collectonly
        self.stopping = False  # set by the first SIGINT: no item starts after it
        self._worker_pids: list[int] = []
        self._said: set[str] = set()
        self.results = None  # what the last rebuild of the run files gave (None: not rebuilt, or it failed)
        # --cache-level resolved (auto: by the number of items) once they are collected (pytest_collection_finish)
        self.cache_level = cfg.cache_level

    # -- start -------------------------------------------------------------------------------------
    def start(self) -> None:
        """Write the run's folder and start what it shares; nothing is left behind when this fails."""
        # no engine, no permission, one --docker-host down: one sentence before anything is written
        clients = hosts.check(self.hosts)
        if self.kube is not None:
            self.kube.check()  # the cluster answers and has a ready node: one sentence before anything is written
        workers = getattr(self.config.option, "numprocesses", None)
        if len(self.hosts) > 1 and isinstance(workers or 0, int) and (workers or 0) < len(self.hosts):
            self.config.issue_config_time_warning(UserWarning(
                f"clawswe: {len(self.hosts)} --docker-host but fewer xdist workers; each worker uses one engine, "
                f"so give -n {len(self.hosts)} or more to use them all"), stacklevel=2)
        self._write_run_info()
        self._sweep(include_live=False)  # an earlier, killed attempt of this run
        from pytest_clawswe.run import provider

        provider.reset(self.cfg.run_dir)  # a streak of an earlier part of the run does not stop this one
        if self.kube is not None:  # its namespace, the gateway where the nodes reach it, the proven lock
            self.gateway_process = self.kube.start(clients[0], self.needs_model, _progress, model=self.gateway_model)
        if self.needs_model:
            try:
                if self.gateway_process is None:
                    self.gateway_process = start_gateway(self.cfg, self.hosts, clients)
                if not self.config.getoption("no_model_check"):
                    from pytest_clawswe.gateway.control.key_check import check_model

                    check_model(self.cfg.run_dir / "gateway", self.gateway_model)
                    judge = self.benchmark.grading_model() if self.regrade is None else None  # a regrade's is checked above
                    if judge is not None and judge.spec != self.gateway_model.spec:
                        check_model(self.cfg.run_dir / "gateway", judge, role="the judge ")
            except BaseException:
                if self.gateway_process is not None:
                    self.gateway_process.stop()
                    self.gateway_process = None
                self._sweep(include_live=True)  # its network: nothing outlives a failed start
                raise
        self.benchmark.start_run(self.cfg.run_dir)
        self.install_interrupts()

    def _write_run_info(self) -> None:
        cfg = self.cfg
        info_path = cfg.run_dir / "run.json"
        try:
            if cfg.run_dir.exists() and not cfg.run_dir.is_dir():
                raise pytest.UsageError(f"--run-dir {cfg.run_dir} is a file; give a folder (it is created)")
            info = load_run_info(cfg.run_dir)
            if self.regrade is not None:  # RUN's settings, the grading ones now in force, what it regrades
                info.update(regrade.run_info(self.regrade, cfg, self.benchmark))
            else:
                info.update(self._run_settings())
            info.setdefault("started_at", time.strftime("%Y-%m-%dT%H:%M:%S%z"))
            info.setdefault("invocations", []).append(" ".join(shlex.quote(a) for a in sys.argv))
            cfg.run_dir.mkdir(parents=True, exist_ok=True)
            write_atomic(info_path, json.dumps(info, indent=2) + "\n")
        except OSError as exc:
            raise pytest.UsageError(f"cannot write the run folder {cfg.run_dir} ({exc.strerror or exc}); "
                                    "give a writable folder with --run-dir") from None

    def _run_settings(self) -> dict:
        """run.json of a run with agents: the settings that change results, and the benchmark's own."""
        cfg = self.cfg
        return {"run_id": cfg.run_id, **result_settings(self.config, cfg), "benchmark": self.benchmark.name,
                "cache_level": cfg.cache_level, "image_cache": cfg.image_cache, "registry": cfg.registry,
                # every adapter option with its effective value, defaults included
                "harness_settings": cfg.new_harness().resolved_options(),
                "gateway_shaping_active": _shaping_in_effect(cfg), **self.benchmark.run_info()}

    # -- what the items use ------------------------------------------------------------------------
    def why_not_start(self, runner) -> str | None:
        """Why an item must not start (one sentence): the provider breaker tripped, or --max-cost is reached."""
        from pytest_clawswe.run import provider

        cfg = self.cfg
        why = provider.tripped(cfg.run_dir, cfg.provider_breaker)
        if why:
            why = f"not started: {why}"
        elif cfg.max_cost is not None:
            from pytest_clawswe.run.spending import over_max_cost

            why = over_max_cost(cfg.run_dir, runner.item_dir("_").parent, cfg.max_cost, cfg.prices_file)
        if why and why not in self._said:  # once per process on the terminal; every skipped item carries it
            self._said.add(why)
            _progress(why)
        return why

    @property
    def runner(self):
        if self._runner is None:
            self._runner = self.benchmark.runner(self)
        return self._runner

    def report_result(self, item: pytest.Item, result) -> None:
        """Announce one ended item (its InstanceResult, TaskResult, ...) to other plugins (the
        pytest_clawswe_instance_result hook); the items' setup (benchmark.BenchmarkItem) calls it."""
        item.ihook.pytest_clawswe_instance_result(item=item, result=result)

    # -- xdist -------------------------------------------------------------------------------------
    @pytest.hookimpl(optionalhook=True)
    def pytest_configure_node(self, node) -> None:
        """xdist: every worker runs the controller's run."""
        node.workerinput["clawswe_run_id"] = self.cfg.run_id
        node.workerinput["clawswe_run_dir"] = str(self.cfg.run_dir)
        hosts.assign(node, len(self.hosts))

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodeready(self, node) -> None:
        """xdist: remember the worker's pid, to pass Ctrl-C on to it."""
        popen = getattr(getattr(getattr(node, "gateway", None), "_io", None), "popen", None)
        if popen is not None:
            self._worker_pids.append(popen.pid)

    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_node_collection_finished(self, node, ids) -> None:
        """xdist: the controller learns how many items there are."""
        self.config.stash[ITEMS_KEY] = list(ids)

    # -- collection --------------------------------------------------------------------------------
    @pytest.hookimpl(tryfirst=True)
    def pytest_collection(self, session: pytest.Session):
        """Collect the benchmark's items instead of test files."""
        if self.config.pluginmanager.hasplugin("dsession"):
            return None  # xdist controller: the workers collect
        return _collect(session, self.benchmark.collector(session))

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        """Remember the items, for the progress line, and resolve --cache-level auto by their number."""
        self.config.stash[ITEMS_KEY] = list(session.items)
        from pytest_clawswe.engine.images.cache_level import resolve

        self.cache_level = resolve(self.cfg.cache_level, len(session.items))  # xdist workers see every item

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_protocol(self, item: pytest.Item, nextitem: pytest.Item | None) -> None:
        """Tell the runner which item this process runs next, so what it needs is made while this one ends."""
        if isinstance(item, BenchmarkItem) and not self.stopping:
            self.runner.upcoming = nextitem.target if isinstance(nextitem, BenchmarkItem) else None

    # -- the run files as items end (run/reporter.py's RunReporter shows the progress) ---------------------
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        """Keep the run-level files current, so a crash loses nothing already finished."""
        if report.when != "teardown" or not self.writes:
            return
        self.results = self._rebuild()

    def _rebuild(self):
        """Rebuild the run-level files; a full disk costs a warning, not the run (resume rebuilds them)."""
        try:
            return self.benchmark.rebuild(self.cfg.run_dir)
        except OSError as exc:
            warnings.warn(f"clawswe: could not update {self.cfg.run_dir} ({exc.strerror or exc}); "
                          "the instance folders are intact and a resumed run rebuilds these files")
            return None

    # -- the end -----------------------------------------------------------------------------------
    @pytest.hookimpl(tryfirst=True)  # before junitxml writes its file
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        """Rebuild the run files and hand the totals to the JUnit file."""
        if not self.writes:
            return
        self._rebuild()
        summary_file = self.cfg.run_dir / "summary.json"
        _add_disk_use(self.cfg, summary_file, len(self.config.stash.get(ITEMS_KEY, [])),
                      self.benchmark.item_records(self.cfg.run_dir))
        from _pytest.junitxml import xml_key

        xml = self.config.stash.get(xml_key, None)
        if xml is not None:
            for name, value in self.benchmark.junit_properties(self.cfg.run_dir):
                xml.add_global_property(name, value)

    def pytest_unconfigure(self) -> None:
        """Close the runner, stop the gateway, and (controller) sweep what the run left in Docker."""
        if self._runner is not None and hasattr(self._runner, "close"):
            self._runner.close()
        if self.gateway_process is not None:
            self.gateway_process.stop()
        if self.writes:
            # xdist has stopped its workers by now (in its sessionfinish); one still alive keeps its objects
            self._sweep(wait_s=60, spare_live_others=True, progress=_progress)

    def _sweep(self, **kwargs) -> None:
        """The run's leftovers, on each of its engines (engine/hosts.py), and its namespace on the cluster (at
        the end: all of it; at the start: the pods a killed attempt left)."""
        for host in self.hosts:
            sweep_run(self.cfg.run_id, host=host, **kwargs)
        if self.kube is not None:
            self.kube.sweep(end=kwargs.get("include_live", True), progress=kwargs.get("progress"))

    # -- Ctrl-C ------------------------------------------------------------------------------------
    def install_interrupts(self) -> None:
        try:
            signal.signal(signal.SIGINT, self._on_sigint)
        except ValueError:  # not the main thread: pytest's own handling stays
            pass

    def _on_sigint(self, signum, frame) -> None:
        if self.is_worker:  # a worker ends its item on the first SIGINT and ignores the rest: the controller decides
            if not self.stopping:
                self.stopping = True
                raise KeyboardInterrupt
            return
        if not self.stopping:
            self.stopping = True
            _progress("interrupted: the running instances stop and end as errors (--resume runs them "
                      "again); press Ctrl-C again to stop at once")
            for pid in self._worker_pids:  # from a terminal they have it already; a worker takes only the first
                _signal(pid, signal.SIGINT)
            raise KeyboardInterrupt
        self._stop_now()

    def _stop_now(self) -> None:
        """The second Ctrl-C: kill the workers and everything of the run, and exit."""
        for pid in self._worker_pids:
            _signal(pid, signal.SIGKILL)
        if self.gateway_process is not None:
            self.gateway_process.stop()
        self._sweep()
        _progress(f"stopped at once; `pytest --resume {self.cfg.run_dir}` runs what did not finish")
        os._exit(pytest.ExitCode.INTERRUPTED)


def _signal(pid: int, sig: int) -> None:
    try:
        os.kill(pid, sig)
    except OSError:
        pass


def _collect(session: pytest.Session, collector: pytest.Collector) -> bool:
    from _pytest.runner import collect_one_node

    config = session.config
    session.ihook.pytest_collectstart(collector=collector)
    report = collect_one_node(collector)
    session.ihook.pytest_collectreport(report=report)
    items: list = list(report.result) if report.passed else []
    session.ihook.pytest_collection_modifyitems(session=session, config=config, items=items)
    session.items = items  # before collection_finish: xdist workers report session.items from it
    session.testscollected = len(items)
    session.ihook.pytest_collection_finish(session=session)
    if report.failed:
        session.testsfailed += 1
    return True


def _add_disk_use(cfg: RunConfig, summary_file, items: int, records: list[dict]) -> None:
    """The run's disk use (its folder, the images its items' `records` name) into summary.json; skipped when
    unknown."""
    import docker.errors

    from pytest_clawswe.engine.images.cache_level import disk_use, resolve
    from pytest_clawswe.engine.docker.client import docker_client

    if not summary_file.is_file():
        return
    try:
        images = [r.get("image") for r in records]
        client = docker_client()
        disk = disk_use(client, cfg.run_dir, [i for i in images if i], resolve(cfg.cache_level, items))
        summary = json.loads(summary_file.read_text())
        summary["disk"] = disk
        if cfg.image_cache:
            from pytest_clawswe.engine.images.cache import summary as cache_summary

            summary["image_cache"] = cache_summary(records, cfg.image_cache, client)
        write_atomic(summary_file, json.dumps(summary, indent=2) + "\n")
    except (docker.errors.DockerException, InfraError, OSError, ValueError):
        return


def _shaping_in_effect(cfg: RunConfig) -> dict | None:
    """What the gateway does to this run's requests (run.json), or None when the run calls no model."""
    from pytest_clawswe.gateway.upstream.shaping import describe

    try:
        return describe(cfg.model.spec, cfg.harness_name, cfg.gateway_shaping)
    except ValueError:  # no model: nothing to shape
        return None
