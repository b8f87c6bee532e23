"""WildClawBench as the run session sees it: task files checked and collected, the task runner, the run's files."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_clawswe.model import Model
from pytest_clawswe.run.benchmark import Benchmark
from pytest_clawswe.run.item.runner import progress
from pytest_clawswe.wildclaw import results as outputs
from pytest_clawswe.wildclaw.items import SuiteCollector
from pytest_clawswe.wildclaw.options import DEMO_DIR, OPTIONS, options


class WildClawBench(Benchmark):
    """WildClawBench task files: collection, runner and the run's files; the session does the rest."""

    name = "wildclaw"
    # a task runs once; its images are not per task; its budget is its own timeout_seconds
    unread_options = ("retries", "cache_level", "image_cache", "budget")
    # as released: agents browse, download and install (engine/network/internet.py keeps the host and neighbours out)
    default_network = "internet"
    instead_of = {"budget": "each task's budget is its own timeout_seconds; scale them with --budget-factor F",
                  "instance_ids": "select tasks with -k (a task id or a category) or -m",
                  "instances_file": "select tasks with -k (a task id or a category) or -m",
                  "lite": "select tasks with -k or -m"}

    def __init__(self, config: pytest.Config):
        super().__init__(config)
        from pytest_clawswe.harness.adapter import get_harness_class

        spec = config.getoption("harness")
        # --collect-only runs nothing: any harness (or none: plugin.py lends nop) may list the tasks; a regrade none
        if self.regrade is None and not config.option.collectonly and not get_harness_class(spec).needs_model:
            raise pytest.UsageError(f"--harness {spec} calls no model, so it cannot run WildClawBench tasks; use "
                                    "an agent harness (openclaw, claude-code, codex, hermes) with "
                                    "--model scripted/gold for a check without a key")
        self.options = options(config)  # before anything is written
        self._kept: list | None = None  # a regrade's tasks (select)
        from pytest_clawswe.gateway.record.calls import enabled

        # a regrade grades the transcript the run kept; a run builds it from the record
        if not config.option.collectonly and self.regrade is None and not enabled():
            raise pytest.UsageError("WildClawBench grades each task's transcript from the gateway's record of the "
                                    "model calls, so it cannot run with CLAWSWE_RECORD_CALLS=0; unset it")
        if self.options.task_image and not config.getoption("collectonly") and self.regrade is None:
            from pytest_clawswe.engine.docker.client import docker_client
            from pytest_clawswe.errors import InfraError
            from pytest_clawswe.wildclaw.task.images import check_task_image

            try:
                client = docker_client()
            except InfraError:
                client = None  # no engine: the session's engine check says so in its own sentence
            if client is not None:
                check_task_image(client, self.options.task_image)

    def select(self) -> list:
        if self.regrade is not None:  # the run's tasks graded again (wildclaw/regrade.py)
            return self._select_kept()
        from pytest_clawswe.wildclaw.task.file import TaskFileError, parse_task, task_files

        files = task_files(self.options.dataset_root)
        if not files:
            raise pytest.UsageError(f"{self.options.dataset_root}: no task files (expected tasks/<category>/*.md "
                                    "or *.md files); give a checkout of the suite or a folder of task files")
        seen: dict[str, Path] = {}
        for path in files:  # every task file read now: a bad one is a usage error before anything is written
            try:
                task = parse_task(path)
            except TaskFileError as exc:
                raise pytest.UsageError(f"{exc}; fix the task file or leave it out of --dataset") from None
            if task.id in seen:
                raise pytest.UsageError(f"{path}: task id {task.id!r} is also used by {seen[task.id]}")
            seen[task.id] = path
        return files

    def _select_kept(self) -> list:
        if self._kept is None:
            from pytest_clawswe.wildclaw.regrade import kept_tasks

            self._kept, left_out = kept_tasks(self.config, self.regrade, self.options.dataset_root)
            if left_out and not hasattr(self.config, "workerinput"):
                self.config.issue_config_time_warning(UserWarning(
                    f"clawswe: {len(left_out)} task(s) of {self.regrade.path} are not graded again: they ended before "
                    f"grading ({', '.join(left_out[:5])}{', ...' if len(left_out) > 5 else ''})"), stacklevel=2)
        return self._kept

    def check_grading_key(self) -> None:
        from pytest_clawswe.run.config import check_key

        check_key(self.options.judge_gateway_model, f"--judge-model {self.options.judge_model}",
                  "give --judge-model scripted to grade offline")

    def grading_model(self):
        return self.options.judge_gateway_model

    def collector(self, session: pytest.Session) -> pytest.Collector:
        if self.regrade is not None:
            from pytest_clawswe.wildclaw.regrade import RegradeCollector, collector_name

            name = collector_name(self.regrade)
            return RegradeCollector.from_parent(session, name=name, nodeid=name, benchmark=self)
        root = self.options.dataset_root
        name = "wildclaw-demo" if root == DEMO_DIR else root.name
        return SuiteCollector.from_parent(session, name=name, nodeid=name, root=root, options=self.options)

    def runner(self, run_session):
        from pytest_clawswe.engine.docker.client import docker_client
        from pytest_clawswe.wildclaw.task_runner import TaskRunner

        cfg = run_session.cfg
        client = docker_client()
        if self.regrade is not None:
            from pytest_clawswe.wildclaw.regrade import TaskRegrader

            runner = TaskRegrader(cfg, self.options, client, self.regrade, self.select(), progress=progress)
        else:
            runner = TaskRunner(cfg, self.options, cfg.new_harness(), client, progress=progress)
        runner.benchmark = type(self)
        runner.join_run_gateway()
        if run_session.kube is not None:  # --kubernetes: the task's and the grader's sandboxes are pods
            site = run_session.kube.site(client, progress)
            if runner.gateway is not None:
                site.use_gateway(runner.gateway.url)
            runner.workspace_factory = site.workspace_factory()
            runner.pod_site = site  # a stage past its limit deletes the item's pods
        return runner

    def check_engines(self, hosts: list, needs_model: bool) -> None:
        # another machine's engine reaches the gateway through a relay there (gateway/control/relay.py); the task
        # runner does not hand its agents the relay yet
        from pytest_clawswe.engine.hosts import is_remote

        if needs_model and any(is_remote(h.url) for h in hosts):
            raise pytest.UsageError("--benchmark wildclaw with a model-calling harness runs on this machine's "
                                    "engine only; drop the tcp:// and ssh:// --docker-host")

    title = "WildClawBench"
    declared_options = OPTIONS  # wildclaw/options.py

    @classmethod
    def report(cls, run_dirs: list, args) -> dict:
        from pytest_clawswe.wildclaw import report

        return report.run(run_dirs, args)

    @classmethod
    def add_cli(cls, subparsers) -> None:
        from pytest_clawswe.wildclaw import cli

        cli.add_cli(subparsers)

    @classmethod
    def trajectory_outcome(cls, folder: Path, result: dict) -> dict:
        """The grader's criteria and overall score of a task (its result.json)."""
        scores = result.get("scores") if isinstance(result.get("scores"), dict) else {}
        criteria = []
        for name, value in scores.items():
            if name == "overall_score":
                continue
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                criteria.append({"name": str(name), "score": float(value)})
            elif isinstance(value, dict) and isinstance(value.get("score"), (int, float)):
                entry = {"name": str(name), "score": float(value["score"])}
                if isinstance(value.get("weight"), (int, float)):
                    entry["weight"] = float(value["weight"])
                if value.get("note") or value.get("reason"):
                    entry["note"] = str(value.get("note") or value.get("reason"))
                criteria.append(entry)
        score = result.get("overall_score")
        return {"outcome": str(result.get("outcome") or "error"), "patch": None, "tests": None,
                "criteria": criteria or None, "score": float(score) if isinstance(score, (int, float)) else None}

    timing_phases = (("images", "environment_setup"), ("setup", "environment_setup"), ("agent", "agent_execution"),
                     ("snapshot", None), ("grade", "verifier"))  # ("services" is inside "setup")
    agent_log = "agent.log"
    verifier_log = "grade.log"

    @classmethod
    def rewards(cls, folder: Path, result: dict) -> dict[str, float] | None:
        """The overall score as "reward", and each criterion's score under its name; None for an error."""
        outcome = cls.trajectory_outcome(folder, result)
        if outcome["outcome"] == "error" or outcome["score"] is None:
            return None
        rewards = {"reward": outcome["score"]}
        for criterion in outcome["criteria"] or []:
            name = criterion["name"] if criterion["name"] != "reward" else "reward (criterion)"
            rewards[name] = criterion["score"]
        return rewards

    protocol_keys = ("judge_model", "grade_timeout_s", "budget_factor", "skills")
    protocol_defaults = {"budget_factor": 1.0, "skills": True}
    scored = True

    # `clawswe regrade` (run/regrade/, wildclaw/regrade.py): the judge and how grading runs may change
    can_regrade = True
    regrade_options = ("judge_model", "scripted_fixtures", "grade_timeout", "pass_score")
    grading_keys = ("judge_model", "grade_timeout_s", "pass_score", "scripted_fixtures")

    def regrade_model(self) -> Model | None:
        return self.options.judge_gateway_model

    def regrade_info(self) -> dict:
        o, before = self.options, self.regrade.info
        return {"judge_model": o.judge_model, "judge_model_before": before.get("judge_model"),
                "scripted_fixtures": str(o.scripted_fixtures) if o.scripted_fixtures else None,
                "scripted_fixtures_before": before.get("scripted_fixtures")}

    def regrade_summary(self) -> str:
        o, before = self.options, self.regrade.info
        scripted = o.judge_gateway_model.is_scripted
        own = "each task's judge.json"
        text = f"graded by judge {o.judge_model}" + (f" answering from {o.scripted_fixtures or own}" if scripted else "")
        changed = [f"judge {before.get('judge_model')}"] if before.get("judge_model") != o.judge_model else []
        if scripted and str(o.scripted_fixtures or "") != str(before.get("scripted_fixtures") or ""):
            changed.append(f"answers from {before.get('scripted_fixtures') or own}")
        return text + (f" (the run's: {', '.join(changed)})" if changed else " (as the run was)")

    @classmethod
    def item_scores(cls, run_dir) -> tuple[dict[str, float], dict[str, bool], list[str]]:
        from pytest_clawswe.run.item.result import ERROR

        values, passed, errors = {}, {}, []
        for t in outputs.load_results(run_dir):
            if t.outcome == ERROR:
                errors.append(t.task_id)
            else:
                values[t.task_id] = float(t.overall_score or 0.0)  # no score counts 0, as released
                passed[t.task_id] = t.outcome == "passed"
        return values, passed, errors

    @classmethod
    def item_folders(cls, run_dir: Path) -> list[tuple[str, Path, dict]]:
        """(task id, folder, result.json) of every ended task of a run."""
        return outputs.ended_tasks(run_dir)

    def harness_defaults(self, harness: str) -> dict[str, str]:
        # the released runner's OpenClaw works in the task's folder (its default agent, ~/.openclaw/workspace linked
        # there), not in a per-instance agent workspace as Claw-SWE-Bench's does; it denies no tool (Claw-SWE-Bench
        # denies the image tool, web and memory tools) and makes the chat model its image model
        # Every released runner stops its agent at exactly timeout_seconds (no grace past it).
        released = {"openclaw": {"workspace": "workdir", "tools_deny": "", "image_input": "true"},
                    "claude-code": {"prompt_caching": "false", "interleaved_thinking": "false",
                                    "experimental_betas": "false"},
                    "codex": {"reasoning_summary": "none", "reasoning_summaries": "false", "hide_reasoning": "true"},
                    # its bench runner's max_iterations, no reasoning config unless --thinking (the provider's
                    # default; an empty agent.reasoning_effort is that to hermes), and AIAgent's default of every
                    # toolset (enabled_toolsets=None; `--toolsets all` to hermes chat)
                    "hermes": {"max_turns": "90", "reasoning_effort": "", "toolsets": "all"}}
        return {**released[harness], "grace": "0"} if harness in released else {}

    def run_info(self) -> dict:
        o = self.options
        ablations = o.ablations()
        return {"judge_model": o.judge_model, "pass_score": o.pass_score, "grade_timeout_s": o.grade_timeout_s,
                "dataset_root": str(o.dataset_root), "task_image": o.task_image,
                "scripted_fixtures": str(o.scripted_fixtures) if o.scripted_fixtures else None,
                # the paper's ablations: compared on --resume (a run mixing two budgets would be neither)
                "budget_factor": o.budget_factor, "skills": o.skills,
                "ablation": "; ".join(ablations) + "; not comparable" if ablations else None}

    run_info_options = {"budget_factor": "--budget-factor", "skills": "skills (--no-skills)",
                        "ablation": "the ablation", "judge_model": "--judge-model", "pass_score": "--pass-score",
                        "grade_timeout_s": "--grade-timeout", "task_image": "--task-image",
                        "scripted_fixtures": "--scripted-fixtures", "dataset_root": "--dataset"}

    def warning_lines(self, run_dir) -> list[str]:
        return [f"ABLATION {line}; not comparable to the paper" for line in self.options.ablations()]

    def rebuild(self, run_dir):
        return outputs.rebuild(run_dir)

    def progress_line(self, results, total):
        done = len(results)
        scored = [r.overall_score or 0.0 for r in results]
        mean = sum(scored) / done if done else 0.0
        return f"{done}/{total or '?'} task(s) done, mean score so far {mean:.3f}"

    def junit_properties(self, run_dir):
        summary = outputs.summarise(outputs.load_results(run_dir))
        return [(f"wildclaw.{key}", summary[key])
                for key in ("mean_score", "tasks", "passed", "errors", "judge_tokens", "pass_score")]

    def terminal_lines(self, run_dir):
        path = Path(run_dir) / "summary.json"
        return outputs.terminal_lines(json.loads(path.read_text())) if path.is_file() else []
