"""`clawswe export harbor`: run folders of both benchmarks as Harbor jobs. The runs here are small but real where it
matters: a real gateway process records every model call (official SDKs as clients, the scripted model), a second
registration of an item is its retried attempt; the item folders are written as the runners write them. Harbor's own
models (in its Python 3.12 venv, tests/harbor_venv.py) read every file back; the demo runs of both benchmarks, Harbor's
viewer and a browser are tests/test_harbor_view.py's."""
from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from harbor_venv import harbor_python  # noqa: F401 (a fixture)
from test_gateway import CONVERSATIONS, GOLD

from pytest_clawswe.cli import main as clawswe_main
from pytest_clawswe.errors import UserError
from pytest_clawswe.gateway import GatewayProcess
from pytest_clawswe.gateway.record.ledger import read_records
from pytest_clawswe.report.harbor import export

pytestmark = pytest.mark.timeout(300)
KEY = "sk-or-v1-HARBOR-EXPORT-MUST-NOT-CARRY-THIS-KEY"
STARTED = "2026-11-20T10:00:00.000+00:00"
SWE_TIMINGS = {"prepare_image": 2.0, "made_ahead": 4.0, "container_start": 1.0, "purge_check": 0.5, "agent": 10.0,
               "patch": 1.0, "container_remove": 0.25, "score": 3.0, "total": 18.0}


def _calls(gateway, item_id: str, attempts: int = 1) -> list[str]:
    """`attempts` registrations of the item (the second is its retried attempt), each a two-call conversation
    through the gateway; the tokens used."""
    tokens = []
    for _ in range(attempts):
        token = gateway.client().register(item_id, "scripted/gold", GOLD)
        CONVERSATIONS["chat"](gateway.url, token, True)
        gateway.client().requests(token)  # waits for the ledger, as the runner does
        tokens.append(token)
    return tokens


def _run_json(run_dir: Path, benchmark: str) -> None:
    (run_dir / "run.json").write_text(json.dumps({
        "run_id": f"sdk_scripted-gold_{benchmark}", "harness": "sdk", "model": "scripted/gold", "dataset": "demo",
        "benchmark": benchmark, "started_at": "2026-11-20T09:59:00+0000",
        "harness_settings": {"version": "1.2.3", "model_name": None}}))


def _item(run_dir: Path, parent: str, result_file: str, item_id: str, result: dict, files: dict) -> Path:
    folder = run_dir / parent / item_id
    for rel, text in files.items():
        (folder / rel).parent.mkdir(parents=True, exist_ok=True)
        (folder / rel).write_text(text)
    (folder / result_file).write_text(json.dumps(result))
    return folder


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """A Claw-SWE-Bench run (resolved; an error; retried then timed out) and a WildClawBench run (graded with
    criteria), their agents' logs holding a provider key and a gateway token."""
    root = tmp_path_factory.mktemp("harbor-runs")
    swe, wild = root / "swe-run", root / "wild-run"
    with GatewayProcess.start(swe / "gateway") as gw:
        tokens = _calls(gw, "demo__resolved") + _calls(gw, "demo__retried", attempts=2)
    base = {"harness": "sdk", "model": "scripted/gold", "started_at": STARTED, "timings": SWE_TIMINGS}
    _run_json(swe, "swe")
    _item(swe, "instances", "metadata.json", "demo__resolved",
          {**base, "instance_id": "demo__resolved", "outcome": "resolved", "finish_reason": "stop"},
          {"prompt.txt": "Fix app.txt", "patch.diff": "diff --git a/x b/x\n",
           "agent.log": f"config: key={KEY} token={tokens[0]}\ndone\n", "eval/test_output.txt": "2 passed, 1 failed\n",
           "eval/report.json": json.dumps({"demo__resolved": {"tests_status": {
               "FAIL_TO_PASS": {"success": ["t_fix"], "failure": []},
               "PASS_TO_PASS": {"success": ["t_old"], "failure": ["t_flaky"]}}}})})
    _item(swe, "instances", "metadata.json", "demo__error",
          {**base, "instance_id": "demo__error", "outcome": "error", "finish_reason": "stop", "error_type": "InfraError",
           "error": "the SWE-bench evaluator crashed; resume the run", "timings": {"prepare_image": 1.0, "total": 1.5}},
          {"prompt.txt": "Fix b"})
    _item(swe, "instances", "metadata.json", "demo__retried",
          {**base, "instance_id": "demo__retried", "outcome": "unresolved", "finish_reason": "timeout",
           "error": ""}, {"prompt.txt": "Fix c", "agent.log": "…\n"})
    with GatewayProcess.start(wild / "gateway") as gw:
        tokens += _calls(gw, "01_demo_task")
    _run_json(wild, "wildclaw")
    _item(wild, "tasks", "result.json", "01_demo_task",
          {"harness": "sdk", "model": "scripted/gold", "started_at": STARTED, "task_id": "01_demo_task",
           "outcome": "passed", "finish_reason": "stop", "overall_score": 0.75,
           "scores": {"overall_score": 0.75, "file_ok": 1.0, "judge": {"score": 0.5, "weight": 2, "reason": "terse"}},
           "timings": {"images": 0.5, "services": 1.0, "setup": 2.0, "agent": 20.0, "snapshot": 0.5, "grade": 4.0,
                       "total": 27.5}},
          {"prompt.txt": "Plan the meeting", "agent.log": "ok\n", "grade.log": f"judge said fine (Authorization: Bearer {KEY})\n"})
    TOKENS[:] = tokens
    return swe, wild


