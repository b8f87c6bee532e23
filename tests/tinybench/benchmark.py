"""The tiny benchmark as the run session sees it, its item, its runner and its result."""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import pytest

from pytest_clawswe.api import (
    AgentContext,
    AgentRun,
    Benchmark,
    BenchmarkCollector,
    BenchmarkItem,
    Harness,
    ItemResult,
    ItemRunner,
    Workspace,
    get_harness_class,
    progress,
    run_agent,
    write_atomic,
)

IMAGE = "debian:bookworm-slim"  # made by scripts/docker-up.sh on every machine the tests run on
ANSWER = "/work/answer.txt"


@dataclass(frozen=True)
class TinyTask:
    id: str
    word: str

    @property
    def prompt(self) -> str:
        return f"Write the word {self.word} into {ANSWER}."


@dataclass
class TinyResult(ItemResult):
    task_id: str
    answer: str = ""

    @classmethod
    def from_json(cls, data: dict) -> TinyResult:
        return cls(**{k: v for k, v in data.items() if k in cls.__dataclass_fields__})


class TinyBench(Benchmark):
    name, title = "tinybench", "Tiny Bench"

    def select(self) -> list[TinyTask]:
        words = [w for w in self.config.getoption("tiny_tasks").split(",") if w]
        if not words:
            raise pytest.UsageError("--tiny-tasks names no word; give e.g. --tiny-tasks hello,world")
        return [TinyTask(f"tiny-{w}", w) for w in words]

    def collector(self, session):
        return TinyCollector.from_parent(session, name="tinybench", nodeid="tinybench", benchmark=self)

    def runner(self, run_session):
        cfg = run_session.cfg
        harness = get_harness_class(cfg.harness_spec)(cfg.model.spec, cfg.harness_options)
        return TinyRunner(cfg, harness, run_session.hosts[0].client(), progress=progress)

    def rebuild(self, run_dir):
        results = [TinyResult.from_json(json.loads(p.read_text()))
                   for p in sorted(Path(run_dir).glob("tasks/*/result.json"))]
        passed = sum(r.outcome == "passed" for r in results)
        write_atomic(Path(run_dir) / "summary.json", json.dumps({"tasks": len(results), "passed": passed}) + "\n")
        return results

    def terminal_lines(self, run_dir):
        summary = json.loads((Path(run_dir) / "summary.json").read_text())
        return [f"tinybench: {summary['passed']}/{summary['tasks']} passed"]


class TinyCollector(BenchmarkCollector):
    def __init__(self, *, benchmark: TinyBench, **kwargs):
        super().__init__(**kwargs)
        self.benchmark = benchmark

    def collect(self):
        for task in self.benchmark.select():
            yield TinyItem.from_parent(self, name=task.id, task=task)


class TinyItem(BenchmarkItem):
    def __init__(self, *, task: TinyTask, **kwargs):
        super().__init__(target=task, item_id=task.id, **kwargs)

    def runtest(self) -> None:
        assert self.result.outcome == "passed", f"the answer was {self.result.answer!r}"


class TinyRunner(ItemRunner):
    result_type = TinyResult

    def item_dir(self, item_id: str) -> Path:
        return self.config.run_dir / "tasks" / item_id

    def item_id(self, task: TinyTask) -> str:
        return task.id

    def new_result(self, task: TinyTask) -> TinyResult:
        cfg = self.config
        return TinyResult(task.id, run_id=cfg.run_id, harness=cfg.harness_name, model=cfg.model.spec)

    def run_phases(self, task: TinyTask, work: Path, result: TinyResult) -> None:
        self._ensure_harness()
        cfg = self.config
        with Workspace(self.client, IMAGE, labels=self.labels, network=cfg.network or "none",
                       mem_limit=cfg.mem_limit, pids_limit=cfg.pids_limit) as ws:
            ws.exec("mkdir -p /work", check=True)
            ctx = AgentContext(task.id, {"word": task.word}, ws, work, cfg.model.spec, cfg.budget_s, workdir="/work")
            run = run_agent(self.harness, ctx, task.prompt, cfg.disk_limit)
            result.finish_reason = run.finish_reason
            result.answer = (ws.read_file(ANSWER) or b"").decode().strip()
        result.outcome = "passed" if result.answer == task.word else "failed"


class EchoHarness(Harness):
    """A harness of the tiny benchmark's own (`--harness tinybench.benchmark:EchoHarness`): it does what the
    prompt says by reading the word from it, with no model."""

    name = "echo"
    needs_model = False

    def send_task(self, ctx: AgentContext, prompt: str) -> AgentRun:
        word = prompt.split("the word ", 1)[1].split(" ", 1)[0]
        done = ctx.workspace.exec(["sh", "-c", f"printf %s {word} > {ANSWER}"], timeout=ctx.budget_s)
        return AgentRun("stop" if done.exit_code == 0 else "error", done.output, done.exit_code)
