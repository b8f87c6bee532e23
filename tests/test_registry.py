"""Images through a registry (issue 25 §1) in grid order (§3): a two-column grid over this machine's engine and a
second engine (tests/second_engine.py) with a local registry (tests/local_registry.py) on the address where the
two meet. Each image the second engine needs is pushed once and pulled once, and each prepared image is made
once per engine for both columns; nothing goes by save | load."""
import json
import subprocess
import sys
import threading
import time
from collections import Counter

import docker.errors
import pytest
from local_registry import start_registry
from second_engine import second_engine_fixture  # noqa: F401  (the second_engine fixture)

from pytest_clawswe.engine.images.cache_level import SOURCE_LABEL
from pytest_clawswe.engine.images.registry import ImageRegistry, check_address, split
from pytest_clawswe.labels import LABEL_RUN
from pytest_clawswe.swe.grid import Column, make_plan, run

LOCAL = "unix:///var/run/docker.sock"


# -- no Docker ---------------------------------------------------------------------------------------------
def test_registry_names_keep_the_repository_and_tag():
    registry = ImageRegistry("10.0.0.5:5000")
    assert registry.name_of("swebench/sweb.eval.x86_64.a:latest") == "10.0.0.5:5000/swebench/sweb.eval.x86_64.a:latest"
    assert registry.name_of("clawswe-relay:abc") == "10.0.0.5:5000/clawswe-relay:abc"
    assert split("localhost:5000/x") == ("localhost:5000/x", "latest")
    assert check_address("https://reg.example:5000/") == "reg.example:5000"
    with pytest.raises(ValueError, match="give the registry as HOST:PORT"):
        check_address("reg.example:5000/path")


def test_a_malformed_registry_is_one_sentence_before_anything_is_written(pytester, tmp_path):
    result = pytester.runpytest_subprocess("--harness=oracle", "--dataset", "demo", "--run-dir",
                                           str(tmp_path / "r"), "--registry", "a b")
    assert "--registry 'a b': give the registry as HOST:PORT" in result.stderr.str()
    assert not (tmp_path / "r").exists()


def test_a_grid_runs_chunk_by_chunk_every_column_and_resumes_per_column(tmp_path):
    plan = make_plan("demo", [Column.parse("oracle"), Column.parse("claude-code/scripted/gold")], 5, None, ["-n", "2"])
    assert [len(c) for c in plan.chunks] == [5, 3]
    lines = []
    run(plan, tmp_path, dry_run=True, echo=lines.append)
    order = [(line.split()[2], line.split()[4].rstrip(":")) for line in lines]
    assert order == [("1/2", "oracle"), ("1/2", "claude-code_scripted-gold"), ("2/2", "oracle"),
                     ("2/2", "claude-code_scripted-gold")]
    assert "--model scripted/gold" in lines[1] and "--run-dir" in lines[0] and lines[0].endswith("-n 2")
    (tmp_path / "oracle").mkdir()
    (tmp_path / "oracle" / "run.json").write_text("{}")
    plan.done = {"oracle": [0]}
    lines = []
    run(plan, tmp_path, dry_run=True, echo=lines.append)
    assert len(lines) == 3 and f"--resume {tmp_path / 'oracle'}" in lines[1]  # chunk 1 of oracle has ended


def test_a_grid_refuses_an_out_folder_of_another_grid(tmp_path):
    from pytest_clawswe.cli import main

    assert main(["grid", "--column", "nop", "--out", str(tmp_path), "--chunk", "4", "--dry-run"]) == 0
    make_plan("demo", [Column("nop")], 4, None, []).save(tmp_path)
    assert main(["grid", "--column", "oracle", "--out", str(tmp_path), "--dry-run"]) == 2


# -- real engines and a real registry -----------------------------------------------------------------------
@pytest.fixture
def registry(second_engine, tmp_path):
    with start_registry(second_engine.host_side_addr, tmp_path / "registry") as name:
        yield name


def _drop(client, name):
    try:
        client.images.remove(name, force=True)
    except docker.errors.APIError:
        pass


