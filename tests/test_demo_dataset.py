"""The demo dataset (instances/demo, a swebench 5 task repo) and the image builder.

The fast tests check the data as swebench's own checker and our conventions see it. The docker
tests build every image and grade it with swebench's own run_instance: the gold patch resolves
the instance, and with no patch every FAIL_TO_PASS test fails while PASS_TO_PASS tests pass.
"""
from __future__ import annotations

import argparse
import contextlib
import re
import uuid
from pathlib import Path

import docker.errors
import pytest
import swebench.harness.run_evaluation as run_evaluation
from swebench.harness.log_parsers import PARSER_REGISTRY
from swebench.harness.utils import make_test_spec
from swebench.task.checks import check_task_repo, errors, expected_image
from swebench.task.repo import load_task_repo, task_paths

from pytest_clawswe.cli import UserError
from pytest_clawswe.swe.instance import images
from pytest_clawswe.swe.paths import DEMO_TASK_REPO

LANGUAGES = {"Java", "Go", "Rust", "JS/TS", "C/C++", "Ruby", "PHP", "Python"}
TASKS = load_task_repo(DEMO_TASK_REPO)
FOLDERS = task_paths(DEMO_TASK_REPO)
IDS = [t["instance_id"] for t in TASKS]


def changed_files(patch: str) -> list[str]:
    return re.findall(r"^diff --git a/(\S+) b/", patch, flags=re.M)


# --- the data, no Docker ------------------------------------------------------------------


def test_swebench_check_finds_no_errors():
    problems = check_task_repo(DEMO_TASK_REPO)
    assert errors(problems) == [], "\n".join(map(str, problems))


def test_every_language_group_is_present():
    assert {t["language"] for t in TASKS} == LANGUAGES


def test_at_least_two_fixes_touch_several_files():
    multi = [t["instance_id"] for t in TASKS if len(changed_files(t["patch"])) > 1]
    assert len(multi) >= 2, multi


def test_an_image_is_built_on_bullseye():
    bases = {iid: (FOLDERS[iid] / "Dockerfile").read_text().splitlines()[0] for iid in IDS}
    assert set(bases.values()) <= {"FROM debian:bookworm-slim", "FROM debian:bullseye-slim"}, bases
    assert "FROM debian:bullseye-slim" in bases.values()


@pytest.mark.parametrize("task", TASKS, ids=IDS)
def test_task_follows_the_conventions(task):
    iid = task["instance_id"]
    assert re.fullmatch(r"clawswe__[a-z0-9-]+-\d+", iid)
    assert task["language"] in LANGUAGES
    assert task["image"] == expected_image(iid)
    assert isinstance(task["version"], str)
    assert task["log_parser"] in PARSER_REGISTRY
    assert task["eval_type"] == "pass_and_fail"
    assert task.get("setup_gitignore", False) is (task["language"] != "Python")
    assert task["FAIL_TO_PASS"] and task["PASS_TO_PASS"]
    assert not set(task["FAIL_TO_PASS"]) & set(task["PASS_TO_PASS"])
    # gold changes code only, the test patch tests only
    assert set(changed_files(task["patch"])).isdisjoint(changed_files(task["test_patch"]))


@pytest.mark.parametrize("task", TASKS, ids=IDS)
def test_eval_script_is_shaped_like_swebench(task):
    script = task["eval_script"]
    lines = script.splitlines()
    assert lines[:2] == ["#!/bin/bash", "set -uxo pipefail"] and "cd /testbed" in lines
    # stdout and stderr merged before the tests run, or docker may splice them mid-line
    assert lines.index("exec 2>&1") < lines.index(": '>>>>> Start Test Output'")
    start, end = lines.index(": '>>>>> Start Test Output'"), lines.index(": '>>>>> End Test Output'")
    assert start + 1 < end
    # test files reset to base before and after, and the test patch is inlined verbatim
    resets = [n for n, line in enumerate(lines) if line.startswith(f"git checkout {task['base_commit']} -- ")]
    assert len(resets) == 2 and resets[0] < start < end < resets[1]
    inline = script.split("<<'EOF_114329324912'\n", 1)[1].split("\nEOF_114329324912\n", 1)[0]
    assert inline + "\n" == task["test_patch"]


def test_history_generator_is_the_same_everywhere():
    canonical = (DEMO_TASK_REPO / "tools" / "make_history.sh").read_bytes()
    for iid in IDS:
        assert (FOLDERS[iid] / "make_history.sh").read_bytes() == canonical, iid


# --- images.py without Docker -------------------------------------------------------------


