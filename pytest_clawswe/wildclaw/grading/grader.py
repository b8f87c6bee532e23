"""Grading outside the agent's container, from what the task's folder kept.

Everything grading needs is in the task's run folder (what `grade_folder` reads, so a task can be graded again
later, without an agent): `grading.json` (the task, where its workspace is: gt/ and the original exec/),
`grader/automated_checks.py` (the task's Automated Checks), `snapshot/tmp_workspace/` (+ `snapshot/links.json`),
`world/` (what the agent changed elsewhere in its container: engine/sandbox/world.py), `transcript.jsonl` (built from the
gateway's record, not from anything the agent wrote) and `audit/` (the mock services' log).

A fresh container from the grader image gets, in this order: the task's exec/ read-only at /app (as the released
runner mounts it), the agent's world at its paths (never the system, our paths or caches), the snapshot at
/tmp_workspace, the task's gt/ at /tmp_workspace/gt, the transcript at the path graders read, our files under
/clawswe (written last: nothing the agent left can be there), the audit replay; then main.py (copied in as /clawswe/grade_main.py) runs grade() in
the image's Python, isolated, and hands the result over on its own output, framed (see main.py). When it
returns, the judge's token is revoked and every process of the container is stopped before the result is read.
"""
from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path

from pytest_clawswe.engine.sandbox import world
from pytest_clawswe.engine.sandbox.docker_workspace import Workspace
from pytest_clawswe.errors import InfraError, ItemError, VerifyTimeout
from pytest_clawswe.wildclaw.grading import main
from pytest_clawswe.wildclaw.task.container import WORKDIR, put_tree
from pytest_clawswe.wildclaw.grading.transcript import SESSION_PATH

GRADE_MAIN = Path(main.__file__)
INNER = "/clawswe"
APP = "/app"
GRADING_FILE = "grading.json"
GRADER_CODE = "grader/automated_checks.py"
LINKS_FILE = "snapshot/links.json"
GT = f"{WORKDIR}/gt"


class GradeError(ItemError):
    """grade() could not give a score (crash, time limit, judge failure): an item error, never a 0."""


class GradeTimeout(GradeError, VerifyTimeout):
    """grade() ran past --grade-timeout and was stopped: the verify stage's own error (run/item/phases.py), still a
    GradeError to what grades (a regrade too)."""


def judge_failure(records: list[dict], key_env: str = "") -> str:
    """Why the judge failed and what to do, in one sentence, or "": a judge request that failed and was not
    followed by a success (the grader's client retries; a failure it recovered from is not the agent's problem
    either). `key_env` names the judge provider's key, for the advice."""
    last = None
    for r in records:
        last = r if r.get("status", 0) >= 400 or r.get("error") else None
    if last is None:
        return ""
    said = last.get("reason") or f"status {last.get('status')}: {last.get('error') or 'error'}"
    return f"the judge failed after its retries ({said}); {_judge_advice(last.get('failure'), key_env)}"


def _judge_advice(kind: str | None, key_env: str) -> str:
    """What to do about a judge failure of that kind (gateway/upstream/failures.py); the task is graded again by
    --resume (its agent too) or `clawswe regrade` (its grading alone)."""
    again = "then --resume, or grade it again with clawswe regrade"
    key = key_env or "the judge provider's key"
    return {"auth": f"check {key}, {again}", "billing": f"top up the credit behind {key}, {again}",
            "permission": f"check that {key} may use the --judge-model, {again}",
            "model": f"check the --judge-model name, {again}"}.get(kind or "", f"wait, {again}")


def keep_grading_inputs(folder: Path, task, workspace: Path) -> None:
    """What grade_folder needs besides the agent's traces: the task's checks, and where its workspace is."""
    (folder / GRADER_CODE).parent.mkdir(parents=True, exist_ok=True)
    (folder / GRADER_CODE).write_text(task.grader_code)
    # "gt": whether the workspace had a gt/: grading the task again needs it there again (wildclaw/regrade.py)
    (folder / GRADING_FILE).write_text(json.dumps({"task_id": task.id, "workspace": str(workspace.resolve()),
                                                   "gt": (workspace / "gt").is_dir()}, indent=1) + "\n")


@dataclass
class Grading:
    """How to grade: the grader image, the run's settings, the judge's token and gateway."""

    client: object
    image: str
    labels: dict
    network: str | None
    mem_limit: str | None
    pids_limit: int | None
    timeout_s: float
    judge_model: str
    token: str = ""
    gateway_url: str = ""
    revoke: Callable[[], None] | None = None  # the judge's token, at once when grade() has returned
    workspace_factory: Callable | None = None  # how the grader's sandbox is made (a cluster's pod: --kubernetes)


