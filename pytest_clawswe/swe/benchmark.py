"""Claw-SWE-Bench as the run session sees it: its selection, collector, runner, run files and commands."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_clawswe.errors import DatasetError
from pytest_clawswe.run.benchmark import Benchmark
from pytest_clawswe.run.item.runner import progress
from pytest_clawswe.swe.dataset import (
    UNKNOWN_MARKER,
    Instance,
    load_instances,
    read_instances_file,
    select,
    validate_row,
)
from pytest_clawswe.swe.items import DatasetCollector
from pytest_clawswe.swe.options import OPTIONS, swe_options

NAMED = ("demo", "claw-swe-bench", "multilingual", "verified-mini")


class ClawSweBench(Benchmark):
    """SWE-bench-style instances: the shipped Claw-SWE-Bench lists, the demo set or a local dataset."""

    name = "swe"
    title = "Claw-SWE-Bench"
    declared_options = OPTIONS  # swe/options.py

    def __init__(self, config: pytest.Config):
        super().__init__(config)
        # its settings, checked once: a bad --eval-timeout is one sentence before anything is written
        self.options = swe_options(config, self.regrade.info if self.regrade is not None else None)
        self._selected: list[Instance] | None = None
        self._health: list = []  # [the --health file (report/health.Health) or None], once read

    def select(self) -> list[Instance]:
        if self._selected is None:
            health = self.health()  # a bad --health file: one sentence, before anything is written
            try:
                self._selected = self._select() if self.regrade is None else self._select_kept()
            except DatasetError as exc:
                hint = "; give the dataset the run was made with (--dataset PATH)" if self.regrade else ""
                raise pytest.UsageError(f"{exc}{hint}") from None
            if health is not None:
                from pytest_clawswe.swe.health.marks import check_selection

                check_selection(health, [i.instance_id for i in self._selected])
        return self._selected

    def health(self):
        """The run's --health file, read once (pytest.UsageError for a bad one); None without the option."""
        if not self._health:
            from pytest_clawswe.swe.health.marks import health_option

            self._health.append(health_option(self.config))
        return self._health[0]

    def _select(self) -> list[Instance]:
        config, opts = self.config, self.options
        dataset = opts.dataset
        instances = load_instances(dataset, lite=opts.lite)
        if not instances:
            raise DatasetError(f"dataset {dataset} has no instances; give a dataset with at least one row")
        ids = list(opts.instance_ids)
        if opts.instances_file:
            ids += read_instances_file(opts.instances_file)
        selected = select(instances, ids)
        for inst in selected:  # local rows are at hand: a row swebench cannot grade is refused now
            if inst.row is not None:
                validate_row(inst.row, inst.source)
        unknown = [i.instance_id for i in selected if i.language == "unknown"]
        if unknown and not hasattr(config, "workerinput"):
            config.issue_config_time_warning(UserWarning(
                f"clawswe: the language group of {len(unknown)} instance(s) (e.g. {unknown[0]}) could not be "
                "inferred from a language field, the log_parser or the repository's files; they are marked "
                f"{UNKNOWN_MARKER} and counted as 'unknown' (add a language field to the rows)"), stacklevel=2)
        return selected

    def _select_kept(self) -> list[Instance]:
        """A regrade's instances: RUN's that kept a patch to evaluate (swe/regrade.py)."""
        from pytest_clawswe.swe.regrade import kept_instances

        dataset = self.config.getoption("dataset")
        found, left_out = kept_instances(self.config, self.regrade, load_instances(dataset), dataset,
                                         self._collector_name())
        if left_out and not hasattr(self.config, "workerinput"):
            self.config.issue_config_time_warning(UserWarning(
                f"clawswe: {len(left_out)} instance(s) of {self.regrade.path} are not evaluated again: they ended "
                f"before their patch was kept, or in a provider failure ({', '.join(left_out[:5])})"), stacklevel=2)
        return found

    def _collector_name(self) -> str:
        dataset = self.config.getoption("dataset")
        return dataset if dataset in NAMED else Path(dataset).name

    def collector(self, session: pytest.Session) -> pytest.Collector:
        name = self._collector_name()
        return DatasetCollector.from_parent(session, name=name, nodeid=name, benchmark=self,
                                            eval_timeout_s=self.options.eval_timeout_s)

    def runner(self, run_session):
        from pytest_clawswe.engine.hosts import worker_index
        from pytest_clawswe.swe.instance.runner import InstanceRunner

        cfg, hosts = run_session.cfg, run_session.hosts
        index = worker_index(self.config, len(hosts))  # this worker's engine (engine/hosts.py)
        if self.regrade is not None:  # RUN's patches evaluated again, no agent (swe/regrade.py)
            from pytest_clawswe.swe.regrade import InstanceRegrader

            runner = InstanceRegrader(cfg, hosts[index].client(), self.regrade, progress=progress)
        else:
            runner = InstanceRunner(cfg, cfg.new_harness(), hosts[index].client(), progress=progress)
            runner.cache_level = run_session.cache_level  # --cache-level auto resolved by the number of items
        runner.swe = self.options
        runner.benchmark = type(self)
        from pytest_clawswe.engine.hosts import is_remote

        # another machine's engine: its agents reach the gateway through its relay (gateway/control/relay.py)
        runner.join_run_gateway(engine=hosts[index].name if is_remote(hosts[index].url) else "")
        runner.host_name = hosts[index].name
        if index:  # images are built or pulled on the first engine and loaded from there
            runner.image_source = hosts[0].client()
        runner.health = self.health()
        if run_session.kube is not None:  # --kubernetes: the sandboxes and evaluations are pods (run/kube_run.py)
            site = run_session.kube.site(runner.client, progress)
            if runner.gateway is not None:
                site.use_gateway(runner.gateway.url)
            runner.workspace_factory = site.workspace_factory()
            runner.pod_site = site  # a stage past its limit deletes the item's pods
            runner.eval_client = site.docker_client()
            runner.host_name = run_session.kube.name
        return runner


    # run.json keys of its settings -> the option that sets them (a resume with another value is refused)
    run_info_options = {"dataset_revision": "--dataset-revision", "eval_timeout_s": "--eval-timeout",
                        "purge": "--no-purge"}

    def run_info(self) -> dict:
        opts = self.options
        purge = opts.purge
        health = self.health()
        if self.regrade is not None:  # the run's own settings stay (run/regrade/); a --health given is the regrade's
            return {"eval_timeout_s": opts.eval_timeout_s, **({"health": health.label()} if health is not None else {})}
        # the marks are written into each instance's result: a resume uses the same file (compared here)
        return {"dataset_revision": opts.dataset_revision, "eval_timeout_s": opts.eval_timeout_s, "purge": purge,
                "lite": opts.lite,
                "ablation": None if purge else "no-purge (paper §5.3): future commits kept; not comparable",
                "health": None if health is None else health.label()}

    def warning_lines(self, run_dir) -> list[str]:
        if self.regrade is None and not self.options.purge:
            return ["ABLATION --no-purge: future commits were kept in /testbed; not comparable to the paper"]
        return []

    def item_records(self, run_dir) -> list[dict]:
        import json

        return [json.loads(m.read_text()) for m in (Path(run_dir) / "instances").glob("*/metadata.json")]

    aliases = ("claw-swe-bench",)  # run.json's "benchmark" before the benchmarks became packages

    @classmethod
    def owns(cls, run_info: dict) -> bool:
        return super().owns(run_info) or "benchmark" not in run_info  # runs from before the key existed

    @classmethod
    def is_run_dir(cls, path) -> bool:
        return super().is_run_dir(path) or (path / "instances").is_dir()

    @classmethod
    def report(cls, run_dirs: list, args) -> dict:
        from pytest_clawswe.swe.report import run_report

        return run_report(run_dirs, args)

    @classmethod
    def add_cli(cls, subparsers) -> None:
        from pytest_clawswe.swe import grid, lite
        from pytest_clawswe.swe.health import cli
        from pytest_clawswe.swe.instance import images

        for module in (images, lite, grid, cli):
            module.add_cli(subparsers)

    @classmethod
    def trajectory_outcome(cls, folder: Path, result: dict) -> dict:
        """The patch and the evaluator's FAIL_TO_PASS / PASS_TO_PASS results of an instance (its metadata.json)."""
        outcome = {"resolved": "resolved", "unresolved": "not_resolved", "apply_failed": "not_resolved"}.get(
            str(result.get("outcome")), "error")
        patch_file = folder / "patch.diff"
        patch = patch_file.read_text(errors="replace") if patch_file.is_file() else None
        tests = None
        try:
            report = json.loads((folder / "eval" / "report.json").read_text())
            entry = report.get(result.get("instance_id")) or next(iter(report.values()))
            status = entry.get("tests_status") or {}
            tests = {kind: {"passed": list((status.get(kind) or {}).get("success") or []),
                            "failed": list((status.get(kind) or {}).get("failure") or [])}
                     for kind in ("FAIL_TO_PASS", "PASS_TO_PASS")}
        except (OSError, ValueError, AttributeError, StopIteration):
            pass
        return {"outcome": outcome, "patch": patch or None, "tests": tests, "criteria": None, "score": None}

    timing_phases = (("prepare_image", "environment_setup"), ("container_start", "environment_setup"),
                     ("purge_check", "environment_setup"), ("agent", "agent_execution"), ("patch", None),
                     ("container_remove", None), ("score", "verifier"))
    agent_log = "agent.log"
    verifier_log = "eval/test_output.txt"  # what the tests printed in the evaluator's container

    @classmethod
    def rewards(cls, folder: Path, result: dict) -> dict[str, float] | None:
        """1 when the evaluator said resolved, 0 when it said otherwise; None for an error (no verdict)."""
        if result.get("outcome") not in ("resolved", "unresolved", "apply_failed"):
            return None
        return {"reward": 1.0 if result["outcome"] == "resolved" else 0.0}

    protocol_keys = ("eval_timeout_s", "purge")
    pass_metric = "resolve_rate"

    # `clawswe regrade` (run/regrade/, swe/regrade.py): the evaluation again, e.g. after a swebench upgrade
    can_regrade = True
    regrade_options = ("eval_timeout", "health")
    grading_keys = ("eval_timeout_s", "health")

    def regrade_info(self) -> dict:
        from pytest_clawswe.swe.regrade import swebench_version

        return {"swebench": swebench_version()}

    def regrade_summary(self) -> str:
        from pytest_clawswe.swe.regrade import swebench_version

        return f"the SWE-bench evaluation again, with swebench {swebench_version()}"

    @classmethod
    def item_scores(cls, run_dir) -> tuple[dict[str, float], dict[str, bool], list[str]]:
        from pytest_clawswe.run.item.result import ERROR
        from pytest_clawswe.swe.results.run_dir import load_results

        values, passed, errors = {}, {}, []
        for r in load_results(run_dir):
            if r.outcome == ERROR or r.resolved is None:
                errors.append(r.instance_id)
            else:
                values[r.instance_id], passed[r.instance_id] = float(bool(r.resolved)), bool(r.resolved)
        return values, passed, errors

    @classmethod
    def item_folders(cls, run_dir: Path) -> list[tuple[str, Path, dict]]:
        """(instance id, folder, metadata.json) of every ended instance of a run."""
        return _ended(Path(run_dir) / "instances", "metadata.json", "instance_id")

    def rebuild(self, run_dir):
        from pytest_clawswe.swe.results import run_files

        return run_files.rebuild(run_dir)

    def progress_line(self, results, total):
        from pytest_clawswe.swe.results.summary import progress_line

        return progress_line(results, total)

    def junit_properties(self, run_dir):
        import json

        from pytest_clawswe.swe.results.summary import junit_properties

        summary_file = Path(run_dir) / "summary.json"
        return list(junit_properties(json.loads(summary_file.read_text()))) if summary_file.is_file() else []

    def terminal_lines(self, run_dir):
        import json

        from pytest_clawswe.swe.results.summary import terminal_lines

        summary_file = Path(run_dir) / "summary.json"
        return list(terminal_lines(json.loads(summary_file.read_text()))) if summary_file.is_file() else []


def _ended(parent: Path, result_name: str, id_key: str) -> list[tuple[str, Path, dict]]:
    items = []
    for folder in sorted(p for p in parent.glob("*") if p.is_dir() and not p.name.startswith(".")):
        try:
            result = json.loads((folder / result_name).read_text())
        except (OSError, ValueError):
            continue  # an item that never ended has no result
        items.append((str(result.get(id_key) or folder.name), folder, result))
    return items
