"""A Claw-SWE-Bench run with `--kubernetes` on the test cluster (scripts/kube-cluster.sh, two nodes): the demo
set's verdicts equal the Docker path's, the items are spread over both nodes by the scheduler (each
metadata.json names its node), tests that hang are unresolved at --eval-timeout, a model-calling harness reaches
the gateway under the locked network, a node lost mid-run makes its items errors that --resume finishes, and
nothing of a run is left in the cluster."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from kube_cluster import SCRIPT, kube_cluster_fixture, pod_processes  # noqa: F401  (the kube_cluster fixture)
from polling import wait_until

pytestmark = [pytest.mark.docker, pytest.mark.kubernetes]
ROOT = Path(__file__).resolve().parent.parent
FAKES = ROOT / "tests" / "fake_harnesses.py"


def bench(kube, run_dir, *extra, harness="oracle", ids=(), env=None, dataset="demo"):
    cmd = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--dataset", dataset, "--run-dir", str(run_dir),
           f"--harness={harness}", "--kubernetes", kube.context, "--registry", kube.registry, *extra]
    if ids:
        cmd += ["--instance-ids", ",".join(ids)]
    return subprocess.Popen(cmd, cwd=run_dir.parent, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            env={**kube.env(), **(env or {})})


def results(run_dir) -> dict[str, dict]:
    return {m.parent.name: json.loads(m.read_text()) for m in (run_dir / "instances").glob("*/metadata.json")
            if not m.parent.name.startswith(".")}


def run_namespace(run_dir) -> str | None:
    """The run's namespace, once its run.json is written."""
    from pytest_clawswe.engine.kube.namespace import namespace_for

    if not (run_dir / "run.json").is_file():
        return None
    return namespace_for(json.loads((run_dir / "run.json").read_text())["run_id"])


def namespace_left(kube, run_dir) -> bool:
    return kube.cluster().exists("core", "read_namespace", run_namespace(run_dir))


def running_agents(kube, run_dir, node: str = "") -> list[dict]:
    """The run's agent pods in phase Running (on `node`, if named); none before its namespace is made."""
    namespace = run_namespace(run_dir)
    if namespace is None:
        return []
    fields = {"field_selector": f"spec.nodeName={node}"} if node else {}
    try:
        pods = kube.cluster().call("core", "list_namespaced_pod", namespace, label_selector="clawswe.role=agent",
                                   **fields).get("items") or []
    except Exception:  # noqa: BLE001  the namespace is not made yet
        return []
    return [p for p in pods if (p.get("status") or {}).get("phase") == "Running"]


def test_the_demo_set_on_the_cluster_grades_as_on_docker(kube_cluster, demo_instances, demo_images, tmp_path):
    oracle, nop = tmp_path / "oracle", tmp_path / "nop"
    for run_dir, harness in ((oracle, "oracle"), (nop, "nop")):
        proc = bench(kube_cluster, run_dir, "-n", "2", harness=harness)
        out = proc.communicate(timeout=3600)[0]
        assert proc.returncode == (0 if harness == "oracle" else pytest.ExitCode.TESTS_FAILED), out
        assert not namespace_left(kube_cluster, run_dir), "the run's namespace is still there"
    every = sorted(i.instance_id for i in demo_instances)
    got = results(oracle)
    assert sorted(got) == every
    assert {k: v["outcome"] for k, v in got.items()} == {i: "resolved" for i in every}
    assert {v["docker_host"] for v in got.values()} == {f"kubernetes:{kube_cluster.context}"}
    assert {v["node"] for v in got.values()} == set(kube_cluster.nodes)  # the scheduler used both nodes
    got = results(nop)
    assert {k: (v["outcome"], v["resolved"]) for k, v in got.items()} == {i: ("unresolved", False) for i in every}


