"""The patch contract: the patch is read from repository state, never parsed from the agent's answer.

Collected as the paper does it (`git add -A`, binary files unstaged, `git diff --cached BASE`), then cleaned:
whole file sections are dropped for lockfiles and build manifests, non-ASCII paths, binary content and
content that is not UTF-8 (a SWE-bench prediction is a JSON string).
Both the raw and the cleaned patch are kept.
"""
from __future__ import annotations

import re
import secrets
import shlex
from dataclasses import dataclass

from pytest_clawswe.engine.framing.framed import read_framed
from pytest_clawswe.engine.workspace import BaseWorkspace
from pytest_clawswe.errors import InfraError

# Files whose changes are environment churn, not a fix (the released list, SETUP_FILES_TO_REMOVE).
DROPPED_FILES = frozenset({
    "pyproject.toml", "tox.ini", "setup.py", "package-lock.json", "yarn.lock", "pnpm-lock.yaml",
    "Cargo.lock", "poetry.lock", "Gemfile.lock", "composer.lock", "Pipfile.lock", "go.sum",
})
MAX_FILE_MB = 50  # no source change is this big; larger new or changed files are left out of the patch
MAX_DIFF_BYTES = 64 * 2**20  # the whole diff as read back to the host: past it, no patch
NO_REPOSITORY = 42  # exit code of the collection script when /testbed/.git is gone
# the script prints the big files' paths, this line with a nonce of the call (no file name can end the list), the diff
BIG_FILES_END = "--- clawswe: end of big files"
_SECTION = re.compile(r"^diff --git ", re.MULTILINE)
_HEADER = re.compile(r'^diff --git (?:"?a/(.*?)"?) (?:"?b/(.*?)"?)$')


@dataclass
class CollectedPatch:
    raw: str
    clean: str
    dropped: list[str]  # "path: reason" for each section cleaning removed
    timed_out: bool = False  # reading it did not end within its time limit (then it is empty)

    @property
    def changed_lines(self) -> int:
        return count_changed_lines(self.clean)

    @property
    def is_empty(self) -> bool:
        return self.changed_lines == 0


def count_changed_lines(patch: str) -> int:
    return sum(1 for line in patch.splitlines()
               if line[:1] in "+-" and not line.startswith(("+++ ", "--- ")))


def split_sections(patch: str) -> list[str]:
    starts = [m.start() for m in _SECTION.finditer(patch)]
    return [patch[a:b] for a, b in zip(starts, starts[1:] + [len(patch)])]


def section_path(section: str) -> str:
    first = section.split("\n", 1)[0]
    m = _HEADER.match(first)
    return (m.group(2) or m.group(1)) if m else first[len("diff --git "):]


def is_dropped_file(header: str) -> bool:
    """The released rule, kept as is: `a/<name>` or `b/<name>` anywhere in the `diff --git` line. So top-level
    files match and nested ones do not (`src/pkg/setup.py` is kept), except under a folder whose name ends in
    a or b (`lib/setup.py`, `data/go.sum`); names that start with a listed one match too (`setup.pyi`,
    `go.sum.orig`). Written down in docs/fidelity.md; a patch graded here is cut exactly as the paper's was."""
    return any(f"a/{name}" in header or f"b/{name}" in header for name in DROPPED_FILES)


def drop_reason(section: str) -> str | None:
    first = section.split("\n", 1)[0]
    if is_dropped_file(first):
        return "lockfile or build manifest"
    # git quotes paths with bytes outside ASCII ("\303\251"); either form means a non-ASCII name
    if '"' in first or not first.isascii():
        return "non-ASCII path"
    if re.search(r"^(Binary files .* differ|GIT binary patch)$", section, re.MULTILINE):
        return "binary content"
    if "\ufffd" in section:  # bytes that are not UTF-8 (decoded as U+FFFD): no JSON prediction can carry them
        return "non-UTF-8 content"
    return None


def clean_patch(raw: str) -> tuple[str, list[str]]:
    kept, dropped = [], []
    for section in split_sections(raw):
        reason = drop_reason(section)
        if reason:
            dropped.append(f"{section_path(section)}: {reason}")
        else:
            kept.append(section if section.endswith("\n") else section + "\n")
    return "".join(kept), dropped


