"""Issue 13 §3 / issue 16 §2: one attempt by default; --retries N re-runs a harness error within the same
budget; every attempt's tokens and cost reach metadata.json; an error's patch is still graded."""
import json

import pytest

pytestmark = pytest.mark.docker
HARNESS = "--harness={}/tests/fake_retry_harness.py:ErrorThenHangHarness"
BUDGET = 14


def _run(pytester, python_demo, run_dir, *extra):
    return pytester.runpytest_subprocess(
        "-p", "no:cacheprovider", "--run-dir", str(run_dir), HARNESS.format(pytester._request.config.rootpath),
        "--model", "scripted/noop", "--dataset", "demo", "--instance-ids", python_demo.instance_id,
        "--budget", str(BUDGET), "-n", "0", *extra, timeout=900)


def test_retries_share_one_budget_and_count_every_attempt(pytester, python_demo, tmp_path):
    run_dir = tmp_path / "retry"
    _run(pytester, python_demo, run_dir, "--retries", "1")
    meta = json.loads((run_dir / "instances" / python_demo.instance_id / "metadata.json").read_text())
    assert meta["attempts"] == 2
    first, second = meta["harness_usage"]["attempts"]
    assert (first["finish_reason"], second["finish_reason"]) == ("error", "timeout")
    # both attempts' tokens: each called the model once, and the instance's usage is their sum
    assert first["usage"]["requests"] == 1 and second["usage"]["requests"] == 1
    assert first["usage"]["output_tokens"] > 0 and second["usage"]["output_tokens"] > 0
    assert meta["usage"]["requests"] == 2
    for key in ("input_tokens", "output_tokens"):
        assert meta["usage"][key] == first["usage"][key] + second["usage"][key]
    assert meta["harness_usage"]["calls"] == 2  # the harness's own counts, summed
    # the retry got what was left, never a fresh budget; the whole agent phase stayed within the budget
    assert first["budget_s"] == pytest.approx(BUDGET, abs=0.01)
    assert second["budget_s"] <= BUDGET - first["seconds"] + 0.01
    assert second["harness_usage"]["budget_seen_s"] == pytest.approx(second["budget_s"], abs=0.01)
    # what the harness ran stayed within the budget; only the kill and the session backup come after it
    assert first["seconds"] + second["budget_s"] <= BUDGET + 0.5
    # the kill and the session backup after it are wall-clock work: 6.7 s once on a loaded 2-core CI machine (a
    # fresh budget for the retry is ruled out above, by its budget_s)
    assert meta["timings"]["agent"] <= BUDGET + 12
    run = json.loads((run_dir / "run.json").read_text())
    assert run["retries"] == 1 and run["purge"] is True and run["harness_settings"] == {}


def test_one_attempt_by_default_and_the_error_patch_is_graded(pytester, python_demo, tmp_path):
    run_dir = tmp_path / "once"
    _run(pytester, python_demo, run_dir)
    inst = run_dir / "instances" / python_demo.instance_id
    meta = json.loads((inst / "metadata.json").read_text())
    assert meta["attempts"] == 1 and meta["finish_reason"] == "error" and "attempts" not in meta["harness_usage"]
    assert meta["outcome"] in ("unresolved", "apply_failed") and (inst / "eval").is_dir()  # graded, not skipped
    assert meta["usage"]["requests"] == 1