def test_tests_that_hang_on_the_cluster_are_unresolved_at_the_eval_timeout(kube_cluster, demo_instances, demo_images,
                                                                          tmp_path):
    """test_stage_limits_docker.py's hung tests on the cluster: the gold patch, tests that never end. swebench's stop at
    --eval-timeout (made the shell's kill of every process in the evaluation sandbox: swe/grading/eval_output.py) runs
    as an exec in the evaluation pod; the verdict is the evaluator's, unresolved, and the next instance resolves."""
    from hung_tests import hung_tests_row
    from pytest_clawswe.swe.dataset import load_row

    row = load_row(next(i for i in demo_instances if i.language == "Python"))
    hung = hung_tests_row(row)
    dataset = tmp_path / "hung.json"
    dataset.write_text(json.dumps([hung, row]))
    run_dir = tmp_path / "run"
    proc = bench(kube_cluster, run_dir, "--eval-timeout", "20", dataset=str(dataset))
    out = proc.communicate(timeout=1800)[0]
    assert proc.returncode == pytest.ExitCode.TESTS_FAILED, out
    got = results(run_dir)
    meta = got["clawswe__hungtests-1"]
    assert (meta["outcome"], meta["error_type"]) == ("unresolved", ""), meta
    assert "the tests timed out after 20" in meta["error"] and meta["timings"]["score"] < 20 + 120, meta
    test_output = run_dir / "instances" / "clawswe__hungtests-1" / "eval" / "test_output.txt"
    assert "Timeout error: 20 seconds exceeded." in test_output.read_text()
    assert got[row["instance_id"]]["outcome"] == "resolved", got[row["instance_id"]]
    assert not namespace_left(kube_cluster, run_dir)


@pytest.mark.harness
def test_a_model_calling_harness_on_the_cluster(kube_cluster, demo_instances, demo_images, tmp_path):
    run_dir = tmp_path / "cc"
    proc = bench(kube_cluster, run_dir, "-n", "2", "--model", "scripted/gold", harness="claude-code")
    out = proc.communicate(timeout=3600)[0]
    assert proc.returncode == 0, out
    got = results(run_dir)
    assert {k: v["outcome"] for k, v in got.items()} == {i.instance_id: "resolved" for i in demo_instances}
    assert all(v["usage"]["requests"] > 0 for v in got.values())  # every agent reached the gateway, counted
    assert {v["node"] for v in got.values()} == set(kube_cluster.nodes)
    assert not namespace_left(kube_cluster, run_dir)


def _agents_working_on(kube, run_dir, node: str, command: str) -> set[str]:
    """The instances whose agent runs `command` in a pod on `node` now. A Running agent pod alone is not one: the
    next item's sandbox is made ahead (run/item/made_ahead.py), and a node lost under it loses no agent's work
    (the item makes its own sandbox, on a node that is left, and runs once)."""
    from pytest_clawswe.errors import InfraError

    working, cluster = set(), kube.cluster()
    for pod in running_agents(kube, run_dir, node):
        try:
            processes = pod_processes(cluster, pod["metadata"]["namespace"], pod["metadata"]["name"], "cmdline")
        except InfraError:  # the pod went away meanwhile
            continue
        if command in processes:
            working.add(pod["metadata"]["annotations"]["clawswe.instance"])
    return working