# How the host runs git in a container after the agent (its patch, its artifacts' clean-up): in a git directory of
# its own, made now, that borrows /testbed's objects; so nothing the agent could plant runs or changes what is
# read (the repository's .git/config, hooks, info/attributes; ~/.gitconfig; /etc/gitconfig; core.fsmonitor,
# filter/textconv/diff drivers). The working tree's own .gitignore and .gitattributes still count (as in the
# released collection), but no driver they name is defined. Listed in docs/fidelity.md.
SAFE_GIT = r"""
[ -n "$BASE" ] || BASE=$(cat "$WORKDIR/.git/HEAD")  # only a test calls without one
case "$BASE" in "ref: "*) BASE=$(cat "$WORKDIR/.git/${BASE#ref: }") ;; esac
G=$(mktemp -d /tmp/.clawswe-git.XXXXXXXX)
trap 'rm -rf "$G"' EXIT
mkdir -p "$G/objects/info" "$G/refs" "$G/info"
printf '%s\n' "$WORKDIR/.git/objects" > "$G/objects/info/alternates"
printf '%s\n' "$BASE" > "$G/HEAD"
printf '[core]\n\trepositoryformatversion = 0\n\tbare = false\n' > "$G/config"
# the repository's own excludes: they only ever leave the agent's new files out of its patch
x="$WORKDIR/.git/info/exclude"
if [ -f "$x" ] && [ ! -L "$x" ]; then head -c 1048576 "$x" > "$G/info/exclude"; fi
for v in $(env | sed -n 's/^\(GIT_[A-Za-z0-9_]*\)=.*/\1/p'); do unset "$v"; done
export GIT_DIR="$G" GIT_WORK_TREE="$WORKDIR" GIT_INDEX_FILE="$G/index" HOME="$G" XDG_CONFIG_HOME="$G" \
  GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=/dev/null GIT_ATTR_NOSYSTEM=1 GIT_NO_REPLACE_OBJECTS=1 \
  GIT_TERMINAL_PROMPT=0 GIT_OPTIONAL_LOCKS=0 GIT_PAGER=cat
git() {
  command git -c core.hooksPath=/dev/null -c core.fsmonitor= -c core.untrackedCache=false \
    -c core.attributesFile=/dev/null -c core.excludesFile="$EXCLUDES" -c safe.directory='*' -c core.quotePath=true \
    "$@"
}
cd "$WORKDIR"
"""
COLLECT_TIMEOUT_S = 300.0  # a patch is read in well under a minute; past this the agent left something odd


def _safe_git_script(body: str) -> str:
    """`body` run under SAFE_GIT; its stderr is printed (its tail) only when it fails."""
    return (f"[ -d \"$WORKDIR/.git/objects\" ] || exit {NO_REPOSITORY}\n{SAFE_GIT}\n"
            f"( set -e\n{body}\n) 2>\"$G/err\"\ncode=$?\n"  # not `|| ...`: set -e is ignored on the left of ||
            f"if [ $code -ne 0 ]; then tail -c 2000 \"$G/err\"; exit $code; fi\n")


def _safe_git_env(workdir: str, base_commit: str, gitignore: bool | None) -> dict[str, str]:
    from pytest_clawswe.swe.instance.prepare import GITIGNORE_PATH

    return {"WORKDIR": workdir, "BASE": base_commit, "EXCLUDES": GITIGNORE_PATH if gitignore else "/dev/null"}


def scrub_artifacts(ws: BaseWorkspace, paths: tuple[str, ...], workdir: str = "/testbed", base_commit: str = "",
                    timeout_s: float = COLLECT_TIMEOUT_S) -> None:
    """Remove harness-written files that the base commit does not track (the adapter saved them already)."""
    if not paths:
        return
    body = "\n".join(f"[ -n \"$(git ls-tree --name-only \"$BASE\" -- {shlex.quote(p)})\" ] || "
                     f"rm -rf -- {shlex.quote(p)}" for p in paths)
    ws.exec(["bash", "-c", _safe_git_script(body)], env=_safe_git_env(workdir, base_commit, None), timeout=timeout_s)


