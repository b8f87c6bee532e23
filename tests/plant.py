"""Plant a repository with a past and a future in /testbed of a container (test helper)."""

# Creates base history c1..c3 (tag v1 on c2), then a future: commits on the branch, a feature branch,
# tags (light and annotated), a stash, a dangling commit, a remote-tracking ref, notes. Prints base sha.
PLANT_SCRIPT = r"""
set -e
export GIT_AUTHOR_NAME=t GIT_AUTHOR_EMAIL=t@t GIT_COMMITTER_NAME=t GIT_COMMITTER_EMAIL=t@t
rm -rf /testbed && mkdir -p /testbed && cd /testbed
git init -q -b main .
for i in 1 2 3; do
  echo "v$i" > app.txt; git add app.txt
  GIT_AUTHOR_DATE="2020-01-0$i T00:00:00" GIT_COMMITTER_DATE="2020-01-0$i T00:00:00" git commit -qm "c$i"
  [ $i = 2 ] && git tag v1
done
base=$(git rev-parse HEAD)
echo fixed > app.txt; git commit -qam "future fix"
git tag v2
git checkout -qb feature
echo feature > f.txt; git add f.txt; git commit -qm "feature"
git tag -a v3 -m "annotated future tag"
git checkout -q main
echo wip > app.txt; git stash -q
tree=$(git write-tree)
git commit-tree -p "$base" -m "dangling" "$tree" >/dev/null
git update-ref refs/remotes/origin/main HEAD
git notes add -m "a note" HEAD 2>/dev/null || true
git gc -q 2>/dev/null || true
echo "$base"
"""