def test_a_node_lost_mid_run_makes_its_items_errors_and_resume_finishes_them(kube_cluster, demo_instances,
                                                                           demo_images, tmp_path):
    ids = [i.instance_id for i in demo_instances if i.language in ("Python", "Go", "Ruby", "JS/TS")]
    run_dir = tmp_path / "run"
    kept, lost_node = kube_cluster.nodes
    proc = bench(kube_cluster, run_dir, "-n", "2", harness=f"{FAKES}:SlowOracleHarness", ids=ids,
                 env={"CLAWSWE_TEST_SLEEP": "30"})
    lost = wait_until(lambda: _agents_working_on(kube_cluster, run_dir, lost_node, "sleep 30"),  # SlowOracleHarness's work
                      900, "an agent works on the second node", interval=0.5, proc=proc)
    stopped = subprocess.run([str(SCRIPT), "node-down", "2"], capture_output=True, text=True)
    try:
        assert stopped.returncode == 0, stopped.stderr
        out = proc.communicate(timeout=3600)[0]
        got = results(run_dir)
        # never a verdict from the lost node: each of its items is an error, or was run again from scratch (the
        # infrastructure retry) on the node that is left and resolved there
        for k in lost:
            assert got[k]["outcome"] == "error" or (got[k]["outcome"] == "resolved" and got[k]["node"] == kept
                                                    and got[k]["attempts"] > 1), (k, got[k], out)
        assert all(v["outcome"] in ("resolved", "error") for v in got.values()), out
        errors = {k for k, v in got.items() if v["outcome"] == "error"}
        print(f"node lost: {sorted(lost)} ran there; first run: "
              f"{ {k: (v['outcome'], v['node'], v['attempts'], v['error'][:120]) for k, v in got.items()} }")
        assert all("node" in got[k]["error"] or "pod" in got[k]["error"] for k in errors), out
        assert proc.returncode == (pytest.ExitCode.TESTS_FAILED if errors else 0), out

        # the resume runs what is left, on the node that is left
        proc = bench(kube_cluster, run_dir, "-n", "2", "--resume", str(run_dir), harness=f"{FAKES}:SlowOracleHarness",
                     ids=ids, env={"CLAWSWE_TEST_SLEEP": "1"})
        out = proc.communicate(timeout=3600)[0]
        assert proc.returncode == 0, out
        got = results(run_dir)
        assert {k: v["outcome"] for k, v in got.items()} == {i: "resolved" for i in ids}
        assert {got[k]["node"] for k in errors} <= {kept}
        assert not namespace_left(kube_cluster, run_dir)
    finally:
        up = subprocess.run([str(SCRIPT), "node-up", "2"], capture_output=True, text=True, env={**os.environ})
        assert up.returncode == 0, up.stderr


def _wait_for_agents(kube, run_dir, proc, count: int) -> None:
    wait_until(lambda: len(running_agents(kube, run_dir)) >= count, 900,
               f"{count} agent pods of the run run", interval=0.5, proc=proc)


def test_ctrl_c_ends_the_items_as_errors_and_leaves_nothing_in_the_cluster(kube_cluster, demo_instances,
                                                                           demo_images, tmp_path):
    import signal

    ids = [i.instance_id for i in demo_instances if i.language in ("Python", "Go")]
    run_dir = tmp_path / "run"
    proc = bench(kube_cluster, run_dir, "-n", "2", harness=f"{FAKES}:SlowOracleHarness", ids=ids,
                 env={"CLAWSWE_TEST_SLEEP": "600"})
    _wait_for_agents(kube_cluster, run_dir, proc, 2)
    proc.send_signal(signal.SIGINT)
    out = proc.communicate(timeout=600)[0]
    assert proc.returncode == pytest.ExitCode.INTERRUPTED, out
    assert set(v["outcome"] for v in results(run_dir).values()) <= {"error"}, out  # no verdict
    assert not namespace_left(kube_cluster, run_dir), out


def test_a_killed_run_leaves_its_namespace_to_clawswe_clean(kube_cluster, demo_instances, demo_images, tmp_path):
    import signal

    ids = [i.instance_id for i in demo_instances if i.language == "Python"]
    run_dir = tmp_path / "run"
    proc = bench(kube_cluster, run_dir, harness=f"{FAKES}:SlowOracleHarness", ids=ids,
                 env={"CLAWSWE_TEST_SLEEP": "600"})
    _wait_for_agents(kube_cluster, run_dir, proc, 1)
    proc.send_signal(signal.SIGKILL)  # nothing of it runs its end: the namespace and its pod stay
    proc.communicate(timeout=60)
    assert namespace_left(kube_cluster, run_dir)
    run_id = json.loads((run_dir / "run.json").read_text())["run_id"]
    done = subprocess.run([sys.executable, "-m", "pytest_clawswe.cli", "clean", "--kubernetes", kube_cluster.context,
                           "--run-id", run_id], capture_output=True, text=True, env=kube_cluster.env())
    assert done.returncode == 0, done.stderr
    assert "namespace" in done.stdout
    wait_until(lambda: not namespace_left(kube_cluster, run_dir), 120, "the namespace is gone",  # once its pods are
               interval=1)
