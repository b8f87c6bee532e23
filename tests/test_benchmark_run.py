"""Benchmark runs end to end: real Docker, real swebench grading, pytest + xdist as the runner."""
import json
import xml.etree.ElementTree as ET

import pytest
from run_containers import left_containers

from pytest_clawswe.labels import LABEL_RUN

pytestmark = pytest.mark.docker
FAKES = "--harness={}/tests/fake_harnesses.py:{}"


def run_bench(pytester, *args, run_dir):
    return pytester.runpytest_subprocess("-p", "no:cacheprovider", "--run-dir", str(run_dir), *args,
                                         timeout=1500)


def read_run(run_dir):
    preds = [json.loads(line) for line in (run_dir / "predictions.jsonl").read_text().splitlines()]
    cases = ET.parse(run_dir / "junit.xml").getroot().iter("testcase")
    junit = {}
    for case in cases:
        props = {p.get("name"): p.get("value") for p in case.iter("property")}
        verdict = "failed" if case.find("failure") is not None else "error" if case.find("error") is not None \
            else "passed"
        junit[case.get("name")] = (verdict, props)
    reports = {}
    for p in preds:
        report = json.loads((run_dir / "instances" / p["instance_id"] / "eval" / "report.json").read_text())
        reports[p["instance_id"]] = report[p["instance_id"]]["resolved"]
    return preds, junit, reports


def test_oracle_resolves_every_demo_instance_and_outputs_agree(pytester, docker_client, demo_instances,
                                                               demo_images, tmp_path):
    run_dir = tmp_path / "oracle"
    result = run_bench(pytester, "--harness", "oracle", "--dataset", "demo", "-n", "3",
                       "--junitxml", str(run_dir / "junit.xml"), run_dir=run_dir)
    ids = sorted(i.instance_id for i in demo_instances)
    result.assert_outcomes(passed=len(ids))
    preds, junit, reports = read_run(run_dir)
    assert sorted(p["instance_id"] for p in preds) == ids  # exactly one line per instance
    assert all(p["model_patch"].startswith("diff --git") for p in preds)
    assert reports == {i: True for i in ids}
    assert {name: verdict for name, (verdict, _) in junit.items()} == {i: "passed" for i in ids}
    assert all(props["resolved"] == "True" and props["language"] for _, props in junit.values())
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["resolved"] == len(ids)
    assert left_containers(docker_client, run_dir) == []


def test_nop_resolves_none_and_outputs_agree(pytester, docker_client, demo_instances, demo_images, tmp_path):
    run_dir = tmp_path / "nop"
    result = run_bench(pytester, "--harness", "nop", "--dataset", "demo", "-n", "2",
                       "--junitxml", str(run_dir / "junit.xml"), run_dir=run_dir)
    ids = sorted(i.instance_id for i in demo_instances)
    result.assert_outcomes(failed=len(ids))
    preds, junit, reports = read_run(run_dir)
    assert sorted(p["instance_id"] for p in preds) == ids and all(p["model_patch"] == "" for p in preds)
    assert reports == {i: False for i in ids}
    assert {name: verdict for name, (verdict, _) in junit.items()} == {i: "failed" for i in ids}
    for i in ids:
        meta = json.loads((run_dir / "instances" / i / "metadata.json").read_text())
        assert (meta["outcome"], meta["finish_reason"]) == ("unresolved", "empty")
    assert left_containers(docker_client, run_dir) == []


def test_language_marker_selects_exactly_that_group(pytester, demo_instances):
    result = pytester.runpytest("--harness", "oracle", "--dataset", "demo", "--collect-only", "-q", "-m", "go",
                                "-p", "no:cacheprovider")
    go = sorted(i.instance_id for i in demo_instances if i.language == "Go")
    assert go and sorted(line.split("::")[-1] for line in result.outlines if "::" in line) == go
    assert not (pytester.path / "reports").exists()  # collecting runs nothing and writes nothing


def test_resume_keeps_finished_results_and_never_duplicates(pytester, docker_client, python_demo, tmp_path):
    run_dir = tmp_path / "resume"
    args = ("--harness", "oracle", "--dataset", "demo", "--instance-ids", python_demo.instance_id)
    run_bench(pytester, *args, run_dir=run_dir).assert_outcomes(passed=1)
    meta = run_dir / "instances" / python_demo.instance_id / "metadata.json"
    first = meta.read_text()
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--resume", str(run_dir), *args)
    result.assert_outcomes(passed=1)
    assert meta.read_text() == first  # not re-run
    assert len((run_dir / "predictions.jsonl").read_text().splitlines()) == 1


def test_timeout_kills_the_agent_and_still_scores_its_patch(pytester, docker_client, python_demo, tmp_path):
    run_dir = tmp_path / "hang"
    result = run_bench(pytester, FAKES.format(pytester._request.config.rootpath, "HangHarness"),
                       "--dataset", "demo", "--instance-ids", python_demo.instance_id, "--budget", "5",
                       run_dir=run_dir)
    result.assert_outcomes(passed=1)  # the gold patch was written before the hang
    inst = run_dir / "instances" / python_demo.instance_id
    meta = json.loads((inst / "metadata.json").read_text())
    assert meta["finish_reason"] == "timeout" and meta["resolved"] is True
    assert 5 <= meta["timings"]["agent"] < 30
    assert "sleep 100" not in (inst / "session" / "processes.txt").read_text()
    assert left_containers(docker_client, run_dir) == []


