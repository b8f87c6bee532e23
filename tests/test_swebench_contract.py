"""What pytest_clawswe/scoring.py relies on inside swebench, checked without Docker so that a new swebench
release that moves any of it fails here, by name, instead of mis-grading a run.

scoring.py (1) points swebench's module global RUN_EVALUATION_LOG_DIR into the run directory before each
call, (2) calls run_instance(test_spec, pred, client, run_id, timeout=...), (3) hands it a proxy client whose
containers.create adds our labels and limits, (4) expects the logs under <log dir>/<run id>/<model with / as
__>/<instance id>, and deletes that folder first because (5) run_instance answers from a report.json found
there, and (6) reads the constants and report keys named below.
"""
import inspect
from importlib.metadata import version
from pathlib import Path

import docker
import pytest
import swebench.harness.run_evaluation as swe_run
from swebench.harness import constants
from swebench.harness.grading import get_eval_report
from swebench.harness.utils import make_test_spec

from pytest_clawswe.swe.grading import scoring
from pytest_clawswe.swe.dataset import load_instances, load_row


def test_swebench_is_the_tested_minor_version():
    # pyproject.toml pins this minor; a new one needs this file re-checked against its source first
    assert version("swebench").split(".")[:2] == ["5", "0"], version("swebench")


def test_the_names_scoring_imports_exist():
    for name in ("APPLY_PATCH_FAIL", "LOG_INSTANCE", "LOG_REPORT", "LOG_TEST_OUTPUT"):
        assert isinstance(getattr(constants, name), str), name
    assert isinstance(swe_run.RUN_EVALUATION_LOG_DIR, Path)
    # read at call time as a module global (not bound as a default argument): assigning it takes effect
    assert "RUN_EVALUATION_LOG_DIR" in swe_run.run_instance.__code__.co_names


def test_run_instance_signature():
    params = list(inspect.signature(swe_run.run_instance).parameters)
    assert params[:5] == ["test_spec", "pred", "client", "run_id", "timeout"], params
    assert list(inspect.signature(make_test_spec).parameters)[:1] == ["instance"]
    assert list(inspect.signature(get_eval_report).parameters)[:4] == [
        "test_spec", "prediction", "test_log_path", "include_tests_status"]


def test_the_grader_reports_the_keys_scoring_reads():
    src = inspect.getsource(get_eval_report)
    for key in ("patch_successfully_applied", "resolved", "infra_failure", "infra_failure_reason"):
        assert f'"{key}"' in src, key
    # the failure markers scoring.py looks for in run_instance.log
    assert "Test timed out" in inspect.getsource(swe_run)
    assert "APPLY_PATCH_FAIL" in swe_run.run_instance.__code__.co_names  # logged when no patch command applies


class _Refused(Exception):
    pass


class _FakeContainers:
    def __init__(self):
        self.created = []

    def get(self, name):
        raise docker.errors.NotFound(name)

    def create(self, **kwargs):
        self.created.append(kwargs)
        raise docker.errors.APIError("refused by the contract test")


class _FakeImages:
    def get(self, tag):
        return object()


class _FakeClient:
    def __init__(self):
        self.containers, self.images = _FakeContainers(), _FakeImages()


@pytest.fixture
def spec_and_pred():
    [inst] = [i for i in load_instances("demo") if i.language == "Python"]
    row = load_row(inst)
    pred = {"instance_id": row["instance_id"], "model_name_or_path": "scripted/gold", "model_patch": row["patch"]}
    return make_test_spec(row), pred


def test_the_log_dir_global_the_layout_and_the_container_proxy(tmp_path, monkeypatch, spec_and_pred):
    spec, pred = spec_and_pred
    monkeypatch.setattr(swe_run, "RUN_EVALUATION_LOG_DIR", tmp_path)
    client = _FakeClient()
    extra = {"labels": {"clawswe.run": "contract"}, "network_disabled": True}
    result = swe_run.run_instance(spec, pred, scoring._EvalClient(client, extra), "run-x", timeout=60)
    assert result is None  # a machinery failure is logged and answered with None, not raised
    log_dir = tmp_path / "run-x" / "scripted__gold" / spec.instance_id
    assert (log_dir / constants.LOG_INSTANCE).is_file(), sorted(p for p in tmp_path.rglob("*"))
    # every container swebench makes goes through client.containers.create, where our proxy adds its settings
    [created] = client.containers.created
    assert created["labels"]["clawswe.run"] == "contract" and created["network_disabled"] is True
    assert created["image"] == spec.image


def test_a_report_in_the_log_dir_is_returned_without_running(tmp_path, monkeypatch, spec_and_pred):
    spec, pred = spec_and_pred
    monkeypatch.setattr(swe_run, "RUN_EVALUATION_LOG_DIR", tmp_path)
    log_dir = tmp_path / "run-y" / "scripted__gold" / spec.instance_id
    log_dir.mkdir(parents=True)
    (log_dir / constants.LOG_REPORT).write_text('{"%s": {"resolved": true}}' % spec.instance_id)
    client = _FakeClient()
    assert swe_run.run_instance(spec, pred, client, "run-y", timeout=60) == (
        spec.instance_id, {spec.instance_id: {"resolved": True}})
    assert client.containers.created == []  # why scoring.py deletes the folder before each call
