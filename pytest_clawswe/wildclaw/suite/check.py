"""`clawswe wildclaw check PATH`: can every task of a suite be set up here? No agent, no model, no grading.

Per task, the setup a run does before the agent starts: the task file parses, the images exist (built on
first use), the workspace has exec/, the task's mock services start and answer (sidecar), exec/ and tmp/ are
copied in, the Warmup lines run (on the open network, as in a run), and the skills are copied to the
harness's skill folder. A skill the suite does not hold is a warning, as released. The answer is a table,
one row per task (ready, or the one-sentence reason it is not), ending with `ready: N of M`.
"""
from __future__ import annotations

import re
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from pytest_clawswe.errors import InfraError
from pytest_clawswe.labels import LABEL_INSTANCE, LABEL_ROLE, LABEL_RUN
from pytest_clawswe.wildclaw.task import container
from pytest_clawswe.wildclaw.services import plan as services
from pytest_clawswe.wildclaw.task.file import TaskFileError, parse_task, suite_root, task_files


@dataclass
class Row:
    task: str
    category: str
    ready: bool
    reason: str = ""  # why not, one sentence
    warnings: list[str] = field(default_factory=list)
    seconds: float = 0.0


def _sentence(exc: BaseException, task_id: str) -> str:
    text = re.sub(r"\s+", " ", str(exc)).strip()
    text = text.removeprefix(f"{task_id}: ")
    return text if len(text) <= 240 else text[:237] + "..."


def check_task(client, path: Path, root: Path, images: tuple[str, str], harness: str, run_label: str,
               memory: str | None = "8g") -> Row:
    begin = time.monotonic()
    try:
        task = parse_task(path)
    except TaskFileError as exc:
        return Row(path.stem, "", False, _sentence(exc, ""))
    row = Row(task.id, task.category, False)
    suite = suite_root(root)
    ws_dir = suite / task.workspace_path
    try:
        if not (ws_dir / "exec").is_dir():
            raise container.TaskSetupError(f"its workspace {ws_dir} has no exec/ folder; download the suite's workspace/ "
                                       "(or make stand-ins: clawswe wildclaw standin PATH)")
        row.warnings = container.missing_skills(task, suite)
        plan = services.plan(task, ws_dir)
        labels = {LABEL_RUN: run_label, LABEL_INSTANCE: task.id, LABEL_ROLE: "check"}
        from pytest_clawswe.engine.sandbox.docker_workspace import Workspace

        network = "bridge" if plan.warmup else "none"
        with Workspace(client, images[0], labels=labels, mem_limit=memory, network=network) as ws, \
                tempfile.TemporaryDirectory(prefix="clawswe-check-") as audit:
            car = services.start(client, ws, plan, Path(audit), labels, lambda line: None)
            try:
                container.put_tree(ws, ws_dir / "exec", container.WORKDIR)
                if (ws_dir / "tmp").is_dir():
                    container.put_tree(ws, ws_dir / "tmp", f"{container.WORKDIR}/tmp")
                container.run_warmup(ws, task, plan.warmup)
                container.copy_skills(ws, task, suite, harness)
                if car is not None:  # the warmup must not have broken what the agent will call
                    from pytest_clawswe.wildclaw.services.sidecar import _wait_healthy

                    _wait_healthy(car.container, car.ports, 10.0)
            finally:
                if car is not None:
                    services.stop(car)
        row.ready = True
    except (container.TaskSetupError, InfraError, OSError) as exc:
        row.reason = _sentence(exc, task.id)
    except Exception as exc:  # noqa: BLE001 - Docker's own errors: the row says what it was
        row.reason = _sentence(exc, task.id) or type(exc).__name__
    row.seconds = round(time.monotonic() - begin, 1)
    return row


def check_suite(client, root: Path, *, jobs: int = 2, harness: str = "openclaw", task_image: str | None = None,
                progress=print) -> list[Row]:
    from pytest_clawswe.errors import UserError
    from pytest_clawswe.wildclaw.task.images import ensure_images

    files = task_files(root)
    if not files:
        raise UserError(f"{root}: no task files (expected tasks/<category>/*.md or *.md files)")
    images = ensure_images(client, progress)
    if task_image:
        from pytest_clawswe.engine.images.build import _image_exists

        if not _image_exists(client, task_image):
            raise UserError(f"--task-image {task_image}: no such image on this Docker engine; load it first "
                            "(docker load -i FILE) or leave --task-image out")
        images = (task_image, images[1])
    run_label = f"wildclaw-check-{time.strftime('%Y%m%d-%H%M%S')}"
    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        futures = [pool.submit(check_task, client, p, root, images, harness, run_label) for p in files]
        rows = []
        for future in futures:
            row = future.result()
            progress(f"{row.task}: {'ready' if row.ready else 'NOT READY'} ({row.seconds:.0f} s)")
            rows.append(row)
    return rows


def table(rows: list[Row]) -> str:
    width = max([len(r.task) for r in rows] + [4])
    cat = max([len(r.category) for r in rows] + [8])
    lines = [f"{'task':<{width}}  {'category':<{cat}}  setup", f"{'-' * width}  {'-' * cat}  -----"]
    for r in rows:
        state = "ready" if r.ready else f"not ready: {r.reason}"
        if r.ready and r.warnings:
            state += " (warning: " + "; ".join(r.warnings) + ")"
        lines.append(f"{r.task:<{width}}  {r.category:<{cat}}  {state}")
    lines.append(f"ready: {sum(r.ready for r in rows)} of {len(rows)}")
    return "\n".join(lines)
