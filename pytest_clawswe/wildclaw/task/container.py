"""The agent's side of a WildClawBench task: its container, inputs, skills, warmup and the agent itself.

Order in the container: exec/ becomes /tmp_workspace (copied, not mounted), tmp/ becomes
/tmp_workspace/tmp, the harness creates its agent, skills go to the harness's skill folder, the warmup
lines run (on the run's internet network; on a locked run on Docker's open network, then the container is
moved to the run's locked network), and only then does the agent start. At the end every process in the container is killed, whatever the
finish reason, so nothing of the agent outlives it; ground truth never enters this container.
"""
from __future__ import annotations

import io
import json
import shlex
import tarfile
from pathlib import Path, PurePosixPath

from pytest_clawswe.engine.sandbox.docker_workspace import Workspace
from pytest_clawswe.errors import ItemError
from pytest_clawswe.harness.adapter import AgentContext, AgentRun, get_harness_class
from pytest_clawswe.run.item.agent import run_agent
from pytest_clawswe.wildclaw.task import image_helper as images
from pytest_clawswe.wildclaw.task.file import Task

WORKDIR = "/tmp_workspace"
WARMUP_TIMEOUT_S = 600


class TaskSetupError(ItemError):
    """The task cannot be set up as written (missing folder, failing warmup): an item error."""


