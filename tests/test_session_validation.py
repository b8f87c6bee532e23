"""Issue 12, cases 2, 3, 5, 6, 7, 8 and the run files' modes: a bad invocation is one sentence (pytest's usage
error, exit 4) before the run writes a byte or creates a Docker object, and a resume keeps its configuration.

Real pytest runs in subprocesses, a real finished run (ChattyHarness through the real gateway with the
scripted model) as the run a bad resume must leave as it was."""
import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from run_containers import run_objects
from usage_checks import digest, one_sentence


pytestmark = pytest.mark.docker
ROOT = Path(__file__).resolve().parent.parent
FAKES = ROOT / "tests" / "fake_harnesses.py"
IID = "clawswe__tinyjson-py-12"


def pytest_run(*args, cwd, env=None):
    cmd = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *args]
    return subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=900,
                          env={**os.environ, "CLAWSWE_TEST_SECONDS": "1", **(env or {})})


def docker_objects(client, run_id):
    return run_objects(client, run_id)


@pytest.fixture(scope="module")
def finished(tmp_path_factory, demo_images):
    """A finished run that used a model (so `--model ''` fails on it) and a prices file."""
    base = tmp_path_factory.mktemp("finished")
    prices = base / "prices.yaml"
    prices.write_text("scripted/gold: {input: 1, output: 2}\n")
    run_dir = base / "run"
    args = ["--harness", f"{FAKES}:ChattyHarness", "--model", "scripted/gold", "--dataset", "demo",
            "--instance-ids", IID, "--prices", str(prices)]
    r = pytest_run(*args, "--run-dir", str(run_dir), cwd=base)
    assert r.returncode == 0, r.stdout + r.stderr
    return {"dir": run_dir, "base": base, "args": args, "prices": prices}


def resume(finished, *override, drop=()):
    """The finished run's arguments with some replaced (`override`: option, value pairs) or dropped."""
    args, i = [], 0
    src = finished["args"]
    replaced = dict(zip(override[::2], override[1::2]))
    while i < len(src):
        opt, value = src[i], src[i + 1]
        if opt not in drop:
            args += [opt, replaced.pop(opt, value)]
        i += 2
    for opt, value in replaced.items():
        args += [opt, value]
    return [*args, "--resume", str(finished["dir"])]


# -- case 2: a resume with another result-changing setting refuses, naming it --------------------------

@pytest.mark.parametrize("option, value", [
    ("--harness", "nop"), ("--model", "scripted/noop"), ("--budget", "100"), ("--eval-timeout", "60"),
    ("--mem-limit", "4g"), ("--pids-limit", "100"), ("--disk-limit", "5g"), ("--network", "open"),
    ("--harness-option", "seconds=3"), ("--dataset", "copy"), ("--prices", "other"),
])
def test_case2_resume_with_another_setting_refuses_and_names_it(finished, docker_client, tmp_path, option, value):
    if value == "copy":  # the same instance, from another dataset
        from pytest_clawswe.swe.dataset import load_instances, load_row

        row = load_row(next(i for i in load_instances("demo") if i.instance_id == IID))
        value = str(tmp_path / "copy.json")
        Path(value).write_text(json.dumps([row]))
    if value == "other":  # same file name elsewhere, other contents
        value = str(tmp_path / "prices.yaml")
        Path(value).write_text("scripted/gold: {input: 5, output: 9}\n")
    before = digest(finished["dir"])
    r = pytest_run(*resume(finished, option, value), cwd=tmp_path)
    line = one_sentence(r, option)
    assert "the run in" in line
    assert digest(finished["dir"]) == before