def collect_patch(ws: BaseWorkspace, base_commit: str, workdir: str = "/testbed", gitignore: bool | None = None,
                  timeout_s: float = COLLECT_TIMEOUT_S) -> CollectedPatch:
    """`gitignore`: the run set the paper's global gitignore for this instance (None: whether the file is there)."""
    if gitignore is None:
        from pytest_clawswe.swe.instance.prepare import GITIGNORE_PATH

        gitignore = ws.exec(["test", "-f", GITIGNORE_PATH]).exit_code == 0
    # A fresh index: the agent's own staging (or a broken index) does not matter.
    listed_end = f"{BIG_FILES_END} {secrets.token_hex(8)}"
    body = f"""
git read-tree {base_commit}
# files too big to be a source change (an agent's dump, a disk filler) are left out before git reads them
printf '.\\n' > "$G/spec"
find . -path ./.git -prune -o -type f -size +{MAX_FILE_MB}M -print | sed 's|^\\./||' | while IFS= read -r f; do
  printf ':(exclude,literal)%s\\n' "$f" >> "$G/spec"
  git check-ignore -q -- "$f" || printf '%s\\n' "$f"
done
echo '{listed_end}'
git add -A --pathspec-from-file="$G/spec"
git diff --cached --numstat {base_commit} | awk -F'\\t' '$1=="-" && $2=="-" {{print $3}}' > "$G/binary"
if [ -s "$G/binary" ]; then git reset -q {base_commit} --pathspec-from-file="$G/binary"; fi
git diff --no-color --no-ext-diff --no-textconv --cached {base_commit}
"""
    # framed (engine/framing/framed.py): the script reads the tree into an index of its own (the agent's tree and repository
    # are not changed), so an answer the engine's stream cut is read once more; a cut diff would be graded as
    # another patch, or as none
    result = read_framed(ws, ["bash", "-c"], _safe_git_script(body), what=f"reading the patch from {workdir}",
                         env=_safe_git_env(workdir, base_commit, gitignore), max_output=MAX_DIFF_BYTES,
                         timeout=timeout_s)
    if result.timed_out:  # graded as what could be read safely: nothing
        return CollectedPatch("", "", [f"{workdir}: reading the patch did not end within its time limit of "
                                       f"{timeout_s:.0f} s; graded as an empty patch"], timed_out=True)
    if result.exit_code == NO_REPOSITORY:  # the agent deleted the repository: an empty patch, not an error
        return CollectedPatch("", "", [f"{workdir}: the repository is gone after the agent ran"])
    if result.exit_code != 0:
        raise InfraError(f"collecting the patch from {workdir} failed: {result.output.strip()[-500:]}")
    if result.truncated:  # only the diff's tail was kept, and a diff cut anywhere is no patch
        return CollectedPatch("", "", [f"{workdir}: the diff is larger than {MAX_DIFF_BYTES >> 20} MiB, not read"])
    listed, found, raw = result.stdout.partition(listed_end + "\n")
    if not found:  # a whole answer of a script that ended well always has it
        raise InfraError(f"reading the patch from {workdir} printed no end of its big files' list")
    clean, dropped = clean_patch(raw)
    big = [f"{path}: larger than {MAX_FILE_MB} MiB, not read" for path in listed.splitlines() if path]
    return CollectedPatch(raw, clean, big + dropped)


# A retry's return to the base commit works in /testbed's own repository (the next attempt sees its history), so
# what the agent planted there that git would run at a reset goes first; then no hook, fsmonitor or other config.
RESET_SCRIPT = r"""
set -e
cd "$WORKDIR"
rm -f .git/info/attributes
git config --file .git/config --name-only --get-regexp '^(filter|diff|merge|include|includeif)\.' 2>/dev/null \
  | sed 's/\.[^.]*$//' | sort -u | while IFS= read -r s; do git config --file .git/config --remove-section "$s"; done
git config --file .git/config --unset-all core.fsmonitor 2>/dev/null || true
git config --file .git/config --unset-all core.hooksPath 2>/dev/null || true
for v in $(env | sed -n 's/^\(GIT_[A-Za-z0-9_]*\)=.*/\1/p'); do unset "$v"; done
export GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=/dev/null GIT_ATTR_NOSYSTEM=1 HOME=/nonexistent
safe="-c core.hooksPath=/dev/null -c core.fsmonitor= -c core.attributesFile=/dev/null -c safe.directory=*"
git $safe reset -q --hard "$BASE"
git $safe clean -fdq
"""


def reset_tree(ws: BaseWorkspace, base_commit: str, workdir: str = "/testbed",
               timeout_s: float = COLLECT_TIMEOUT_S) -> None:
    result = ws.exec(["bash", "-c", RESET_SCRIPT], env={"WORKDIR": workdir, "BASE": base_commit}, timeout=timeout_s)
    if result.exit_code != 0:
        why = "did not end in time" if result.timed_out else result.output.strip()[-500:]
        raise InfraError(f"resetting {workdir} to {base_commit} for a retry failed: {why}")
