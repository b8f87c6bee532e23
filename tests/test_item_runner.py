"""ItemRunner, what both benchmarks' runners share: resume reads, the atomic commit, the infrastructure retry."""
import errno
import json
from dataclasses import asdict, dataclass

import pytest

from pytest_clawswe.errors import InfraError
from pytest_clawswe.run.config import RunConfig
from pytest_clawswe.run.item.runner import INFRA_RETRIES, ItemRunner


@dataclass
class Result:
    item_id: str
    outcome: str = "error"
    usage: int = 0

    def to_json(self):
        return asdict(self)

    @classmethod
    def from_json(cls, data):
        return cls(**data)


class FakeRunner(ItemRunner):
    """Each attempt takes the next entry of `script`: an exception to raise (after committing an error
    result, as the real runners do) or an outcome to return."""

    result_type = Result

    def __init__(self, run_dir, script):
        super().__init__(RunConfig("r", run_dir, "fake", "m"), harness=None, client=None,
                         progress=self.lines.append)
        self.script, self.carried = list(script), []

    lines: list = []

    def item_dir(self, item_id):
        return self.config.run_dir / "items" / item_id

    def item_id(self, item):
        return item

    def _run_once(self, item, carried):
        self.carried.append(carried)
        work, final = self._partial_folder(item)
        step = self.script.pop(0)
        result = Result(item, usage=10)
        self._last_result = result
        if isinstance(step, BaseException):
            self._commit(work, final, result, item)
            raise step
        result.outcome = step
        self._commit(work, final, result, item)
        return result


@pytest.fixture(autouse=True)
def _fresh_lines():
    FakeRunner.lines = []


def on_disk(runner, item_id):
    return json.loads((runner.item_dir(item_id) / runner.RESULT_FILE).read_text())


def test_a_retryable_infra_error_reruns_the_item_once_carrying_the_failed_attempt(tmp_path):
    runner = FakeRunner(tmp_path, [InfraError("engine hiccup"), "passed"])
    result = runner.run("a")
    assert result.outcome == "passed" and on_disk(runner, "a")["outcome"] == "passed"
    assert runner.carried[0] is None and runner.carried[1] == Result("a", "error", 10)
    assert FakeRunner.lines == ["a: engine hiccup; retrying once from scratch"]
    assert sorted(p.name for p in (tmp_path / "items").iterdir()) == ["a"]  # no partial or old folder left


def test_the_retry_happens_once_only_and_never_for_a_final_infra_error(tmp_path):
    runner = FakeRunner(tmp_path, [InfraError("one")] * (1 + INFRA_RETRIES) + ["passed"])
    with pytest.raises(InfraError, match="one"):
        runner.run("a")
    assert len(runner.carried) == 1 + INFRA_RETRIES
    runner = FakeRunner(tmp_path, [InfraError("disk full", retryable=False), "passed"])
    with pytest.raises(InfraError, match="disk full"):
        runner.run("b")
    assert len(runner.carried) == 1 and FakeRunner.lines == ["a: one; retrying once from scratch"]


def test_other_exceptions_are_not_retried(tmp_path):
    runner = FakeRunner(tmp_path, [KeyboardInterrupt(), "passed"])
    with pytest.raises(KeyboardInterrupt):
        runner.run("a")
    assert len(runner.carried) == 1


def test_finished_keeps_final_results_only_and_error_result_reads_the_errors(tmp_path):
    runner = FakeRunner(tmp_path, ["passed", "failed", ValueError("bug")])
    assert runner.finished("a") is None and runner.error_result("a") is None  # nothing yet
    runner.run("a")
    runner.run("b")
    with pytest.raises(ValueError):
        runner.run("c")
    assert runner.finished("a").outcome == "passed" and runner.finished("b").outcome == "failed"
    assert runner.finished("c") is None  # an error is not final: a resume runs it again
    assert runner.error_result("c") == Result("c", "error", 10) and runner.error_result("a") is None
    (runner.item_dir("c") / runner.RESULT_FILE).write_text("{not json")
    assert runner.error_result("c") is None  # unreadable: nothing to announce
    with pytest.raises(ValueError):
        runner.finished("c")  # a resume does not guess at a damaged result


