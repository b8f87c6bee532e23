import json
import sys
from pathlib import Path

import pytest

from pytest_clawswe.engine.sandbox.docker_workspace import Workspace
from pytest_clawswe.errors import InfraError
from pytest_clawswe.labels import LABEL_RUN
from pytest_clawswe.swe.instance import prepare as prep
from pytest_clawswe.swe.dataset import load_row

sys.path.insert(0, str(Path(__file__).parent))
from plant import PLANT_SCRIPT  # noqa: E402

pytestmark = pytest.mark.docker


def planted(ws) -> str:
    return ws.exec(["bash", "-c", PLANT_SCRIPT], check=True).stdout.strip().splitlines()[-1]


def test_purge_leaves_only_the_base_history(docker_client, python_demo):
    with Workspace(docker_client, python_demo.image, labels={LABEL_RUN: "t-prep"}) as ws:
        base = planted(ws)
        future = ws.exec("cd /testbed && git rev-list --all --reflog; git fsck --unreachable --no-reflogs "
                         "2>/dev/null | awk '/commit/ {print $3}'").stdout.split()
        ancestors = set(ws.exec(f"cd /testbed && git rev-list {base}").stdout.split())
        future = set(future) - ancestors
        assert len(future) >= 5  # commits, branch, tags, stash, dangling
        with pytest.raises(InfraError, match="purge failed"):
            prep.check_purged(ws, base)

        prep.prepare(ws, base, gitignore=True)

        out = ws.exec("cd /testbed && git rev-parse HEAD && git tag && git branch -a && git stash list "
                      "&& git log --all --reflog --format=%H").stdout.split()
        assert out[0] == base and "v1" in out and not {"v2", "v3", "feature"} & set(out)
        assert set(out[out.index("main") + 1:]) <= ancestors
        for sha in future:  # not reachable and not recoverable either
            assert ws.exec(f"cd /testbed && git cat-file -e {sha}").exit_code != 0
        assert ws.exec("cd /testbed && git status --porcelain").stdout == ""
        assert "core.excludesfile" in ws.exec("git config --system --list").stdout.lower()


def test_a_remote_head_symref_is_removed_not_followed(docker_client, python_demo):
    """A clone's refs/remotes/origin/HEAD points at origin's branch: deleting every ref through the symref
    deleted its target twice and git refused the whole update ("multiple updates ... via symref")."""
    base = load_row(python_demo)["base_commit"]
    with Workspace(docker_client, python_demo.image, labels={LABEL_RUN: "t-prep"}) as ws:
        ws.exec("cd /testbed && git update-ref refs/remotes/origin/main HEAD "
                "&& git symbolic-ref refs/remotes/origin/HEAD refs/remotes/origin/main", check=True)
        prep.prepare(ws, base, gitignore=False)
        refs = ws.exec("cd /testbed && git for-each-ref --format='%(refname)'", check=True).stdout.split()
        assert not [r for r in refs if r.startswith("refs/remotes/")], refs
        prep.check_purged(ws, base)


def test_demo_images_have_a_future_that_preparation_removes(docker_client, demo_instances, demo_images):
    for inst in demo_instances:
        row = load_row(inst)
        with Workspace(docker_client, inst.image, labels={LABEL_RUN: "t-prep"}) as ws:
            with pytest.raises(InfraError, match="purge failed"):
                prep.check_purged(ws, row["base_commit"])
            prep.prepare(ws, row["base_commit"], inst.setup_gitignore)


def test_prepared_image_is_built_once_and_reused(docker_client, python_demo):
    row = load_row(python_demo)
    tag, first = prep.prepared_image(docker_client, python_demo.image, row["base_commit"], False,
                                     {LABEL_RUN: "t-prep"}, progress=lambda m: None)
    again, second = prep.prepared_image(docker_client, python_demo.image, row["base_commit"], False,
                                        {LABEL_RUN: "t-prep"}, progress=lambda m: None)
    assert tag == again and second == 0.0
    with Workspace(docker_client, tag, labels={LABEL_RUN: "t-prep"}) as ws:
        prep.check_purged(ws, row["base_commit"])


def test_an_item_whose_preparation_leaves_a_future_commit_errors(pytester, docker_client, python_demo,
                                                                   monkeypatch):
    """The paper's cleanup (delete newer tags, warn on failure) leaves branches: our check must stop the item."""
    row = load_row(python_demo)
    with Workspace(docker_client, python_demo.image, labels={LABEL_RUN: "t-prep"}) as ws:
        ws.exec(f"cd /testbed && git checkout -q -b leak && git -c user.name=t -c user.email=t@t "
                f"commit -q --allow-empty -m leaked-fix "
                f"&& git checkout -q -f {row['base_commit']}", check=True)
        leaky = ws.container.commit(repository="clawswe-test/leaky", tag="latest")
    try:
        weak = prep.PREPARE_SCRIPT.replace("git for-each-ref --format='%(refname)'",
                                           "git for-each-ref --format='%(refname)' refs/tags")
        monkeypatch.setattr(prep, "PREPARE_SCRIPT", weak)
        data = {**row, "instance_id": "clawswe__leaky-1", "image": "clawswe-test/leaky:latest"}
        (pytester.path / "leaky.json").write_text(json.dumps([data]))
        # -n 0: in this process, where the weakened script is patched in (benchmark mode defaults to 3 workers)
        result = pytester.runpytest("--harness", "oracle", "--dataset", "leaky.json", "-p", "no:cacheprovider",
                                    "-n", "0")
        result.assert_outcomes(errors=1)
        result.stdout.fnmatch_lines(["*future-commit purge failed*"])
    finally:  # (each run's commit would otherwise leave the last one's image behind, untagged)
        docker_client.images.remove(leaky.id, force=True)
