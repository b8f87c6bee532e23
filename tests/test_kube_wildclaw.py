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
