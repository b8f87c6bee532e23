"""What an agent changed in its sandbox, kept on the host and put into another sandbox at the same paths.

A grader that runs after the agent (in a sandbox of its own) may check the agent's state anywhere: a folder it
should not have created in its home, a file it changed in /opt. Once every agent process is dead, the engine's
list of changes (added, changed, deleted paths) is read, what is the agent's world is copied out under a size budget
into `<dest>/files/<path>` with `<dest>/world.json` saying what was kept, deleted and left out (and why), and it is
put into the grader's sandbox later, from that folder alone.

Left out, each noted with its reason:
- "system": /usr, /etc, /lib*, /bin, /sbin, /boot, /var/lib, /var/cache, /var/log, /run, ...: the grader's
  interpreter and everything it loads (its binary, standard library and packages, every shared library, the dynamic
  loader's and NSS's configuration, OpenSSL's) are the image's, so nothing the agent planted there can run in it;
- "mount": what is mounted into the sandbox (a harness bundle, the task's read-only original): not the agent's;
- "ours": our own tooling paths (/clawswe, /tmp/clawswe-*, /opt/clawswe*): the harness's state is kept apart, in the
  item's session/ folder;
- "cache": package managers' download caches in a home (.cache, .npm): large, and nothing a grader checks;
- "skipped": what the caller copies another way (WildClawBench's /tmp_workspace: its snapshot);
- "budget": past the size budget (CLAWSWE_WORLD_MAX_MB, default 256 MiB);
- symlinks are kept as links (never followed here; the grader's side drops one that resolves into ground truth),
  devices and fifos are left out.
Deleted paths are noted; those outside what is left out are deleted in the grader's sandbox too.
"""
from __future__ import annotations

import fnmatch
import json
import os
import tarfile
import tempfile
from pathlib import Path, PurePosixPath

from pytest_clawswe.engine.workspace import BaseWorkspace
from pytest_clawswe.errors import InfraError

WORLD_FILE = "world.json"
FILES_DIR = "files"
SYSTEM = ("/usr", "/etc", "/lib", "/lib32", "/lib64", "/libx32", "/bin", "/sbin", "/boot", "/var/lib", "/var/cache",
          "/var/log", "/var/run", "/var/lock", "/var/backups", "/run", "/proc", "/sys", "/dev")
OURS = ("/clawswe", "/tmp/clawswe-*", "/opt/clawswe", "/opt/clawswe-*")
CACHES = ("/root/.cache", "/root/.npm", "/home/*/.cache", "/home/*/.npm")
MAX_LISTED = 2000  # left-out entries named in world.json; the rest are counted
DELETE_BATCH = 200


def max_bytes() -> int:
    value = os.environ.get("CLAWSWE_WORLD_MAX_MB", "").strip()
    try:
        budget = int(float(value) * 2**20) if value else 256 * 2**20
        if budget < 0:
            raise ValueError
        return budget
    except ValueError:
        raise ValueError(f"CLAWSWE_WORLD_MAX_MB must be a number of MiB (the budget of what an agent changed outside "
                         f"its workspace that is kept for the grader), not {value!r}.") from None


def _under(path: str, patterns) -> bool:
    parts = PurePosixPath(path).parts
    for pattern in patterns:
        want = PurePosixPath(pattern).parts
        if len(parts) >= len(want) and all(fnmatch.fnmatchcase(p, w) for p, w in zip(parts, want)):
            return True
    return False


def left_out_reason(path: str, mounts=(), skip=()) -> str:
    """Why `path` is not part of the agent's world ("" when it is)."""
    for reason, patterns in (("skipped", skip), ("mount", mounts), ("ours", OURS), ("system", SYSTEM),
                             ("cache", CACHES)):
        if _under(path, patterns):
            return reason
    return ""


def capture(ws: BaseWorkspace, dest: Path, *, skip=(), budget: int | None = None) -> dict:
    """Copy what the agent changed in `ws` (every agent process already dead) into dest; write and return the
    manifest (world.json)."""
    budget = max_bytes() if budget is None else budget
    changes = ws.changes()
    mounts = ws.mounts()
    files = dest / FILES_DIR
    files.mkdir(parents=True, exist_ok=True)
    kinds = dict(changes)
    manifest: dict = {"budget_bytes": budget, "bytes": 0, "copied": [], "deleted": [], "symlinks": [],
                      "hardlinks": [], "special": [], "left_out": [], "left_out_more": 0}
    covered: set[str] = set()  # paths inside something copied whole
    for path, kind in sorted(changes):
        reason = left_out_reason(path, mounts, skip)
        parent = str(PurePosixPath(path).parent)
        if reason:
            inside_new = left_out_reason(parent, mounts, skip) == reason and kinds.get(parent) == "added"
            if not inside_new and not (kind == "changed" and _has_changed_children(path, kinds)):
                _note(manifest, {"path": path, "kind": kind, "reason": reason})  # not each entry of a new folder
            continue
        if kind == "deleted":
            manifest["deleted"].append(path)
            continue
        if parent in covered or path in covered:
            covered.add(path)
            continue
        if kind == "changed" and _has_changed_children(path, kinds):
            continue  # a folder whose content changed: its changed entries come one by one
        left = budget - manifest["bytes"]
        report = ws.copy_out(path, files / parent.lstrip("/"), max_bytes=max(left, 0))
        if report is None:
            continue  # gone meanwhile (a path under one the agent deleted again)
        covered.add(path)
        base = parent.rstrip("/")
        manifest["copied"].append({"path": path, "kind": kind})
        manifest["bytes"] += report.bytes
        for name in report.left_out:
            _note(manifest, {"path": f"{base}/{name}", "kind": "added", "reason": "budget"})
        for link in report.symlinks:
            manifest["symlinks"].append({"path": f"{base}/{link['path']}", "target": link["target"]})
        for link in report.hardlinks:
            manifest["hardlinks"].append({**link, "path": f"{base}/{link['path']}", "target": f"{base}/{link['target']}"})
        for item in report.special:
            manifest["special"].append({**item, "path": f"{base}/{item['path']}"})
    (files / "COPY_TRUNCATED.txt").unlink(missing_ok=True)  # the budget's left-outs are in the manifest
    for stray in files.rglob("COPY_TRUNCATED.txt"):
        stray.unlink()
    (dest / WORLD_FILE).write_text(json.dumps(manifest, indent=1) + "\n")
    return manifest


