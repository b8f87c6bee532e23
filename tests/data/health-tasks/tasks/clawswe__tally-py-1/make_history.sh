#!/bin/sh
# Rebuild a demo project's git history from the patch series in its task folder.
#   history/*.patch  commits up to and including base_commit (main stops there)
#   future/*.patch   commits after base_commit: the upstream fix and what followed it
# The future commits land on a branch, a tag and refs/remotes/origin/main, as in a real
# SWE-bench image built from a full clone, so the workspace's future-commit purge has
# real work to do. Committer and dates come from the patches, so base_commit is fixed.
# Every task folder carries an identical copy (the folder is the Docker build context).
# Usage: make_history.sh SRC_DIR REPO_DIR BRANCH TAG
set -eu
src=$1 repo=$2 branch=$3 tag=$4
export GIT_COMMITTER_NAME="Claw-SWE demo" GIT_COMMITTER_EMAIL="demo@clawswe.invalid"
git init -q "$repo"
cd "$repo"
git symbolic-ref HEAD refs/heads/main
git am -q --committer-date-is-author-date "$src"/history/*.patch
git checkout -q -b "$branch"
git am -q --committer-date-is-author-date "$src"/future/*.patch
git tag "$tag"
git update-ref refs/remotes/origin/main HEAD
git checkout -q main