TOKENS: list[str] = []  # every gateway token the runs' agents had


@pytest.fixture(scope="module")
def exported(runs, tmp_path_factory):
    out = tmp_path_factory.mktemp("harbor-out") / "jobs"
    mp = pytest.MonkeyPatch()
    mp.setenv("OPENROUTER_API_KEY", KEY)  # the key this machine holds: scrubbed wherever it appears
    try:
        export(list(runs), out)
    finally:
        mp.undo()
    return out


def _read(path: Path) -> dict:
    return json.loads(path.read_text())


def test_one_job_per_run_and_one_trial_per_item_and_attempt(exported):
    assert sorted(p.name for p in exported.iterdir()) == ["swe-run", "wild-run"]
    assert sorted(p.name for p in (exported / "swe-run").iterdir() if p.is_dir()) == [
        "demo__error__attempt-1", "demo__resolved__attempt-1", "demo__retried__attempt-1", "demo__retried__attempt-2"]
    job = _read(exported / "swe-run" / "config.json")
    assert job["agents"] == [{"name": "sdk", "model_name": "scripted/gold", "kwargs": {"version": "1.2.3"}}]
    assert job["datasets"] == [{"name": "claw-swe-bench-demo"}]
    assert _read(exported / "swe-run" / "clawswe.json")["run"]["run_id"] == "sdk_scripted-gold_swe"


def test_rewards_tests_and_criteria(exported):
    trial = exported / "swe-run" / "demo__resolved__attempt-1"
    result = _read(trial / "result.json")
    assert result["verifier_result"] == {"rewards": {"reward": 1.0}} and result["exception_info"] is None
    assert _read(trial / "verifier" / "reward.json") == {"reward": 1.0}
    ctrf = _read(trial / "verifier" / "ctrf.json")["results"]
    assert ctrf["summary"]["tests"] == 3 and (ctrf["summary"]["passed"], ctrf["summary"]["failed"]) == (2, 1)
    assert {(t["suite"], t["name"], t["status"]) for t in ctrf["tests"]} == {
        ("FAIL_TO_PASS", "t_fix", "passed"), ("PASS_TO_PASS", "t_old", "passed"), ("PASS_TO_PASS", "t_flaky", "failed")}
    assert (trial / "verifier" / "test-stdout.txt").read_text() == "2 passed, 1 failed\n"
    assert result["agent_info"] == {"name": "sdk", "version": "1.2.3",
                                    "model_info": {"name": "gold", "provider": "scripted"}}

    task = exported / "wild-run" / "01_demo_task__attempt-1"
    rewards = _read(task / "result.json")["verifier_result"]["rewards"]
    assert rewards == {"reward": 0.75, "file_ok": 1.0, "judge": 0.5}
    details = _read(task / "verifier" / "reward-details.json")["reward"]
    assert details["score"] == 0.75 and details["criteria"] == [
        {"name": "file_ok", "value": 1.0, "weight": 1.0}, {"name": "judge", "value": 0.5, "weight": 2.0,
                                                          "reasoning": "terse"}]
    assert not (task / "verifier" / "ctrf.json").exists()