def test_context_hash_follows_the_build_context(tmp_path):
    (tmp_path / "Dockerfile").write_text("FROM debian:bookworm-slim\n")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "a.txt").write_text("a")
    first = images.context_hash(tmp_path)
    assert images.context_hash(tmp_path) == first
    (tmp_path / "sub" / "a.txt").write_text("b")
    assert images.context_hash(tmp_path) != first


def test_load_instances_adds_the_task_folder():
    [inst] = images.load_instances(DEMO_TASK_REPO, [IDS[0]])
    assert Path(inst[images.TASK_DIR]) == FOLDERS[IDS[0]]
    assert inst["image"] == TASKS[0]["image"]


def _images_cli(argv):
    parser = argparse.ArgumentParser()
    images.add_cli(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(argv)
    return args.func(args)


def test_cli_rejects_what_is_not_a_task_repo(tmp_path):
    with pytest.raises(UserError, match="not a task repo"):
        _images_cli(["images", "build", "--dataset", str(tmp_path)])


def test_cli_rejects_unknown_instance_ids():
    with pytest.raises(UserError, match="clawswe__nope-1"):
        _images_cli(["images", "build", "--dataset", "demo", "--instance-ids", "clawswe__nope-1"])


# --- with Docker --------------------------------------------------------------------------


@pytest.fixture(scope="module")
def engine(docker_client):
    """The suite's Docker client: no engine is a failure that says how to start one, never a skip."""
    return docker_client


@pytest.fixture(scope="module")
def built(engine):
    lines = []
    tags = images.build_images(images.load_instances(DEMO_TASK_REPO), engine, progress=lines.append)
    assert set(tags) == set(IDS), lines
    return tags


@pytest.fixture
def scratch_image(engine, tmp_path, monkeypatch):
    """A throwaway tag for builder tests, removed afterwards (the builder drops replaced versions)."""
    monkeypatch.setenv("CLAWSWE_CACHE", str(tmp_path / "cache"))  # build logs stay out of ~/.cache
    tag = f"clawswe-test/images-{uuid.uuid4().hex[:8]}:latest"
    yield tag
    try:
        engine.images.remove(tag, force=True)
    except docker.errors.ImageNotFound:
        pass


@pytest.mark.docker
def test_build_reuses_an_up_to_date_image_and_rebuilds_a_changed_one(engine, scratch_image, tmp_path):
    ctx = tmp_path / "context"
    ctx.mkdir()
    (ctx / "Dockerfile").write_text("FROM debian:bookworm-slim\nCOPY a.txt /a.txt\n")
    (ctx / "a.txt").write_text("one")
    inst = {"instance_id": "clawswe__scratch-1", "image": scratch_image, images.TASK_DIR: str(ctx)}
    lines = []
    images.build_images([inst], engine, progress=lines.append)
    first = engine.images.get(scratch_image).id
    assert any("built" in line for line in lines)
    lines.clear()
    images.build_images([inst], engine, progress=lines.append)
    assert lines == [f"[1/1] clawswe__scratch-1: up to date ({scratch_image})"]
    assert images.ensure_instance_image(inst, engine, progress=lines.append) == scratch_image
    (ctx / "a.txt").write_text("two")
    images.ensure_instance_image(inst, engine, progress=lines.append)  # stale: rebuilt
    assert engine.images.get(scratch_image).id != first
    with pytest.raises(docker.errors.ImageNotFound):  # the replaced version is not left behind
        engine.images.get(first)


@pytest.mark.docker
def test_a_rebuild_leaves_no_copy_of_the_replaced_version(engine, scratch_image, tmp_path, python_demo):
    """The replaced version had an image prepared from it and a registry name (a cluster run pushed it): both kept
    it on the disk as a dangling copy (20 of them, 7.9 GB, had gathered on a developer's machine)."""
    from pytest_clawswe.swe.dataset import load_row
    from pytest_clawswe.swe.instance import prepare

    ctx = tmp_path / "context"
    ctx.mkdir()
    (ctx / "Dockerfile").write_text(f"FROM {python_demo.image}\nCOPY a.txt /a.txt\n")
    (ctx / "a.txt").write_text("one")
    inst = {"instance_id": "clawswe__scratch-4", "image": scratch_image, images.TASK_DIR: str(ctx)}
    images.build_images([inst], engine, progress=lambda line: None)
    first = engine.images.get(scratch_image)
    child, _ = prepare.prepared_image(engine, scratch_image, load_row(python_demo)["base_commit"], False,
                                      {}, progress=lambda line: None)
    remote, version = f"127.0.0.1:5999/{scratch_image}".rsplit(":", 1)
    first.tag(remote, version)
    (ctx / "a.txt").write_text("two")
    images.ensure_instance_image(inst, engine, progress=lambda line: None)
    left = [name for name in (child, f"{remote}:{version}", first.id) if _image_exists(engine, name)]
    for name in left:  # (children first: an image with children cannot go)
        with contextlib.suppress(docker.errors.APIError):
            engine.images.remove(name, force=True)
    assert left == []


def _image_exists(engine, name: str) -> bool:
    try:
        engine.images.get(name)
    except docker.errors.ImageNotFound:
        return False
    return True


@pytest.mark.docker
def test_a_failed_build_names_the_instance_and_the_log(engine, scratch_image, tmp_path):
    ctx = tmp_path / "context"
    ctx.mkdir()
    (ctx / "Dockerfile").write_text("FROM debian:bookworm-slim\nRUN echo broken >&2 && false\n")
    inst = {"instance_id": "clawswe__broken-2", "image": scratch_image, images.TASK_DIR: str(ctx)}
    with pytest.raises(images.ImageError) as info:
        images.build_images([inst], engine, progress=lambda line: None)
    message = str(info.value)
    log = images.build_log_dir() / "clawswe__broken-2.log"
    assert "clawswe__broken-2" in message and str(log) in message
    assert "broken" in log.read_text()


@pytest.mark.docker
def test_an_image_that_cannot_be_pulled_is_an_image_error(engine):
    inst = {"instance_id": "clawswe__nowhere-3", "image": f"clawswe-test/nowhere-{uuid.uuid4().hex[:8]}:latest"}
    with pytest.raises(images.ImageError, match="clawswe__nowhere-3"):
        images.ensure_instance_image(inst, engine, progress=lambda line: None)


def _in_image(engine, image: str, command: str) -> str:
    out = engine.containers.run(image, ["bash", "-c", command], remove=True, working_dir="/testbed",
                                labels={"clawswe.test": "demo-dataset"})
    return out.decode().strip()


@pytest.mark.docker
@pytest.mark.parametrize("task", TASKS, ids=IDS)
def test_image_history_has_a_future_to_purge(engine, built, task):
    base = task["base_commit"]
    head, status, future, tags = _in_image(
        engine, task["image"],
        f"git rev-parse HEAD; echo \"[$(git status --porcelain)]\"; git rev-list --all --not {base} | wc -l; "
        f"git tag --contains {base} | wc -l").splitlines()
    assert head == base
    assert status == "[]"
    assert int(future) >= 1  # commits that are not ancestors of base: the leaked fix
    assert int(tags) >= 1
    assert int(_in_image(engine, task["image"], f"git rev-list --count {base}")) >= 3


def _grade(engine, task, tmp_path, monkeypatch, skip_patch: bool) -> dict:
    monkeypatch.setattr(run_evaluation, "RUN_EVALUATION_LOG_DIR", tmp_path / "logs")
    pred = {"instance_id": task["instance_id"], "model_name_or_path": "gold",
            "model_patch": "" if skip_patch else task["patch"]}
    run_id = f"demo-{'nopatch' if skip_patch else 'gold'}-{uuid.uuid4().hex[:6]}"
    result = run_evaluation.run_instance(make_test_spec(task), pred, engine, run_id, timeout=900,
                                         skip_patch=skip_patch)
    log = tmp_path / "logs" / run_id / "gold" / task["instance_id"] / "run_instance.log"
    assert result, f"swebench could not evaluate {task['instance_id']}: see {log}"
    return result[1][task["instance_id"]]


@pytest.mark.docker
@pytest.mark.parametrize("task", TASKS, ids=IDS)
def test_gold_patch_resolves(engine, built, task, tmp_path, monkeypatch):
    report = _grade(engine, task, tmp_path, monkeypatch, skip_patch=False)
    status = report["tests_status"]
    assert status["FAIL_TO_PASS"]["failure"] == [] and status["PASS_TO_PASS"]["failure"] == []
    assert sorted(status["FAIL_TO_PASS"]["success"]) == sorted(task["FAIL_TO_PASS"])
    assert sorted(status["PASS_TO_PASS"]["success"]) == sorted(task["PASS_TO_PASS"])
    assert report["resolved"]


@pytest.mark.docker
@pytest.mark.parametrize("task", TASKS, ids=IDS)
def test_without_a_patch_only_the_fail_to_pass_tests_fail(engine, built, task, tmp_path, monkeypatch):
    report = _grade(engine, task, tmp_path, monkeypatch, skip_patch=True)
    status = report["tests_status"]
    assert sorted(status["FAIL_TO_PASS"]["failure"]) == sorted(task["FAIL_TO_PASS"])
    assert sorted(status["PASS_TO_PASS"]["success"]) == sorted(task["PASS_TO_PASS"])
    assert not report["resolved"]