def test_a_commit_that_cannot_write_keeps_the_earlier_folder_and_says_what_to_do(tmp_path, monkeypatch):
    runner = FakeRunner(tmp_path, ["failed", "passed"])
    runner.run("a")

    def full(work, result):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(runner, "_write_result", full)
    with pytest.raises(InfraError, match="cannot write the results of a .*No space left.*resume") as info:
        runner.run("a")
    assert not info.value.retryable
    assert on_disk(runner, "a")["outcome"] == "failed"  # the earlier folder, untouched


def test_an_unwritable_run_folder_is_a_final_infra_error(tmp_path):
    (tmp_path / "items").write_text("a file where the items' folder should be")
    runner = FakeRunner(tmp_path, ["passed"])
    with pytest.raises(InfraError, match="cannot create") as info:
        runner.run("a")
    assert not info.value.retryable


def test_both_benchmarks_runners_read_their_own_result_files(tmp_path):
    from pytest_clawswe.swe.instance.runner import InstanceRunner as Runner
    from pytest_clawswe.swe.results.run_dir import InstanceResult
    from pytest_clawswe.wildclaw.options import WildOptions
    from pytest_clawswe.wildclaw.results import TaskResult
    from pytest_clawswe.wildclaw.task_runner import TaskRunner as WildRunner

    cfg = RunConfig("r", tmp_path, "oracle", "")
    swe, wild = Runner(cfg, None, None), WildRunner(cfg, WildOptions(tmp_path), None, None)
    for runner, result in ((swe, InstanceResult("i-1", outcome="resolved")), (wild, TaskResult("t-1", outcome="passed"))):
        item_id = getattr(result, "instance_id", None) or result.task_id
        work, final = runner._partial_folder(item_id)
        runner._commit(work, final, result, item_id)
        assert runner.finished(item_id) == result
    assert (tmp_path / "instances" / "i-1" / "metadata.json").is_file()
    assert {p.name for p in (tmp_path / "tasks" / "t-1").iterdir()} == {"result.json", "score.json", "usage.json"}


def test_wildclaw_takes_its_infra_retry_from_the_runner(tmp_path):
    from types import SimpleNamespace

    from pytest_clawswe.wildclaw.options import WildOptions
    from pytest_clawswe.wildclaw.task_runner import TaskRunner as WildRunner

    lines: list[str] = []
    runner = WildRunner(RunConfig("r", tmp_path, "claude-code", "m"), WildOptions(tmp_path), None, None,
                        progress=lines.append)
    task = SimpleNamespace(id="t-1", name="t", category="code", modality="text", timeout_seconds=60)
    attempts = []

    def run(task, work, result):
        attempts.append(work)
        if len(attempts) == 1:
            raise InfraError("the Docker engine stopped answering")
        result.outcome, result.overall_score = "passed", 1.0

    runner.run_phases = run
    assert runner.run(task).outcome == "passed" and len(attempts) == 2
    assert lines == ["t-1: the Docker engine stopped answering; retrying once from scratch"]
    assert runner.finished("t-1").overall_score == 1.0


def test_images_are_released_only_after_the_evaluation_containers_removal_ended(monkeypatch):
    """Under --cache-level base/none the instance image goes when the item ends, unless a container still runs from
    it: the evaluation container's removal (a thread beside the item) must have ended first. The join named the
    scoring module by its old place after a move and joined nothing: CI found the image kept."""
    import threading
    import time

    from pytest_clawswe.swe.grading import scoring
    from pytest_clawswe.swe.instance import runner

    done = threading.Event()
    removal = threading.Thread(target=lambda: (time.sleep(0.3), done.set()), daemon=True)
    removal.start()
    monkeypatch.setattr(scoring, "_REMOVALS", [removal])
    runner._join_eval_removals()
    assert done.is_set()