def grade_folder(folder: Path, how: Grading) -> tuple[dict, list[str]]:
    """grade()'s dict for the task whose run folder is `folder`, and notes for result.json's warnings;
    GradeError when there is none."""
    from pytest_clawswe.harness.gateway_urls import openai_base_url

    inputs = json.loads((folder / GRADING_FILE).read_text())
    task_id, workspace = inputs["task_id"], Path(inputs["workspace"])
    if not (workspace / "exec").is_dir():
        raise GradeError(f"{task_id}: its workspace {workspace} has no exec/ any more; grading needs the suite's "
                         "exec/ (mounted at /app) and gt/ where the run found them")
    env = {"OPENROUTER_API_KEY": how.token,
           "OPENROUTER_BASE_URL": openai_base_url(how.gateway_url) if how.gateway_url else "",
           "JUDGE_MODEL": how.judge_model,
           "PATH": main.CLEAN_PATH, "HOME": "/root", main.GRADER_ENV: "1"}
    network = how.network if how.gateway_url else "none"
    notes: list[str] = []
    make = how.workspace_factory or partial(Workspace, how.client)
    with make(how.image, labels=how.labels, mem_limit=how.mem_limit, pids_limit=how.pids_limit,
              network=network, environment=env, read_only={str(workspace / "exec"): APP}) as ws:
        _put_inputs(ws, folder, workspace, notes)
        cmd = ["python3", "-I", "-S", f"{INNER}/grade_main.py", f"{INNER}/automated_checks.py", SESSION_PATH]
        try:
            done = ws.exec(cmd, workdir=WORKDIR, timeout=how.timeout_s)
        finally:
            if how.revoke is not None:
                how.revoke()  # grade() has returned (or was cut off): its token now answers nothing
            try:
                ws.kill_all()  # nothing grade() started lives on (main.py stopped them already; this makes sure)
            except InfraError:
                pass  # the container is removed next, with everything in it
    # read once the container is gone: no process of it is left to touch anything
    out = read_frame(done.output)
    log = out.get("log", "") if out else done.output
    (folder / "grade.log").write_text(log + (out or {}).get("traceback", ""))
    if done.timed_out:
        raise GradeTimeout(f"{task_id}: grade() did not finish within {how.timeout_s:g} s and was stopped (raise it "
                           "with --grade-timeout)")
    if out is None:
        raise GradeError(f"{task_id}: the grader exited {done.exit_code} without a result (killed, or out of "
                         f"memory): {done.output.strip()[-300:] or 'no output'}")
    if not out.get("ok"):
        raise GradeError(f"{task_id}: grade() failed: {out.get('error')}")
    return out["result"], notes


def _put_inputs(ws, folder: Path, workspace: Path, notes: list[str]) -> None:
    """Everything grade() reads into the grader's sandbox: the agent's world and tree, the task's gt/, the
    transcript, the grader's code, the snapshot's and world's notes, the services' audit (served again)."""
    manifest = world.restore(ws, folder / "world", skip=[WORKDIR])
    put_tree(ws, folder / "snapshot" / "tmp_workspace", WORKDIR)
    ws.exec(["rm", "-rf", GT])  # an agent's gt/ is not the task's
    if (workspace / "gt").is_dir():
        put_tree(ws, workspace / "gt", GT)
    dropped = world.drop_links_into(ws, manifest, [GT, INNER])
    if dropped:
        notes.append(f"{len(dropped)} symlink(s) the agent left outside /tmp_workspace resolved into gt/ or our "
                     f"files and were not given to the grader: {', '.join(dropped[:5])}")
    ws.write_file(SESSION_PATH, (folder / "transcript.jsonl").read_bytes())
    ws.write_file(f"{INNER}/automated_checks.py", (folder / GRADER_CODE).read_bytes())
    ws.write_file(f"{INNER}/grade_main.py", GRADE_MAIN.read_bytes())
    for name, path in (("snapshot-links.json", folder / LINKS_FILE), ("world.json", folder / "world" / world.WORLD_FILE)):
        if path.is_file():  # what the snapshot and the world left out, for a grader that wants to know
            ws.write_file(f"{INNER}/{name}", path.read_bytes())
    if (folder / "audit").is_dir():  # GET localhost:91xx/<svc>/audit, served from the log
        from pytest_clawswe.wildclaw.services.sidecar import start_replay

        start_replay(ws, folder / "audit")


def read_frame(output: str) -> dict | None:
    """main.py's one frame, or None when there is none at all; InfraError when only its end came (the stream lost
    its beginning: the engine's fault, not the grader's) or its length does not match."""
    data = output.encode("utf-8", "surrogateescape")
    start = data.find(main.START)  # the parent's first bytes; one inside its JSON cannot be followed by a newline
    if start < 0:
        if main.END in data:
            raise InfraError("the grader's answer came back without its beginning (the engine's stream was cut); "
                             "an infrastructure error, not a verdict")
        return None
    head, sep, rest = data[start + len(main.START):].partition(b">>>\n")
    try:
        length = int(head)
    except ValueError:
        length = -1
    body = rest[:length] if length >= 0 else b""
    if not sep or length < 0 or len(body) != length or not rest[length:].startswith(b"\n" + main.END):
        raise InfraError("the grader's answer came back cut (its length or end marker does not match); an "
                         "infrastructure error, not a verdict")
    return json.loads(body)
