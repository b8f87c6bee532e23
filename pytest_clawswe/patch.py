"""The patch contract: the patch is read from repository state, never parsed from the agent's answer.

Collected as the paper does it (`git add -A`, binary files unstaged, `git diff --cached BASE`), then cleaned:
whole file sections are dropped for lockfiles and build manifests, non-ASCII paths, binary content and
content that is not UTF-8 (a SWE-bench prediction is a JSON string).
Both the raw and the cleaned patch are kept.
"""
from __future__ import annotations

import re
import shlex
from dataclasses import dataclass

from .errors import InfraError
from .workspace_api import BaseWorkspace

# Files whose changes are environment churn, not a fix (the released list, SETUP_FILES_TO_REMOVE).
DROPPED_FILES = frozenset({
    "pyproject.toml", "tox.ini", "setup.py", "package-lock.json", "yarn.lock", "pnpm-lock.yaml",
    "Cargo.lock", "poetry.lock", "Gemfile.lock", "composer.lock", "Pipfile.lock", "go.sum",
})
MAX_FILE_MB = 50  # no source change is this big; larger new or changed files are left out of the patch
MAX_DIFF_BYTES = 64 * 2**20  # the whole diff as read back to the host: past it, no patch
NO_REPOSITORY = 42  # exit code of the collection script when /testbed/.git is gone
BIG_FILES_END = "--- clawswe: end of big files"  # the script prints the big files' paths, this line, the diff
_SECTION = re.compile(r"^diff --git ", re.MULTILINE)
_HEADER = re.compile(r'^diff --git (?:"?a/(.*?)"?) (?:"?b/(.*?)"?)$')


@dataclass
class CollectedPatch:
    raw: str
    clean: str
    dropped: list[str]  # "path: reason" for each section cleaning removed

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


def scrub_artifacts(ws: BaseWorkspace, paths: tuple[str, ...], workdir: str = "/testbed") -> None:
    """Remove harness-written files that git does not track (the adapter saved them already)."""
    for path in paths:
        quoted = shlex.quote(path)
        ws.exec(f"cd {workdir} && if [ -z \"$(git ls-files -- {quoted})\" ]; then rm -rf -- {quoted}; fi")


def collect_patch(ws: BaseWorkspace, base_commit: str, workdir: str = "/testbed") -> CollectedPatch:
    # A fresh index in a temp file: the agent's own staging (or a broken index) does not matter.
    script = f"""
set -e
[ -d {workdir}/.git ] || exit {NO_REPOSITORY}
cd {workdir}
export GIT_INDEX_FILE=/tmp/.clawswe-index
rm -f "$GIT_INDEX_FILE"
git read-tree {base_commit}
# files too big to be a source change (an agent's dump, a disk filler) are left out before git reads them
printf '.\n' > /tmp/.clawswe-spec
find . -path ./.git -prune -o -type f -size +{MAX_FILE_MB}M -print | sed 's|^\\./||' | while IFS= read -r f; do
  printf ':(exclude,literal)%s\n' "$f" >> /tmp/.clawswe-spec
  git check-ignore -q -- "$f" || printf '%s\n' "$f"
done
echo '{BIG_FILES_END}'
git add -A --pathspec-from-file=/tmp/.clawswe-spec
git diff --cached --numstat {base_commit} | awk -F'\\t' '$1=="-" && $2=="-" {{print $3}}' > /tmp/.clawswe-binary
if [ -s /tmp/.clawswe-binary ]; then git reset -q {base_commit} --pathspec-from-file=/tmp/.clawswe-binary; fi
git -c core.quotePath=true diff --no-color --no-ext-diff --cached {base_commit}
rm -f "$GIT_INDEX_FILE" /tmp/.clawswe-binary /tmp/.clawswe-spec
"""
    result = ws.exec(["bash", "-c", script], max_output=MAX_DIFF_BYTES)
    if result.exit_code == NO_REPOSITORY:  # the agent deleted the repository: an empty patch, not an error
        return CollectedPatch("", "", [f"{workdir}: the repository is gone after the agent ran"])
    if result.exit_code != 0:
        raise InfraError(f"collecting the patch from {workdir} failed: {result.output.strip()[-500:]}")
    if result.truncated:  # only the diff's tail was kept, and a diff cut anywhere is no patch
        return CollectedPatch("", "", [f"{workdir}: the diff is larger than {MAX_DIFF_BYTES >> 20} MiB, not read"])
    listed, _, raw = result.stdout.partition(BIG_FILES_END + "\n")
    clean, dropped = clean_patch(raw)
    big = [f"{path}: larger than {MAX_FILE_MB} MiB, not read" for path in listed.splitlines() if path]
    return CollectedPatch(raw, clean, big + dropped)