def test_a_harness_error_is_retried_once_from_a_clean_tree(pytester, python_demo, tmp_path):
    run_dir = tmp_path / "flaky"
    result = run_bench(pytester, FAKES.format(pytester._request.config.rootpath, "FlakyHarness"), "--retries", "1",
                       "--dataset", "demo", "--instance-ids", python_demo.instance_id, run_dir=run_dir)
    result.assert_outcomes(passed=1)
    inst = run_dir / "instances" / python_demo.instance_id
    assert json.loads((inst / "metadata.json").read_text())["attempts"] == 2
    assert "scribble.txt" not in (inst / "patch.diff").read_text()


@pytest.mark.parametrize("harness, reason", [("BinaryHarness", "empty"), ("DeleteTestbedHarness", "empty")])
def test_patches_with_nothing_gradable_are_empty_not_errors(pytester, python_demo, tmp_path, harness, reason):
    run_dir = tmp_path / harness
    result = run_bench(pytester, FAKES.format(pytester._request.config.rootpath, harness),
                       "--dataset", "demo", "--instance-ids", python_demo.instance_id, run_dir=run_dir)
    result.assert_outcomes(failed=1)
    meta = json.loads((run_dir / "instances" / python_demo.instance_id / "metadata.json").read_text())
    assert (meta["outcome"], meta["finish_reason"]) == ("unresolved", reason)


def test_an_agent_filling_the_disk_is_stopped_and_graded_as_it_stands(pytester, docker_client, python_demo,
                                                                     tmp_path):
    run_dir = tmp_path / "filler"
    result = run_bench(pytester, FAKES.format(pytester._request.config.rootpath, "DiskFillerHarness"),
                       "--dataset", "demo", "--instance-ids", python_demo.instance_id, "--disk-limit", "300m",
                       "--budget", "600", run_dir=run_dir)
    result.assert_outcomes(passed=1)  # the gold edit made before the flood is still the patch
    inst = run_dir / "instances" / python_demo.instance_id
    meta = json.loads((inst / "metadata.json").read_text())
    assert meta["finish_reason"] == "disk_limit" and "over the disk limit of 0.3 GiB" in meta["error"]
    assert meta["timings"]["agent"] < 120  # stopped by the limit, long before the budget
    assert "dump1.bin: larger than 50 MiB, not read" in (inst / "patch.dropped.txt").read_text()
    assert "dump" not in (inst / "patch.diff").read_text()
    assert left_containers(docker_client, run_dir) == []


def test_bad_input_gets_one_clear_sentence(pytester, tmp_path):
    r = pytester.runpytest("--harness", "no-such-harness", "-p", "no:cacheprovider")
    assert r.ret == pytest.ExitCode.USAGE_ERROR
    r.stderr.fnmatch_lines(["*unknown harness 'no-such-harness'; installed harnesses are: *nop*oracle*"])
    r = pytester.runpytest("--harness", "nop", "--instance-ids", "nope__x-1", "--collect-only",
                           "-p", "no:cacheprovider")
    r.stderr.fnmatch_lines(["ERROR: not in the selected dataset: nope__x-1; check the ids or the --dataset option"])
    assert r.ret == pytest.ExitCode.USAGE_ERROR
    r = pytester.runpytest("--harness", "nop", "--instance-ids", "a", "b", "-p", "no:cacheprovider")
    assert r.ret == pytest.ExitCode.USAGE_ERROR
    r.stderr.fnmatch_lines(["*takes no test paths (got b)*--instance-ids a,b*"])
    r = pytester.runpytest("--harness", "nop", "--disk-limit", "lots", "-p", "no:cacheprovider")
    assert r.ret == pytest.ExitCode.USAGE_ERROR
    r.stderr.fnmatch_lines(["*--disk-limit lots: give a size such as 20g, 500m, or none*"])


def test_missing_image_is_an_error_not_a_failure(pytester, docker_client, python_demo, tmp_path):
    from pytest_clawswe.swe.dataset import load_row

    row = {**load_row(python_demo), "instance_id": "clawswe__ghost-1", "image": "clawswe-test/ghost:latest"}
    (pytester.path / "ghost.json").write_text(json.dumps([row]))
    result = run_bench(pytester, "--harness", "oracle", "--dataset", "ghost.json", run_dir=tmp_path / "ghost")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*clawswe-test/ghost:latest*"])
    meta = json.loads((tmp_path / "ghost" / "instances" / "clawswe__ghost-1" / "metadata.json").read_text())
    assert meta["outcome"] == "error" and "ghost" in meta["error"]
    assert (tmp_path / "ghost" / "predictions.jsonl").read_text() == ""  # an error is not a prediction


def test_a_patch_that_does_not_apply_is_an_apply_failure(docker_client, python_demo, tmp_path):
    from pytest_clawswe.swe.dataset import load_row
    from pytest_clawswe.swe.grading.scoring import score

    bad = "diff --git a/nope.py b/nope.py\n--- a/nope.py\n+++ b/nope.py\n@@ -1,2 +1,2 @@\n-x\n+y\n z\n"
    s = score(docker_client, load_row(python_demo), bad, run_id="t-apply", model_label="t", eval_dir=tmp_path,
              labels={LABEL_RUN: "t-apply"})
    assert (s.outcome, s.patch_applied) == ("apply_failed", False)
