"""Preparation of /testbed: reset to base_commit, purge the future, prove the purge.

SWE-bench images often hold the repository's later history, including the very fix an agent is asked
to write. The paper's cleanup deleted newer tags and ran `git gc --aggressive` (too slow to finish on a
large repository) and only warned when the check failed. Here every ref, reflog, stash and object that
is not base_commit or one of its ancestors is removed with a plain repack, and a check that lists every
commit object in the object store (loose, packed and borrowed) proves it; a failed check is an error.

Preparation is paid once per image: the prepared container is committed as a local derived image, and
later runs start from that image and only re-run the (fast) check.
"""
from __future__ import annotations

import hashlib
import re
import time

import docker
import docker.errors

from pytest_clawswe.engine.sandbox.docker_workspace import Workspace
from pytest_clawswe.errors import InfraError
from pytest_clawswe.labels import LABEL_ROLE
from pytest_clawswe.engine.framing.framed import read_framed
from pytest_clawswe.engine.workspace import BaseWorkspace
from pytest_clawswe.labels import LABEL_PREPARED
from pytest_clawswe.labels import LABEL_SOURCE_IMAGE as LABEL_SOURCE

PREP_VERSION = "3"  # bump when the preparation changes, so derived images are rebuilt
PREPARED_REPO = "clawswe-prepared"
TESTBED = "/testbed"

# The paper's global gitignore for Multilingual images: build outputs never end up in a patch.
GLOBAL_GITIGNORE = """*.class
*.jar
*.war
*.ear
*.o
*.obj
*.so
*.dylib
*.dll
*.a
*.lib
*.out
*.pyc
*.pyo
__pycache__/
*.egg-info/
/target/
node_modules/
*.exe
*.bin
"""
GITIGNORE_PATH = "/etc/clawswe-gitignore"

# $1 = base commit. Runs in the container as root; needs only git and POSIX sh tools.
PREPARE_SCRIPT = r"""
set -eu
cd /testbed
base=$(git rev-parse --verify "$1^{commit}")
git config --global --add safe.directory '*'
git config --global user.name "clawswe"
git config --global user.email "clawswe@localhost"
git config --global gc.auto 0
branch=$(git symbolic-ref -q --short HEAD || echo main)
git checkout -q -f -B "$branch" "$base"
git clean -fdq
# Every ref but our branch and the tags already in base's history goes.
git tag --merged "$base" --format='refs/tags/%(refname:short)' > /tmp/.keep-refs
echo "refs/heads/$branch" >> /tmp/.keep-refs
# (--no-deref: a symbolic ref such as refs/remotes/origin/HEAD goes itself, its target is deleted once on its own)
git for-each-ref --format='%(refname)' | grep -vxF -f /tmp/.keep-refs | sed 's/^/delete /' \
  | git update-ref --no-deref --stdin
rm -f /tmp/.keep-refs
git worktree prune
cd .git
rm -rf logs refs/original rebase-merge rebase-apply sequencer worktrees \
  ORIG_HEAD FETCH_HEAD MERGE_HEAD CHERRY_PICK_HEAD REVERT_HEAD AUTO_MERGE BISECT_LOG \
  objects/info/commit-graph objects/info/commit-graphs objects/pack/multi-pack-index \
  objects/pack/*.keep objects/pack/*.mtimes
cd ..
# Borrowed objects: copy what base needs into this repository, then stop borrowing.
if [ -s .git/objects/info/alternates ]; then
  git repack -a -d -q
  rm -f .git/objects/info/alternates
fi
git -c repack.writeBitmaps=false repack -a -d -q
git prune --expire=now
git reflog expire --expire=now --all 2>/dev/null || true
"""

# The paper's §5.3 ablation (--no-purge): the reset alone; the image's later history stays in the repository.
RESET_ONLY_SCRIPT = PREPARE_SCRIPT[:PREPARE_SCRIPT.index("# Every ref but")]

# Prints base's ancestry, then every commit and tag object the store holds, then the refs' targets.
CHECK_SCRIPT = r"""
set -eu
cd /testbed
# nothing in the image's git configuration runs or changes the answer (the same guard as patch.py's)
export GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=/dev/null GIT_NO_REPLACE_OBJECTS=1 GIT_OPTIONAL_LOCKS=0
git() { command git -c core.hooksPath=/dev/null -c core.fsmonitor= -c safe.directory='*' "$@"; }
git rev-parse --verify "$1^{commit}"
echo "--- head"
git rev-parse HEAD
echo "--- ancestry"
git rev-list "$1"
echo "--- objects"
git cat-file --batch-all-objects --batch-check='%(objecttype) %(objectname)' | grep -E '^(commit|tag) ' || true
echo "--- refs"
git for-each-ref --format='%(objectname)'
echo "--- end"
"""


