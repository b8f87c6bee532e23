"""WildClawBench with `--kubernetes` on the test cluster: the demo set under claude-code with the scripted model
and judge, each task's sandbox a pod with the mock services as a container beside it, each grading a pod of its
own: gold scores 1.0 and noop 0.0 on every task, as on Docker (tests/test_wildclaw_run.py), the tasks spread
over both nodes, the services' audit read back, nothing of the run left in the cluster."""
from __future__ import annotations

import json

import pytest
from kube_cluster import kube_cluster_fixture  # noqa: F401  (the kube_cluster fixture)
from test_kube_run import namespace_left

from pytest_clawswe.wildclaw.options import DEMO_DIR
from pytest_clawswe.wildclaw.task.file import parse_task, task_files

pytestmark = [pytest.mark.docker, pytest.mark.harness, pytest.mark.kubernetes]
DEMO_IDS = sorted(parse_task(p).id for p in task_files(DEMO_DIR))
SERVICES_TASK = "03_Social_Interaction_task_3_release_blockers"


def run_wild(pytester, kube, model, run_dir):
    return pytester.runpytest_subprocess("-p", "no:cacheprovider", "--benchmark", "wildclaw", "--dataset", "demo",
                                         "--harness", "claude-code", "--model", model, "--judge-model", "scripted",
                                         "--run-dir", str(run_dir), "-n", "2", "--kubernetes", kube.context,
                                         "--registry", kube.registry, timeout=3600)


def test_gold_scores_one_and_noop_zero_on_the_cluster(pytester, monkeypatch, kube_cluster, docker_client, tmp_path):
    from pytest_clawswe.harness.bundles import build_bundle

    build_bundle("claude-code", client=docker_client, progress=lambda line: None)
    monkeypatch.setenv("KUBECONFIG", kube_cluster.kubeconfig)
    for model, expected, ret in (("scripted/gold", 1.0, 0), ("scripted/noop", 0.0, 1)):
        run_dir = tmp_path / model.split("/")[1]
        run = run_wild(pytester, kube_cluster, model, run_dir)
        assert run.ret == ret, run.stdout.str()[-3000:]
        got = {p.parent.name: json.loads(p.read_text()) for p in run_dir.glob("tasks/*/result.json")}
        assert sorted(got) == DEMO_IDS
        for r in got.values():
            assert r["outcome"] in ("passed", "failed") and r["overall_score"] == pytest.approx(expected, abs=0.05), r
        summary = json.loads((run_dir / "summary.json").read_text())
        assert summary["mean_score"] == pytest.approx(expected, abs=0.05)
        assert {r["node"] for r in got.values()} == set(kube_cluster.nodes)  # the scheduler used both nodes
        assert (run_dir / "tasks" / SERVICES_TASK / "audit" / "meta.json").is_file()  # read back from the pod
        assert not namespace_left(kube_cluster, run_dir)


def test_a_hung_setup_on_the_cluster_ends_at_the_stages_limit_and_the_next_task_runs(
        pytester, monkeypatch, kube_cluster, docker_client, tmp_path):
    """The stage limits of tests/test_stage_limits_docker.py on pods: a task whose warm-up never ends is stopped at
    --setup-timeout (its pods deleted: what the warm-up's exec waits on), not at the warm-up's own 600 s; a grader
    that hangs ends at --grade-timeout; the task between them passes, and nothing of the run is left. The three
    start together while the run pushes its images to the registry (minutes: not the tasks' time), so each task's
    own setup must get its whole limit after that wait (run/item/phases.py), or the plain one is stopped too."""
    from test_stage_limits_docker import HUNG_GRADER, HUNG_SETUP, PLAIN, SUITE

    from pytest_clawswe.harness.bundles import build_bundle

    build_bundle("claude-code", client=docker_client, progress=lambda line: None)
    monkeypatch.setenv("KUBECONFIG", kube_cluster.kubeconfig)
    run_dir = tmp_path / "run"
    run = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--benchmark", "wildclaw", "--dataset", str(SUITE),
                                        "--harness", "claude-code", "--model", "scripted/gold",
                                        "--judge-model", "scripted", "--setup-timeout", "90", "--grade-timeout", "15",
                                        "--run-dir", str(run_dir), "--kubernetes", kube_cluster.context,
                                        "--registry", kube_cluster.registry, timeout=900)
    got = {p.parent.name: json.loads(p.read_text()) for p in run_dir.glob("tasks/*/result.json")}
    hung = got[HUNG_SETUP]
    assert hung["outcome"] == "error" and hung["error_type"] == "SetupTimeout", hung
    assert hung["error_phase"] == "setup" and "within its limit of 90 s" in hung["error"]
    assert got[PLAIN]["outcome"] == "passed", got[PLAIN]
    assert got[HUNG_GRADER]["error_type"] == "GradeTimeout" and got[HUNG_GRADER]["error_phase"] == "verify"
    run.assert_outcomes(passed=1, errors=2)
    assert not namespace_left(kube_cluster, run_dir)
