"""An option the run's benchmark does not read is refused in one sentence before anything is written: another
benchmark's (WildClawBench given --instance-ids ran every task) or one of every benchmark's it has no use for
(WildClawBench re-runs no task: --retries). Real pytest processes; nothing here reaches Docker."""
import subprocess
import sys

import pytest

USAGE = pytest.ExitCode.USAGE_ERROR
WILD = ["--benchmark", "wildclaw", "--dataset", "demo", "--harness", "claude-code", "--model", "scripted/gold"]
SWE = ["--dataset", "demo", "--harness", "oracle"]


def _pytest(tmp_path, *args):
    return subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--run-dir",
                           str(tmp_path / "run"), *args], cwd=tmp_path, capture_output=True, text=True, timeout=300)


@pytest.mark.parametrize("given, words", [
    (WILD + ["--instance-ids", "x"], ["--instance-ids is --benchmark swe's option", "WildClawBench", "-k"]),
    (WILD + ["--instances-file", "ids.txt"], ["--instances-file", "-k"]),
    (WILD + ["--lite"], ["--lite is --benchmark swe's option"]),
    (WILD + ["--no-purge"], ["--no-purge is --benchmark swe's option"]),
    (WILD + ["--eval-timeout", "60"], ["--eval-timeout"]),
    (WILD + ["--retries", "2"], ["WildClawBench (--benchmark wildclaw) does not read --retries"]),
    (WILD + ["--cache-level", "none"], ["does not read --cache-level"]),
    (WILD + ["--image-cache", "10g"], ["does not read --image-cache"]),
    # each task has its own budget (timeout_seconds): --budget was accepted, ignored and written to run.json
    (WILD + ["--budget", "600"], ["does not read --budget", "--budget-factor"]),
    (SWE + ["--judge-model", "openai/gpt-5.4-mini"], ["--judge-model is --benchmark wildclaw's option",
                                                      "Claw-SWE-Bench"]),
    (SWE + ["--pass-score", "0.7"], ["--pass-score"]),
])
def test_an_option_the_benchmark_does_not_read_is_one_sentence_and_nothing_runs(tmp_path, given, words):
    r = _pytest(tmp_path, *given, "--collect-only")  # (listing checks the options too; a regression runs nothing)
    assert r.returncode == USAGE, r.stdout[-2000:] + r.stderr[-2000:]
    lines = [line for line in r.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("ERROR: "), r.stderr
    for word in words:
        assert word in lines[0], lines[0]
    assert "drop it" in lines[0]
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize("given", [WILD + ["--judge-model", "scripted", "--pass-score", "0.7", "--retries", "0"],
                                   SWE + ["--instance-ids", "clawswe__tinyjson-py-12", "--retries", "1",
                                          "--no-purge", "--cache-level", "none"]])
def test_a_benchmarks_own_options_and_defaults_given_aloud_are_not_refused(tmp_path, given):
    r = _pytest(tmp_path, *given, "--collect-only", "-q")
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
