"""Codex's image helper in a real run: real Docker, the real Codex bundle, the gateway with the scripted model
acting out a behaviour that calls the helper (by a wrong path, to be looked up) through Codex's own shell tool,
and the scripted vision answering it on the task's tools token. One demo task whose prompt names a screenshot."""
from __future__ import annotations

import json
import os

import pytest

from pytest_clawswe.wildclaw.options import DEMO_DIR
from pytest_clawswe.wildclaw.task import image_helper
from pytest_clawswe.wildclaw.task.file import parse_task, task_files

from tests.test_wildclaw_run import REAL_KEY, bundle, results, run_wild
from run_containers import left_containers

pytestmark = [pytest.mark.docker, pytest.mark.harness]

TASK = "04_Search_Retrieval_clawswe_demo_ferry_page"  # "save a screenshot": the helper is on, the Env is empty
QUESTION = "Which vessel leaves last on Saturday?"
SEEN = "The last Saturday row reads 21:50 Lornsay, Old Marten."


def test_codex_gets_the_image_helper_and_its_calls_reach_the_vision_model(pytester, monkeypatch, tmp_path,
                                                                           docker_client):
    task = next(t for t in map(parse_task, task_files(DEMO_DIR)) if t.id == TASK)
    assert not task.env  # OPENROUTER_* come from the harness, as released, not from the task
    solve = (DEMO_DIR / task.workspace_path / "solution" / "solve.sh").read_text()
    fixtures = tmp_path / "fixtures" / TASK
    fixtures.mkdir(parents=True)
    (fixtures / "solve.sh").write_text(solve + f'python3 /tmp_workspace/.wildclaw_image.py /elsewhere/timetable.png '
                                               f'"{QUESTION}" > /tmp_workspace/results/look.json\n')
    (fixtures / "vision.json").write_text(json.dumps({QUESTION: {"answer": SEEN, "needs_image": True}}))
    bundle(docker_client, "codex")
    run_dir = tmp_path / "run"
    done = run_wild(pytester, monkeypatch, "codex", "scripted/gold", run_dir, "-k", "ferry_page",
                    "--scripted-fixtures", str(tmp_path / "fixtures"))
    assert done.ret == 0, done.stdout.str()[-3000:]
    r = results(run_dir)[TASK]
    assert r["overall_score"] == 1.0, r
    folder = run_dir / "tasks" / TASK
    # the prompt: the section first, then the task; and it is what Codex sent (the gateway's record)
    prompt = (folder / "prompt.txt").read_text()
    assert prompt.startswith(image_helper.SECTION + "\n\n## Task\n\n")
    transcript = (folder / "transcript.jsonl").read_text()
    assert json.dumps(image_helper.SECTION)[1:-1] in transcript
    # the helper was in the container, executable, and answered from the vision model through the gateway
    kept = folder / "snapshot" / "tmp_workspace"
    assert 'DEFAULT_MODEL = "scripted/gold"\n' in (kept / image_helper.NAME).read_text()
    assert os.access(kept / image_helper.NAME, os.X_OK)
    look = json.loads((kept / "results" / "look.json").read_text())
    assert look["ok"] is True and look["content"] == SEEN, look
    assert look["image_path"] == "/tmp_workspace/results/timetable.png" and "/elsewhere" in look["warning"]
    assert json.loads((kept / ".wildclaw_image_calls.json").read_text()) == {"count": 1}
    assert r["tool_usage"]["requests"] == 1  # counted on the task's tools token, apart from the agent's
    assert not left_containers(docker_client, run_dir)
    assert not [p for p in run_dir.rglob("*") if p.is_file() and REAL_KEY.encode() in p.read_bytes()]
