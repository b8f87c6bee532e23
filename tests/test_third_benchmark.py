"""A third benchmark plugs in as a package of its own (tests/tinybench), no core module edited: its plugin
answers the pytest_clawswe_benchmark hook, its runner is the core's ItemRunner template around its own phases,
and one of its items runs in Docker with a harness of its own and with one of ours."""
import json
import os
from pathlib import Path

import pytest
from run_containers import left_containers

pytestmark = pytest.mark.docker
TESTS = Path(__file__).resolve().parent


@pytest.fixture(autouse=True)
def tinybench_importable(monkeypatch):
    """The tiny benchmark is a package beside the tests, as an installed one would be on sys.path."""
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(TESTS), os.environ.get("PYTHONPATH")])))


def run_tiny(pytester, tmp_path, harness, *args):
    run_dir = tmp_path / "run"
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-p", "tinybench.plugin", "--benchmark",
                                           "tinybench", "--harness", harness, "--run-dir", str(run_dir),
                                           "--junitxml", str(run_dir / "junit.xml"), *args, timeout=600)
    return result, run_dir


def test_a_third_benchmark_runs_its_item_in_docker_through_the_core(pytester, docker_client, tmp_path):
    result, run_dir = run_tiny(pytester, tmp_path, "tinybench.benchmark:EchoHarness", "-n", "0",
                               "--tiny-tasks", "hello")
    assert result.ret == 0, result.stdout.str()[-3000:]
    result.assert_outcomes(passed=1)
    done = json.loads((run_dir / "tasks" / "tiny-hello" / "result.json").read_text())
    assert done["outcome"] == "passed" and done["answer"] == "hello" and done["finish_reason"] == "stop"
    assert done["timings"]["total"] > 0  # the core template timed it
    info = json.loads((run_dir / "run.json").read_text())
    assert info["benchmark"] == "tinybench" and info["harness"] == "echo"
    summary = json.loads((run_dir / "summary.json").read_text())
    assert (summary["tasks"], summary["passed"]) == (1, 1) and summary["disk"]["run_dir_bytes"] > 0  # + the core's
    assert "tinybench: 1/1 passed" in result.stdout.str()
    assert left_containers(docker_client, run_dir) == []


def test_its_items_fail_and_resume_like_any_benchmark(pytester, docker_client, tmp_path):
    """Our nop harness writes nothing: a failure (not an error), kept by --resume, never run twice."""
    result, run_dir = run_tiny(pytester, tmp_path, "nop", "-n", "0", "--tiny-tasks", "hello,world")
    result.assert_outcomes(failed=2)
    first = (run_dir / "tasks" / "tiny-world" / "result.json").read_text()
    assert json.loads(first)["outcome"] == "failed"
    again = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-p", "tinybench.plugin", "--resume",
                                          str(run_dir), "--benchmark", "tinybench", "--harness", "nop", "-n", "0",
                                          "--tiny-tasks", "hello,world", timeout=600)
    again.assert_outcomes(failed=2)
    assert (run_dir / "tasks" / "tiny-world" / "result.json").read_text() == first  # kept, not run again
