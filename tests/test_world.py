"""The agent's world (engine/sandbox/world.py): what it changed in its container, kept on the host and put into another
container at the same paths, real Docker (the WildClawBench task image, which the grader image is built on).

What the agent changed outside the system reaches the other container; the system (where the grader's interpreter
and its libraries live), mounts, our tooling paths and caches do not, each noted with its reason; deletions are
noted and replayed; symlinks stay links, and one resolving into ground truth is dropped once gt/ is there.
"""
from __future__ import annotations

import json

import pytest

from pytest_clawswe.engine.sandbox import world
from pytest_clawswe.engine.sandbox.docker_workspace import Workspace
from pytest_clawswe.labels import LABEL_RUN

pytestmark = pytest.mark.docker

AGENT = r"""
set -e
mkdir -p /root/skills/paper-banana /tmp/clawswe-agent/state /root/.cache/pip /usr/local/lib/planted /tmp_workspace
echo '# cloned' > /root/skills/paper-banana/SKILL.md
echo 'export PATH=/root/bin:$PATH' >> /root/.bashrc
echo harness-state > /tmp/clawswe-agent/state/config.json
head -c 300000 /dev/zero > /root/.cache/pip/wheel.bin
echo 'import os' > /usr/local/lib/planted/sitecustomize.py
echo agent > /usr/local/bin/python3-planted
echo output > /tmp_workspace/out.txt
ln -s /tmp_workspace/gt/secret.txt /root/peek
ln -s /root/skills /root/skills-link
echo one > /root/notes.txt && ln /root/notes.txt /root/notes-again.txt
mkdir -p /srv/big && head -c 400000 /dev/zero > /srv/big/blob.bin
rm /root/.profile
"""


@pytest.fixture(scope="module")
def task_image(docker_client):
    from pytest_clawswe.wildclaw.task.images import ensure_images

    return ensure_images(docker_client, progress=lambda line: None)[0]


def test_the_world_reaches_another_container_at_the_same_paths_and_no_further(docker_client, task_image, tmp_path):
    labels = {LABEL_RUN: "t-world"}
    with Workspace(docker_client, task_image, labels=labels, read_only={str(tmp_path): "/app"}) as agent:
        agent.exec(AGENT, check=True)
        manifest = world.capture(agent, tmp_path / "world", skip=["/tmp_workspace"], budget=200_000)
    assert json.loads((tmp_path / "world" / world.WORLD_FILE).read_text()) == manifest
    files = tmp_path / "world" / world.FILES_DIR
    assert (files / "root" / "skills" / "paper-banana" / "SKILL.md").read_text() == "# cloned\n"
    assert "export PATH=/root/bin" in (files / "root" / ".bashrc").read_text()
    reasons = {entry["path"]: entry["reason"] for entry in manifest["left_out"]}
    assert reasons["/usr/local/lib/planted"] == "system" and reasons["/usr/local/bin/python3-planted"] == "system"
    assert reasons["/tmp/clawswe-agent"] == "ours" and reasons["/root/.cache/pip"] == "cache"
    assert reasons["/tmp_workspace/out.txt"] == "skipped" and reasons["/app"] == "mount"
    assert reasons["/srv/big/blob.bin"] == "budget"
    assert not [p for p in files.rglob("*") if p.is_symlink()]  # links are noted, never made on the host
    assert {"path": "/root/peek", "target": "/tmp_workspace/gt/secret.txt"} in manifest["symlinks"]
    assert "/root/.profile" in manifest["deleted"]
    assert (files / "root" / "notes-again.txt").read_text() == "one\n"  # a hard link: its bytes, as a copy

    with Workspace(docker_client, task_image, labels=labels) as grader:
        assert grader.exec(["test", "-e", "/root/.profile"]).exit_code == 0
        world.restore(grader, tmp_path / "world", skip=["/tmp_workspace"])
        show = grader.exec("cat /root/skills/paper-banana/SKILL.md; tail -1 /root/.bashrc; readlink /root/peek; "
                           "cat /root/skills-link/paper-banana/SKILL.md; cat /root/notes-again.txt").stdout
        assert show.split("\n")[:5] == ["# cloned", "export PATH=/root/bin:$PATH", "/tmp_workspace/gt/secret.txt",
                                        "# cloned", "one"]
        gone = "for p in /root/.profile /usr/local/lib/planted /usr/local/bin/python3-planted /tmp/clawswe-agent " \
               "/root/.cache/pip/wheel.bin /srv/big/blob.bin; do test -e $p && echo $p; done; true"
        assert grader.exec(gone).stdout == ""  # deleted as the agent deleted it; the rest never put there
        grader.exec("mkdir -p /tmp_workspace/gt && echo GT > /tmp_workspace/gt/secret.txt", check=True)
        assert world.drop_links_into(grader, manifest, ["/tmp_workspace/gt", "/clawswe"]) == ["/root/peek"]
        assert grader.exec(["test", "-L", "/root/peek"]).exit_code != 0
        assert grader.exec(["test", "-L", "/root/skills-link"]).exit_code == 0  # a link elsewhere stays


def test_a_world_that_names_a_system_path_is_not_put_there(docker_client, task_image, tmp_path):
    """world.json and files/ are read back from the run folder: whatever they hold, nothing lands in the system."""
    dest = tmp_path / "world"
    (dest / world.FILES_DIR / "usr" / "lib" / "python3.11").mkdir(parents=True)
    (dest / world.FILES_DIR / "usr" / "lib" / "python3.11" / "evil.py").write_text("raise SystemExit")
    (dest / world.FILES_DIR / "root").mkdir()
    (dest / world.FILES_DIR / "root" / "ok.txt").write_text("ok")
    (dest / world.WORLD_FILE).write_text(json.dumps({"deleted": ["/usr/bin", "/"], "symlinks": [
        {"path": "/etc/ld.so.preload", "target": "/root/x.so"}]}))
    with Workspace(docker_client, task_image, labels={LABEL_RUN: "t-world"}) as grader:
        world.restore(grader, dest)
        out = grader.exec("test -e /usr/lib/python3.11/evil.py && echo evil; test -e /etc/ld.so.preload && echo pre;"
                          " test -d /usr/bin && cat /root/ok.txt").stdout
        assert out == "ok"


def test_the_overlay_read_here_says_what_the_engines_diff_says(docker_client, task_image):
    """engine/sandbox/overlay.py reads a container's changes from its upper folder on this machine: the same paths and kinds
    as the engine's own (slow) diff, added, changed, deleted, a folder removed and made anew included."""
    from pytest_clawswe.engine.sandbox.overlay import local_layers, upper_changes

    with Workspace(docker_client, task_image, labels={LABEL_RUN: "t-world"}) as ws:
        ws.exec("mkdir -p /root/a/b && echo x > /root/a/b/c && echo y >> /root/.bashrc && rm /root/.profile && "
                "rm -rf /opt/ms-playwright && mkdir /opt/ms-playwright && echo z > /opt/ms-playwright/new && "
                "ln -s /etc/passwd /root/link", check=True)
        ws.container.reload()
        layers = local_layers(ws.container.attrs)
        if layers is None:
            pytest.skip("the engine keeps its layers elsewhere (or they are not readable here)")
        engine = sorted((d["Path"], {0: "changed", 1: "added", 2: "deleted"}[d["Kind"]]) for d in ws.container.diff())
        assert sorted(upper_changes(*layers)) == engine
        assert sorted(ws.changes()) == engine