def _has_changed_children(path: str, kinds: dict) -> bool:
    prefix = path.rstrip("/") + "/"
    return any(p.startswith(prefix) for p in kinds)


def _note(manifest: dict, entry: dict) -> None:
    if len(manifest["left_out"]) < MAX_LISTED:
        manifest["left_out"].append(entry)
    else:
        manifest["left_out_more"] += 1


def load(world_dir: Path) -> dict | None:
    path = world_dir / WORLD_FILE
    return json.loads(path.read_text()) if path.is_file() else None


def restore(ws: BaseWorkspace, world_dir: Path, *, skip=()) -> dict | None:
    """Put a captured world into `ws` at the same paths: its deletions first, then its files, folders and symlinks
    (as root). Nothing under what capture leaves out is put, whatever world.json says. Returns the manifest."""
    manifest = load(world_dir)
    if manifest is None:
        return None
    mounts = ws.mounts()
    doomed = [p for p in manifest.get("deleted", []) if not left_out_reason(p, mounts, skip) and p != "/"]
    for i in range(0, len(doomed), DELETE_BATCH):  # (a path that cannot go, a busy mount point, stays: no error)
        ws.exec(["rm", "-rf", "--", *doomed[i:i + DELETE_BATCH]])
    files = world_dir / FILES_DIR
    links = [link for link in manifest.get("symlinks", []) if not left_out_reason(link["path"], mounts, skip)]
    with tempfile.TemporaryFile() as buf:
        count = _pack(buf, files, links, mounts, skip)
        if count:
            buf.seek(0)
            ws.put_archive("/", buf)
    return manifest


def _pack(buf, files: Path, links: list[dict], mounts, skip) -> int:
    """A tar of the world's files and folders (as they are under files/, regular ones only) and its symlinks, owned
    by root, parents before children; nothing under a left-out path or under one of the symlinks."""
    link_paths = {link["path"] for link in links}
    count = 0

    def allowed(path: str) -> bool:
        ancestors = [str(p) for p in PurePosixPath(path).parents]
        return not left_out_reason(path, mounts, skip) and not link_paths.intersection(ancestors)

    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tar:
        if files.is_dir():
            for root, dirs, names in os.walk(files):  # top-down: parents first
                dirs.sort()
                for name in sorted(dirs) + sorted(names):
                    host = Path(root) / name
                    rel = host.relative_to(files).as_posix()
                    path = "/" + rel
                    if host.is_symlink() or not (host.is_dir() or host.is_file()) or not allowed(path):
                        continue
                    info = tar.gettarinfo(str(host), arcname=rel)
                    info.uid = info.gid = 0
                    info.uname = info.gname = "root"
                    if info.isfile():
                        with open(host, "rb") as fh:
                            tar.addfile(info, fh)
                    else:
                        tar.addfile(info)
                    count += 1
        for link in sorted(links, key=lambda item: item["path"]):
            if not allowed(link["path"]):
                continue
            info = tarfile.TarInfo(link["path"].lstrip("/"))
            info.type, info.linkname, info.mode = tarfile.SYMTYPE, link["target"], 0o777
            tar.addfile(info)
            count += 1
    return count


_DROP_LINKS = """
import os, sys
forbidden = [os.path.realpath(p) for p in sys.argv[1].split(":")]
for path in sys.argv[2:]:
    if not os.path.islink(path):
        continue
    real = os.path.realpath(path)
    if any(real == f or real.startswith(f.rstrip("/") + "/") for f in forbidden):
        os.unlink(path)
        print(path)
"""


def drop_links_into(ws: BaseWorkspace, manifest: dict | None, forbidden: list[str]) -> list[str]:
    """Remove each restored symlink that resolves (through every link, in `ws` as it now is) into one of
    `forbidden` (ground truth, our tooling); returns their paths. Run with the image's isolated Python."""
    paths = [link["path"] for link in (manifest or {}).get("symlinks", [])]
    dropped: list[str] = []
    for i in range(0, len(paths), DELETE_BATCH):
        done = ws.exec(["python3", "-I", "-S", "-c", _DROP_LINKS, ":".join(forbidden), *paths[i:i + DELETE_BATCH]])
        if done.exit_code != 0:
            raise InfraError(f"could not check the agent's symlinks in the grader's container: {done.output[-300:]}")
        dropped += [line for line in done.stdout.splitlines() if line]
    return dropped