def test_timing_is_laid_out_from_the_items_start(exported):
    r = _read(exported / "swe-run" / "demo__resolved__attempt-1" / "result.json")
    # prepare_image 2 + container_start 1 + purge_check 0.5 (made_ahead was done during another item)
    assert r["environment_setup"] == {"started_at": STARTED, "finished_at": "2026-11-20T10:00:03.500+00:00"}
    assert r["agent_setup"] is None  # our harnesses are mounted, not installed: their set-up is in agent
    assert r["agent_execution"] == {"started_at": "2026-11-20T10:00:03.500+00:00",
                                    "finished_at": "2026-11-20T10:00:13.500+00:00"}
    # then patch 1 and container_remove 0.25, between phases
    assert r["verifier"] == {"started_at": "2026-11-20T10:00:14.750+00:00",
                             "finished_at": "2026-11-20T10:00:17.750+00:00"}
    assert (r["started_at"], r["finished_at"]) == (STARTED, "2026-11-20T10:00:18.000+00:00")
    w = _read(exported / "wild-run" / "01_demo_task__attempt-1" / "result.json")
    assert w["environment_setup"]["finished_at"] == "2026-11-20T10:00:02.500+00:00"  # images + setup (services in it)
    assert w["verifier"]["finished_at"] == "2026-11-20T10:00:27.000+00:00"


def test_tokens_and_cost_are_the_trajectorys(exported, runs):
    trial = exported / "swe-run" / "demo__resolved__attempt-1"
    agent, doc = _read(trial / "result.json")["agent_result"], _read(trial / "agent" / "trajectory.json")
    fm = doc["final_metrics"]
    assert (agent["n_input_tokens"], agent["n_cache_tokens"], agent["n_output_tokens"], agent["cost_usd"]) == (
        fm["total_prompt_tokens"], fm["total_cached_tokens"], fm["total_completion_tokens"], fm["total_cost_usd"])
    records = read_records(runs[0] / "gateway", "demo__resolved")
    assert agent["n_output_tokens"] == sum(r["output_tokens"] for r in records) > 0
    assert doc["schema_version"] == "ATIF-v1.8" and doc["extra"]["clawswe"]["outcome"] == "resolved"


def test_errors_and_retried_attempts_are_harbors_exception_info(exported):
    error = _read(exported / "swe-run" / "demo__error__attempt-1" / "result.json")
    assert error["verifier_result"] is None and error["agent_result"] is None  # it made no model call
    assert error["exception_info"]["exception_type"] == "InfraError"
    assert error["exception_info"]["exception_message"] == "the SWE-bench evaluator crashed; resume the run"
    assert not (exported / "swe-run" / "demo__error__attempt-1" / "agent").exists()

    first = _read(exported / "swe-run" / "demo__retried__attempt-1" / "result.json")
    last = _read(exported / "swe-run" / "demo__retried__attempt-2" / "result.json")
    assert first["verifier_result"] is None and first["exception_info"]["exception_type"] == "InfraError"
    assert first["agent_execution"] is not None and first["environment_setup"] is None  # known from the ledger only
    assert first["agent_result"]["n_output_tokens"] > 0  # each attempt's own tokens
    assert not (exported / "swe-run" / "demo__retried__attempt-1" / "verifier").exists()
    # the last attempt: graded (0) after the budget stopped its agent, as Harbor records an agent time-out
    assert last["verifier_result"] == {"rewards": {"reward": 0.0}}
    assert last["exception_info"]["exception_type"] == "AgentTimeoutError"
    assert last["exception_info"]["occurred_at"] == last["agent_execution"]["finished_at"]
    stats = _read(exported / "swe-run" / "result.json")["stats"]
    assert (stats["n_completed_trials"], stats["n_errored_trials"], stats["n_retries"]) == (4, 3, 1)
    [evals] = stats["evals"].values()
    assert evals["metrics"] == [{"mean": 0.5}] and evals["n_trials"] == 2  # resolved 1, retried 0; errors left out
    assert evals["exception_stats"]["InfraError"] == ["demo__error__attempt-1", "demo__retried__attempt-1"]