def check_purged(ws: BaseWorkspace, base_commit: str) -> None:
    """Raise InfraError unless base_commit's ancestors are the only commits in /testbed's object store."""
    # framed (engine/framing/framed.py): under load the engine's stream cut this answer (exit 0 and nothing; 250 bytes); the
    # check only reads, so a cut answer is read once more before the item is retried
    result = read_framed(ws, ["sh", "-c"], CHECK_SCRIPT, args=("sh", base_commit), what="the purge check of /testbed")
    if result.exit_code != 0:
        raise InfraError(f"cannot inspect /testbed at {base_commit}: {result.output.strip()[-500:]}")
    sections = _sections(result.output)
    if sections is None:  # a whole answer of the script, ended well, has every section
        raise InfraError(f"the purge check of /testbed printed an incomplete answer ({len(result.output)} bytes)")
    base = sections["base"][-1]
    allowed = set(sections["ancestry"])
    commits = {o.split()[1] for o in sections["objects"] if o.startswith("commit ")}
    tags = {o.split()[1] for o in sections["objects"] if o.startswith("tag ")}
    future = commits - allowed
    if future:
        raise InfraError(f"{len(future)} commit(s) not in the history of {base} remain in /testbed "
                         f"(e.g. {sorted(future)[0]}): the future-commit purge failed")
    stray_tags = tags - set(sections["refs"])
    if stray_tags:
        raise InfraError(f"{len(stray_tags)} unreferenced tag object(s) remain in /testbed: the purge failed")
    if sections["head"] != [base]:
        raise InfraError(f"/testbed HEAD is {sections['head']} instead of base commit {base}")


_ANSWER_LINE = re.compile(r"((commit|tag) )?[0-9a-f]{40}([0-9a-f]{24})?")  # an object name, or a type and one


def _sections(output: str) -> dict[str, list[str]] | None:
    """The check's answer by section; None when it is not all there (all of it or nothing). Only object names (and
    type and name) are read: a warning git printed (stderr is in the answer, in order) is not one."""
    sections: dict[str, list[str]] = {"base": []}
    current = "base"
    for line in output.splitlines():
        if line.startswith("--- "):
            current = line[4:]
            sections[current] = []
        elif _ANSWER_LINE.fullmatch(line.strip()):
            sections[current].append(line.strip())
    if not sections["base"] or any(s not in sections for s in ("head", "ancestry", "objects", "refs", "end")):
        return None
    return sections


def _prepared_tag(client: docker.DockerClient, image: str, base_commit: str, gitignore: bool,
                  purge: bool = True) -> str:
    source_id = client.images.get(image).id
    # the scripts are part of the key: a changed preparation never reuses an image made by the old one
    recipe = f"{PREP_VERSION}|{PREPARE_SCRIPT if purge else RESET_ONLY_SCRIPT}|{source_id}|{base_commit}|{gitignore}"
    key = hashlib.sha256(recipe.encode()).hexdigest()[:16]
    name = image.rsplit(":", 1)[0].split("/")[-1].lower()
    return f"{PREPARED_REPO}/{name}:{key}"


def prepare(ws: BaseWorkspace, base_commit: str, gitignore: bool, purge: bool = True) -> None:
    """Run the preparation in a started workspace, then prove it (purge=False: the ablation, reset only)."""
    result = ws.exec(["sh", "-c", PREPARE_SCRIPT if purge else RESET_ONLY_SCRIPT, "sh", base_commit])
    if result.exit_code != 0:
        raise InfraError(f"preparing /testbed at {base_commit} failed: {result.output.strip()[-800:]}")
    if gitignore:
        ws.write_file(GITIGNORE_PATH, GLOBAL_GITIGNORE)
        ws.exec(["git", "config", "--system", "core.excludesFile", GITIGNORE_PATH], check=True)
    if purge:
        check_purged(ws, base_commit)


def cached_prepared_image(client: docker.DockerClient, image: str, base_commit: str, gitignore: bool,
                          purge: bool = True) -> str | None:
    """The prepared image's tag when it is made already; None when it is not, or its instance image is missing."""
    try:
        tag = _prepared_tag(client, image, base_commit, gitignore, purge)
        client.images.get(tag)
    except docker.errors.ImageNotFound:
        return None
    return tag


def prepared_image(client: docker.DockerClient, image: str, base_commit: str, gitignore: bool,
                   labels: dict[str, str], progress=print, purge: bool = True) -> tuple[str, float]:
    """The derived image with /testbed prepared; built once per (image, base, settings).

    Returns the tag and the seconds spent preparing now (0 when it was cached).
    """
    tag = _prepared_tag(client, image, base_commit, gitignore, purge)
    try:
        client.images.get(tag)
        return tag, 0.0
    except docker.errors.ImageNotFound:
        pass
    start = time.monotonic()
    what = "reset, future-commit purge" if purge else "reset only: the --no-purge ablation"
    progress(f"preparing {image} once ({what}); later runs reuse {tag}")
    with Workspace(client, image, labels={**labels, LABEL_ROLE: "prepare"}, network="none") as ws:
        prepare(ws, base_commit, gitignore, purge)
        repo, _, version = tag.rpartition(":")
        try:
            ws.commit(repo, version, {LABEL_SOURCE: image, LABEL_PREPARED: PREP_VERSION})
        except docker.errors.DockerException as exc:
            raise InfraError(f"could not save the prepared image {tag}: {exc}") from exc
    return tag, time.monotonic() - start