def test_case2_resume_with_the_same_settings_runs(finished, tmp_path):
    r = pytest_run(*resume(finished), cwd=tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "1 passed" in r.stdout


# -- case 3: a failing invocation leaves every byte of an existing run as it was -----------------------

@pytest.mark.parametrize("what, override, words", [
    ("no model", ("--model", ""), ["--model"]),
    ("missing dataset", ("--dataset", "/nonexistent/tasks.json"), ["does not exist"]),
    ("bad instance id", ("--instance-ids", "nope__x-1"), ["nope__x-1"]),
    ("bad mem limit", ("--mem-limit", "banana"), ["--mem-limit banana"]),
    ("bad prices", ("--prices", "BAD"), ["--prices"]),
])
def test_case3_a_failing_resume_leaves_the_run_untouched(finished, docker_client, tmp_path, what, override, words):
    if override[1] == "BAD":
        bad = tmp_path / "bad.yaml"
        bad.write_text("scripted/gold: {input: cheap}\n")
        override = (override[0], str(bad))
    run_id = json.loads((finished["dir"] / "run.json").read_text())["run_id"]
    before = digest(finished["dir"])
    r = pytest_run(*resume(finished, *override), cwd=tmp_path)
    one_sentence(r, *words)
    assert digest(finished["dir"]) == before
    assert docker_objects(docker_client, run_id) == []


# -- case 5: every option and every selected row is checked up front ------------------------------------

@pytest.mark.parametrize("args, words", [
    (["--pids-limit", "-1"], ["--pids-limit -1", "positive"]),
    (["--pids-limit", "0"], ["--pids-limit 0", "positive"]),
    (["--mem-limit", "0"], ["--mem-limit 0", "none"]),
    (["--mem-limit", "banana"], ["--mem-limit banana", "8g"]),
    (["--budget", "-5"], ["--budget -5", "positive"]),
    (["--budget", "0"], ["--budget 0", "positive"]),
    (["--eval-timeout", "0"], ["--eval-timeout 0", "positive"]),
    (["--prices", "MALFORMED"], ["--prices", "input"]),
    (["--dataset", "NO_BASE_COMMIT"], ["lacks base_commit"]),
])
def test_case5_bad_options_and_rows_are_refused_before_anything(docker_client, tmp_path, args, words):
    args = list(args)
    if "MALFORMED" in args:
        (tmp_path / "p.yaml").write_text("scripted/gold: {input: 1}\n")
        args[args.index("MALFORMED")] = str(tmp_path / "p.yaml")
    ids = ["--instance-ids", IID]
    if "NO_BASE_COMMIT" in args:
        from pytest_clawswe.swe.dataset import load_instances, load_row

        row = load_row(next(i for i in load_instances("demo") if i.instance_id == IID))
        del row["base_commit"]
        (tmp_path / "rows.json").write_text(json.dumps([row]))
        args[args.index("NO_BASE_COMMIT")] = str(tmp_path / "rows.json")
    else:
        args = ["--dataset", "demo", *args]
    run_id = f"case5-{os.getpid()}-{abs(hash(tuple(args)))}"
    r = pytest_run("--harness", "oracle", *ids, "--run-id", run_id, *args, cwd=tmp_path)
    one_sentence(r, *words)
    assert not (tmp_path / "reports").exists()
    assert docker_objects(docker_client, run_id) == []


# -- case 6: a run dir that cannot be written ---------------------------------------------------------

def test_case6_run_dir_that_is_a_file(tmp_path):
    (tmp_path / "taken").write_text("x")
    r = pytest_run("--harness", "oracle", "--dataset", "demo", "--instance-ids", IID,
                   "--run-dir", str(tmp_path / "taken"), cwd=tmp_path)
    one_sentence(r, "is a file")
    assert (tmp_path / "taken").read_text() == "x"


def test_case6_run_dir_on_a_read_only_filesystem(tmp_path):
    if os.geteuid() != 0:
        pytest.skip("mounting a read-only tmpfs needs root (CI runs as root)")
    mount = tmp_path / "ro"
    mount.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "ro,size=1m", "tmpfs", str(mount)], check=True)
    try:
        r = pytest_run("--harness", "oracle", "--dataset", "demo", "--instance-ids", IID,
                       "--run-dir", str(mount / "run"), cwd=tmp_path)
        one_sentence(r, "cannot write the run folder", "Read-only")
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


# -- case 7: collection failures, empty datasets, bad lines, resume targets ----------------------------