class _Events:
    """An engine's image and commit events, streamed while the test runs (the daemon keeps only its last 256,
    and the shared engine has other users)."""

    def __init__(self, client):
        self.seen: list[dict] = []
        self._stream = client.events(decode=True, filters={"type": ["image", "container"]})
        self._thread = threading.Thread(target=self._read, daemon=True)
        self._thread.start()

    def _read(self):
        try:
            for event in self._stream:
                if event.get("Type") == "image" or event.get("Action") == "commit":
                    self.seen.append(event)
        except Exception:  # closed
            pass

    def stop(self) -> list[dict]:
        time.sleep(1)
        self._stream.close()
        self._thread.join(5)
        return self.seen


@pytest.mark.docker
def test_a_two_column_grid_over_two_engines_moves_each_image_through_the_registry_once(
        second_engine, docker_client, demo_instances, demo_images, registry, tmp_path):
    chosen = [i for i in demo_instances if i.language in ("Python", "Ruby")]
    ids, images = [i.instance_id for i in chosen], {i.image for i in chosen}
    engine2 = second_engine.client()
    for image in images:  # the second engine (the tests' own) starts without them
        for prepared in engine2.images.list(filters={"label": f"{SOURCE_LABEL}={image}"}):
            _drop(engine2, prepared.id)
        _drop(engine2, image)
    watch_local, watch_remote = _Events(docker_client), _Events(engine2)
    out = tmp_path / "grid"
    try:
        done = subprocess.run(
            [sys.executable, "-m", "pytest_clawswe.cli", "grid", "--column", "oracle", "--column", "nop",
             "--dataset", "demo", "--instance-ids", *ids, "--out", str(out), "--",
             "-n", "2", "--docker-host", LOCAL, "--docker-host", second_engine.url,
             f"--docker-tls-dir={second_engine.tls_dir}", f"--registry={registry}"],
            cwd=tmp_path, capture_output=True, text=True, timeout=1800)
        local, remote = watch_local.stop(), watch_remote.stop()
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
        metas = {(col, m.parent.name): json.loads(m.read_text()) for col in ("oracle", "nop")
                 for m in (out / col / "instances").glob("*/metadata.json")}
        assert sorted(metas) == sorted((c, i) for c in ("oracle", "nop") for i in ids)
        assert all(m["resolved"] for (col, _), m in metas.items() if col == "oracle")
        on_two = {m["image"] for m in metas.values() if m["docker_host"] == second_engine.url}
        assert on_two, "no item ran on the second engine"
    finally:  # the registry's names on the shared demo images go (the images stay)
        for image in images:
            _drop(docker_client, f"{registry}/{image}")
    run_ids = {json.loads((out / col / "run.json").read_text())["run_id"] for col in ("oracle", "nop")}
    (tmp_path / "events.json").write_text(json.dumps({"local": local, "remote": remote,
                                                      "metas": {"/".join(k): m for k, m in metas.items()}}, indent=1))
    pushed = Counter(e["Actor"]["ID"] for e in local if e.get("Type") == "image" and e.get("Action") == "push")
    pulled = Counter(e["Actor"]["ID"] for e in remote if e.get("Type") == "image" and e.get("Action") == "pull")
    loaded = [e for e in remote if e.get("Type") == "image" and e.get("Action") == "load"]
    assert loaded == []
    # every image the second engine used went through the registry exactly once, both columns together
    assert {n.removeprefix(registry + "/") for n in pushed} == on_two and set(pushed.values()) == {1}
    assert {n.removeprefix(registry + "/") for n in pulled} == on_two and set(pulled.values()) == {1}
    # each prepared image made once per engine for both columns
    for client, events in ((docker_client, local), (engine2, remote)):
        commits = [e for e in events if e.get("Action") == "commit"  # this grid's (the shared engine has others)
                   and (e["Actor"].get("Attributes") or {}).get(LABEL_RUN) in run_ids]
        used = {m["image"] for m in metas.values()
                if (m["docker_host"] == second_engine.url) == (client is engine2)}
        assert len(commits) <= len(used)
    second = [m for m in metas.values() if m["docker_host"] == second_engine.url]
    assert {m["images"]["instance"] for m in second} <= {"pushed", "registry", "hit"}
    print(f"\npushes {dict(pushed)}\npulls {dict(pulled)}\nitems {[(k, m['docker_host'], m['images']) for k, m in metas.items()]}")