def put_tree(ws: Workspace, src: Path, dest: str) -> None:
    """Copy the contents of host folder `src` to `dest` in the container (created if missing)."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for path in sorted(src.rglob("*")):
            tar.add(str(path), arcname=str(path.relative_to(src)), recursive=False)
    ws.exec(["mkdir", "-p", dest], check=True)
    ws.put_archive(dest, buf.getvalue())


def skill_dirs(harness_name: str) -> list[str]:
    """Where the harness reads skills (its adapter's skill_dirs)."""
    return list(get_harness_class(harness_name).skill_dirs)


def skill_targets(task: Task, suite: Path, harness_name: str) -> list[tuple[Path, str]]:
    """(source folder, container folder) per skill. As released, a Skills line is a path under skills/ and
    lands under its last part's name; a later skill with the same last part is skipped, and so is a skill
    the suite's skills/ does not hold (see missing_skills: the released runner warns and goes on)."""
    out, seen = [], set()
    for line in task.skills:
        rel = line.replace("\\", "/").strip("/")
        leaf = PurePosixPath(rel).name
        if not leaf or leaf in seen:
            continue
        seen.add(leaf)
        src = suite / "skills" / rel
        if src.is_dir():
            out += [(src, f"{folder}/{leaf}") for folder in skill_dirs(harness_name)]
    return out


def missing_skills(task: Task, suite: Path) -> list[str]:
    """One warning per skill the task names that is not in the suite's skills/ folder."""
    rels = [line.replace("\\", "/").strip("/") for line in task.skills]
    return [f"skill {rel!r} is not in {suite / 'skills'}; the task runs without it (as released)"
            for rel in rels if rel and not (suite / "skills" / rel).is_dir()]


def copy_skills(ws: Workspace, task: Task, suite: Path, harness_name: str) -> list[str]:
    targets = skill_targets(task, suite, harness_name)
    for src, dest in targets:
        put_tree(ws, src, dest)
    return [dest for _, dest in targets]


# our words for what the released runner's intro says (its prose is not copied: docs/fidelity.md)
SKILLS_INTRO = ("These notes describe files, mock services and workflows this container provides for the task; "
                "follow them where they apply.")


def inline_skills(task: Task, suite: Path, prompt: str, root: str, skills: bool = True,
                  image_helper: bool = False) -> str:
    """The prompt of a harness that reads skills from its prompt (Harness.inline_skills: Codex), as the released
    Codex runner builds it: the `## Image Helper` section when `image_helper`; when the task has skills, one `## Local Skill References` section holding a
    `### Skill: <line>` subsection per skill's SKILL.md (`{baseDir}` made the skill's folder in the container, under
    `root`), then always a `## Task` section holding the prompt; sections apart by a blank line, the whole
    stripped and ending in one newline. `skills` False (--no-skills): no skill section."""
    subsections = []
    for line in task.skills if skills else []:
        rel = line.replace("\\", "/").strip("/")
        doc = suite / "skills" / rel / "SKILL.md"
        if doc.is_file():
            text = doc.read_text(errors="replace").replace("{baseDir}", f"{root}/{PurePosixPath(rel).name}")
            subsections.append(f"### Skill: {line}\n\n{text.strip()}")
    sections = [images.SECTION] if image_helper else []
    if subsections:
        sections.append("\n\n".join(["## Local Skill References\n\n" + SKILLS_INTRO, *subsections]))
    sections.append("## Task\n\n" + prompt.strip())
    return "\n\n".join(sections).strip() + "\n"


def run_warmup(ws: Workspace, task: Task, lines: list[str] | None = None) -> None:
    """The task's warmup lines (or `lines`: those left after the services' lines moved to the sidecar)."""
    for n, line in enumerate(task.warmup if lines is None else lines, 1):
        if line.endswith("&"):  # released semantics: a trailing & runs the line in the background
            cmd = f"nohup setsid bash -c {shlex.quote(line[:-1].strip())} >/dev/null 2>&1 &"
            ws.exec(cmd, workdir=WORKDIR)
            continue
        done = ws.exec(line, workdir=WORKDIR, timeout=WARMUP_TIMEOUT_S)
        if done.exit_code != 0:
            why = "timed out" if done.timed_out else f"exited {done.exit_code}"
            raise TaskSetupError(f"{task.id}: warmup line {n} ({line[:80]!r}) {why}: "
                                 f"{done.output.strip()[-300:] or 'no output'}")


def lock_network(client, ws: Workspace, network: str | None) -> None:
    """Move a container that ran its warmup on the default bridge onto the run's locked network (a pod: its
    network label changes, and the lock is proven from inside it: engine/kube/pod_workspace.py)."""
    if not network or network == "bridge":
        return
    if hasattr(ws, "set_network"):
        ws.set_network(network)
        return
    ws.container.reload()
    attached = list(ws.container.attrs["NetworkSettings"]["Networks"])
    if network != "none":
        client.networks.get(network).connect(ws.container)
    for name in attached:
        if name != network:
            client.networks.get(name).disconnect(ws.container, force=True)


def keep_snapshot(ws: Workspace, work: Path, warnings: list[str]) -> None:
    """/tmp_workspace, copied out into work/snapshot/ (empty when the agent deleted it). No link is followed: a
    symlink (into gt/ it would hand the grader ground truth) and a device are left out, a hard link to a file of the
    snapshot is a copy of it; each is noted with its target in snapshot/links.json, which the grader also gets."""
    report = ws.copy_out(WORKDIR, work / "snapshot")
    if report is None:
        (work / "snapshot" / "tmp_workspace").mkdir(parents=True)
        return
    links = report.links()
    if any(links.values()):
        (work / "snapshot" / "links.json").write_text(json.dumps(links, indent=1) + "\n")
    left = len(report.symlinks) + len(report.special)
    if left:
        warnings.append(f"{left} symlink(s) or special file(s) in /tmp_workspace were left out of the snapshot "
                        "(never followed); snapshot/links.json names each with its target")


def keep_world(ws: Workspace, work: Path, warnings: list[str]) -> None:
    """What the agent changed in its container outside /tmp_workspace, for the grader (engine/sandbox/world.py)."""
    from pytest_clawswe.engine.sandbox import world

    manifest = world.capture(ws, work / "world", skip=[WORKDIR])
    budget = [e for e in manifest["left_out"] if e["reason"] == "budget"]
    if budget:
        warnings.append(f"{len(budget)} file(s) the agent changed outside /tmp_workspace were past the "
                        f"{manifest['budget_bytes'] // 2**20} MiB budget and not kept (world/world.json)")


def agent_phase(harness, ctx: AgentContext, prompt: str, disk_limit: int | None, after_create=None) -> AgentRun:
    """One attempt (WildClawBench tasks change the world; a retry would start from a dirty one)."""
    return run_agent(harness, ctx, prompt, disk_limit, after_create=after_create)