@pytest.mark.parametrize("dataset, words", [
    ("missing.json", ["does not exist"]),
    ("malformed.json", ["could not read dataset"]),
    ("empty.json", ["has no instances"]),
    ("bad-line.jsonl", ["line 3 of", "not JSON"]),
])
def test_case7_a_bad_dataset_says_so_once_and_creates_no_run_folder(tmp_path, dataset, words):
    (tmp_path / "malformed.json").write_text("{not json")
    (tmp_path / "empty.json").write_text("[]")
    good = {"instance_id": "o__r-1", "repo": "o/r"}
    (tmp_path / "bad-line.jsonl").write_text(json.dumps(good) + "\n\n{oops\n")
    r = pytest_run("--harness", "oracle", "--dataset", dataset, cwd=tmp_path)
    one_sentence(r, *words)
    assert "errors" not in r.stdout and "error" not in r.stdout.lower()  # one complaint, not "2 errors"
    assert not (tmp_path / "reports").exists()


def test_case7_an_unknown_id_creates_no_run_folder(tmp_path):
    r = pytest_run("--harness", "oracle", "--dataset", "demo", "--instance-ids", "nope__x-1", cwd=tmp_path)
    one_sentence(r, "not in the selected dataset: nope__x-1")
    assert not (tmp_path / "reports").exists()


def test_case7_resume_of_a_folder_that_holds_no_run_refuses(tmp_path):
    (tmp_path / "notarun").mkdir()
    r = pytest_run("--harness", "oracle", "--dataset", "demo", "--resume", str(tmp_path / "notarun"), cwd=tmp_path)
    one_sentence(r, "holds no run")
    assert list((tmp_path / "notarun").iterdir()) == []


def test_case7_run_dir_and_resume_together_refuse(finished, tmp_path):
    before = digest(finished["dir"])
    r = pytest_run(*resume(finished), "--run-dir", str(tmp_path / "elsewhere"), cwd=tmp_path)
    one_sentence(r, "--run-dir", "--resume")
    assert not (tmp_path / "elsewhere").exists()
    assert digest(finished["dir"]) == before


def test_case7_a_new_run_into_a_folder_that_holds_a_run_refuses(finished, tmp_path):
    before = digest(finished["dir"])
    r = pytest_run("--harness", "nop", "--dataset", "demo", "--instance-ids", IID, "--run-dir", str(finished["dir"]),
                   cwd=tmp_path)
    one_sentence(r, "already holds a run", "--resume")
    assert digest(finished["dir"]) == before


# -- case 8: a failed model check leaves no Docker object (no network) behind --------------------------

@pytest.mark.parametrize("model", ["", "openrouter/some/model"])
def test_case8_a_failed_model_check_leaves_nothing(docker_client, tmp_path, model):
    run_id = f"case8-{os.getpid()}-{len(model)}"
    env = {k: "" for k in ("OPENROUTER_API_KEY",)}
    r = pytest_run("--harness", f"{FAKES}:ChattyHarness", "--model", model, "--dataset", "demo",
                   "--instance-ids", IID, "--run-id", run_id, cwd=tmp_path, env=env)
    one_sentence(r, "OPENROUTER_API_KEY" if model else "--model")
    assert docker_objects(docker_client, run_id) == []
    assert not (tmp_path / "reports").exists()


# -- smaller: run files are readable; only secrets are private ------------------------------------------

def test_run_files_are_0644_and_only_secrets_private(finished):
    old = os.umask(0o022)
    os.umask(old)
    if old != 0o022:
        pytest.skip("the modes below are those of the common umask 022")
    run_dir = finished["dir"]
    for name in ["run.json", "predictions.jsonl", "results.csv", "summary.json",
                 f"instances/{IID}/metadata.json"]:
        assert stat.S_IMODE((run_dir / name).stat().st_mode) == 0o644, name
    from pytest_clawswe.files import write_atomic

    # what holds a secret (the gateway's state file: its admin token) is written private
    write_atomic(run_dir.parent / "secret.json", "{}", private=True)
    assert stat.S_IMODE((run_dir.parent / "secret.json").stat().st_mode) == 0o600