def test_no_key_or_token_reaches_the_export(exported, runs):
    text = "\n".join(p.read_text() for p in exported.rglob("*") if p.is_file())
    assert KEY not in text
    assert len(TOKENS) == 4 and not [t for t in TOKENS if t in text]
    assert "/tmp/clawswe-gold-" in text  # what only looks like a token stays
    log = (exported / "swe-run" / "demo__resolved__attempt-1" / "agent" / "agent.log").read_text()
    assert log == "config: key=[redacted] token=[redacted]\ndone\n"
    grade = (exported / "wild-run" / "01_demo_task__attempt-1" / "verifier" / "test-stdout.txt").read_text()
    assert grade == "judge said fine (Authorization: Bearer [redacted])\n"


def test_the_same_runs_give_the_same_files(exported, runs):
    def tree(root: Path) -> dict:
        return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}

    before = tree(exported)
    mp = pytest.MonkeyPatch()
    mp.setenv("OPENROUTER_API_KEY", KEY)
    try:
        assert clawswe_main(["export", "harbor", *map(str, runs), str(exported)]) == 0  # over the earlier export
    finally:
        mp.undo()
    assert tree(exported) == before


def test_bad_input_is_refused_in_one_sentence_before_anything_is_written(runs, tmp_path, capsys):
    out = tmp_path / "out"
    not_a_run = tmp_path / "notes"
    not_a_run.mkdir()
    same_name = tmp_path / "elsewhere" / "swe-run"
    same_name.mkdir(parents=True)
    (same_name / "run.json").write_text((runs[0] / "run.json").read_text())
    unknown = tmp_path / "other"
    unknown.mkdir()
    (unknown / "run.json").write_text(json.dumps({"benchmark": "nosuchbench"}))
    for args, says in (([runs[0], not_a_run], "is not a run folder"), ([runs[0], same_name], "would both be job"),
                       ([unknown], "names no installed benchmark")):
        with pytest.raises(UserError, match=says):
            export(args, out)
        assert not out.exists()  # nothing written, not even the folder
    (tmp_path / "a-file").write_text("")
    with pytest.raises(UserError, match="is a file"):
        export([runs[0]], tmp_path / "a-file")
    with pytest.raises(UserError, match="price"):
        export([runs[0]], out, prices_file=str(tmp_path / "missing.json"))
    assert not out.exists()
    # a folder of the job's name that this command did not write is never replaced
    (out / "swe-run").mkdir(parents=True)
    (out / "swe-run" / "mine.txt").write_text("keep")
    assert clawswe_main(["export", "harbor", str(runs[0]), str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("clawswe: ") and "is not a job this command wrote" in err and err.count("\n") == 0
    assert [p.name for p in (out / "swe-run").iterdir()] == ["mine.txt"]
    assert clawswe_main(["export", "harbor", str(out)]) == 2  # no run given, only OUT


@pytest.mark.timeout(1200)  # the first use builds Harbor's venv (a few minutes; cached after)
def test_each_trial_has_its_log_and_lock(exported):
    """The viewer's Log and Lock tabs read trial.log and lock.json (they answered 404 for our exports before)."""
    for trial in sorted(p for p in exported.glob("*/*") if (p / "result.json").is_file() and p.name != "result.json"):
        lock = json.loads((trial / "lock.json").read_text())
        result = json.loads((trial / "result.json").read_text())
        assert lock["task"]["name"] == result["task_name"] and lock["agent"] == result["config"]["agent"], trial
        log = (trial / "trial.log").read_text()
        if result["agent_execution"] is not None:
            assert "agent_execution started" in log and "agent_execution ended" in log, (trial, log)
        if result["exception_info"] is not None:
            assert result["exception_info"]["exception_type"] in log, (trial, log)
    resolved = (exported / "swe-run" / "demo__resolved__attempt-1" / "trial.log").read_text().splitlines()
    assert resolved[0].endswith("environment_setup started") and resolved[-1].endswith("rewards: reward 1")


def test_harbors_own_models_read_every_file(exported, harbor_python):  # noqa: F811
    seen = _harbor_reads(harbor_python, exported)
    swe = seen["jobs"]["swe-run"]
    assert swe["n_total_trials"] == 4 and swe["n_errored_trials"] == 3 and swe["n_retries"] == 1
    resolved = swe["trials"]["demo__resolved__attempt-1"]
    assert resolved["rewards"] == {"reward": 1.0} and resolved["reward_valid"] and resolved["steps"] == 4
    assert resolved["agent"] == "sdk@1.2.3" and resolved["phases"] == {
        "environment_setup": True, "agent_setup": False, "agent_execution": True, "verifier": True}
    assert swe["trials"]["demo__retried__attempt-2"]["exception"] == "AgentTimeoutError"
    assert swe["trials"]["demo__retried__attempt-2"]["reward_valid"]  # Harbor counts a timed-out agent's grade
    assert swe["trials"]["demo__error__attempt-1"]["rewards"] is None
    wild = seen["jobs"]["wild-run"]["trials"]["01_demo_task__attempt-1"]
    assert wild["rewards"] == {"reward": 0.75, "file_ok": 1.0, "judge": 0.5} and wild["reward_valid"]
    # lock.json, Harbor's TrialLock (its viewer's Lock tab; it answered 404 before): the task as given and the agent
    assert resolved["lock"]["task"] == "demo__resolved" and resolved["lock"]["agent"] == "sdk"
    assert resolved["lock"]["digest"] == "sha256:" + json.loads(
        (exported / "swe-run" / "demo__resolved__attempt-1" / "result.json").read_text())["task_checksum"]


def _harbor_reads(python: Path, out: Path) -> dict:
    checked = subprocess.run([str(python), str(Path(__file__).with_name("harbor_check.py")), str(out)],
                             capture_output=True, text=True, timeout=300)
    assert checked.returncode == 0, checked.stderr[-3000:]
    return json.loads(checked.stdout)


def test_our_atif_version_is_the_newest_harbor_defines(harbor_python):  # noqa: F811
    from pytest_clawswe.trajectory.atif import SCHEMA_VERSION

    newest = subprocess.run([str(harbor_python), "-c", "import typing; from harbor.models.trajectories import "
                             "Trajectory as T; print(typing.get_args(T.model_fields['schema_version'].annotation)[-1])"],
                            capture_output=True, text=True, timeout=120)
    assert newest.returncode == 0, newest.stderr[-2000:]
    assert SCHEMA_VERSION == newest.stdout.strip()


def test_test_sh_builds_harbors_venv_only_for_the_tests_that_use_it(pytester, monkeypatch):
    """scripts/test.sh builds Harbor's venv ahead (outside any test's time-out) when scripts/needs_docker.py says a
    selected test uses it, and not otherwise."""
    monkeypatch.syspath_prepend(str(Path(__file__).parents[1] / "scripts"))
    pytester.makepyfile(test_x="""
        def test_pure(): pass
        def test_checked(harbor_python): pass
    """)
    pytester.makeconftest("import pytest\n@pytest.fixture\ndef harbor_python(): pass\n")
    answers = {}
    for name in ("pure", "checked"):
        probe = pytester.path / f"{name}.txt"
        monkeypatch.setenv("CLAWSWE_NEEDS_DOCKER_FILE", str(pytester.path / "docker.txt"))
        monkeypatch.setenv("CLAWSWE_NEEDS_HARBOR_FILE", str(probe))
        pytester.runpytest_inprocess("-p", "needs_docker", "--collect-only", "-q", "-k", name)
        answers[name] = probe.read_text()
    assert answers == {"pure": "no", "checked": "yes"}
    assert "python tests/harbor_venv.py" in (Path(__file__).parents[1] / "scripts" / "test.sh").read_text()


def test_a_folder_of_runs_gives_a_job_each(runs, tmp_path, capsys):
    """A grid's folder (or reports/): every run in it becomes a job of one jobs folder, which Harbor's viewer
    compares side by side."""
    assert clawswe_main(["export", "harbor", str(runs[0].parent), str(tmp_path / "grid")]) == 0
    assert sorted(p.name for p in (tmp_path / "grid").iterdir()) == ["swe-run", "wild-run"]
    assert "2 Harbor job(s), 5 trial(s)" in capsys.readouterr().out


def test_a_run_without_model_calls_exports_its_grades(runs, tmp_path):
    """A harness that calls no model (the oracle) leaves no gateway record: its items are trials all the same,
    graded and timed, without a trajectory or tokens."""
    import shutil

    oracle = tmp_path / "oracle-run"
    shutil.copytree(runs[0], oracle, ignore=shutil.ignore_patterns("gateway"))
    export([oracle], tmp_path / "out")
    trial = tmp_path / "out" / "oracle-run" / "demo__resolved__attempt-1"
    result = _read(trial / "result.json")
    assert result["verifier_result"] == {"rewards": {"reward": 1.0}} and result["agent_result"] is None
    assert result["agent_execution"]["started_at"] == "2026-11-20T10:00:03.500+00:00"
    assert not (trial / "agent" / "trajectory.json").exists() and (trial / "verifier" / "ctrf.json").is_file()
    assert sorted(p.name for p in (tmp_path / "out" / "oracle-run").iterdir() if p.is_dir()) == [
        "demo__error__attempt-1", "demo__resolved__attempt-1", "demo__retried__attempt-1"]


def test_an_item_records_when_it_began_and_the_class_of_what_ended_it(tmp_path):
    """What Harbor's timing and exception info are made of: ItemRunner writes the item's start (UTC) and, when an
    exception ended it, that exception's class, whatever the benchmark."""
    from dataclasses import dataclass
    from datetime import datetime, timezone

    from pytest_clawswe.errors import InfraError, ItemError
    from pytest_clawswe.run.config import RunConfig
    from pytest_clawswe.run.item.runner import ItemRunner
    from pytest_clawswe.run.item.result import ItemResult

    @dataclass
    class Result(ItemResult):
        item_id: str = ""

        @classmethod
        def from_json(cls, data):
            return cls(**data)

    class Runner(ItemRunner):
        result_type = Result

        def item_dir(self, item_id):
            return tmp_path / "items" / item_id

        def item_id(self, item):
            return item

        def new_result(self, item):
            return Result(item_id=item)

        def run_phases(self, item, work, result):
            raise {"grade": ItemError("the grader crashed"), "engine": InfraError("the engine is gone", False)}[item]

    runner = Runner(RunConfig("r", tmp_path, "fake", "m"), harness=None, client=None, progress=lambda line: None)
    now = datetime.now(timezone.utc)
    before = now.replace(microsecond=now.microsecond // 1000 * 1000)  # written to the millisecond
    assert runner.run("grade").error_type == "ItemError"
    with pytest.raises(InfraError):
        runner.run("engine")
    for item, kind in (("grade", "ItemError"), ("engine", "InfraError")):
        written = _read(tmp_path / "items" / item / Runner.RESULT_FILE)
        assert written["outcome"] == "error" and written["error_type"] == kind
        assert before <= datetime.fromisoformat(written["started_at"]) <= datetime.now(timezone.utc)


def test_an_errors_phase_is_in_its_trials_exception_message(runs, tmp_path):
    """The phase an item's error happened in (result.json's error_phase) reaches the trial's exception_info and
    its log; Harbor's ExceptionInfo has no field of its own for it."""
    import shutil

    run = tmp_path / "phase-run"
    shutil.copytree(runs[0], run, ignore=shutil.ignore_patterns("gateway"))
    meta = run / "instances" / "demo__error" / "metadata.json"
    meta.write_text(json.dumps({**_read(meta), "error_phase": "score"}))
    export([run], tmp_path / "out")
    trial = tmp_path / "out" / "phase-run" / "demo__error__attempt-1"
    info = _read(trial / "result.json")["exception_info"]
    assert info["exception_message"] == "the SWE-bench evaluator crashed; resume the run (in phase score)"
    assert "InfraError: the SWE-bench evaluator crashed; resume the run (in phase score)" in \
        (trial / "trial.log").read_text()
