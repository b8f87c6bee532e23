"""Codex's image helper, as the released Codex runner sets it up: the rule that turns it on, its prompt section,
and the helper script run as a real process against a real local HTTP server."""
from __future__ import annotations

import base64
import json
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from pytest_clawswe.harness.adapter import Harness
from pytest_clawswe.harness.adapters.codex import CodexHarness
from pytest_clawswe.wildclaw.task import image_helper
from pytest_clawswe.wildclaw.task.container import inline_skills
from pytest_clawswe.wildclaw.task.file import parse_task

from tests.test_wildclaw import task_text, write

PNG = b"\x89PNG\r\n\x1a\nnot really a picture"


# --- when: the released rule -----------------------------------------------------------------------------------

@pytest.mark.parametrize("prompt", ["Read chart.PNG", "crop a.jpeg", "x.webp", "y.tiff", "Look at the Image",
                                    "a PHOTO of", "the picture", "a screenshot", "draw a diagram", "z.gif", "b.bmp"])
def test_a_prompt_with_an_image_marker_turns_the_helper_on(prompt, tmp_path):
    assert image_helper.wanted(prompt, tmp_path / "exec")


def test_an_image_file_in_exec_turns_the_helper_on_else_it_stays_off(tmp_path):
    exec_dir = tmp_path / "exec"
    (exec_dir / "data" / "deep").mkdir(parents=True)
    (exec_dir / "data" / "notes.txt").write_text("numbers")
    task = parse_task(write(tmp_path, task_text()))
    assert not image_helper.wanted(task.full_prompt(), exec_dir)  # the released prefix names no marker
    assert not image_helper.wanted("Sum the numbers.", tmp_path / "missing")
    (exec_dir / "data" / "deep" / "scan.JPG").write_bytes(PNG)
    assert image_helper.wanted("Sum the numbers.", exec_dir)


def test_codex_alone_has_the_helper():
    assert CodexHarness.image_helper and not Harness.image_helper


# --- the prompt: the section first, then the skills, then the task ---------------------------------------------

def test_the_image_helper_section_comes_before_the_skills_and_the_task(tmp_path):
    (tmp_path / "skills" / "pdf").mkdir(parents=True)
    (tmp_path / "skills" / "pdf" / "SKILL.md").write_text("Use pdftotext.\n")
    task = parse_task(write(tmp_path, task_text() + "## Skills\n\n```\npdf\n```\n"))
    prompt = inline_skills(task, tmp_path, "Look at the photo.", CodexHarness.skill_dirs[0], image_helper=True)
    heads = [line for line in prompt.splitlines() if line.startswith("## ")]
    assert heads == ["## Image Helper", "## Local Skill References", "## Task"]
    section = prompt.split("\n\n## Local Skill References")[0]
    assert section == image_helper.SECTION and prompt.endswith("\n\n## Task\n\nLook at the photo.\n")
    assert '```bash\npython3 /tmp_workspace/.wildclaw_image.py "<image_path>" "<question>"\n```' in section
    for said in ("`view_image`", "exits 0", "at most twice", "ok=false", "OPENROUTER_API_KEY", "OPENROUTER_BASE_URL",
                 "/chat/completions", "finish"):
        assert said in section
    alone = inline_skills(parse_task(write(tmp_path, task_text(), "01_P/t2.md")), tmp_path, "x", "/r",
                          image_helper=True)
    assert alone == image_helper.SECTION + "\n\n## Task\n\nx\n"


def test_the_installed_script_defaults_to_the_tasks_model_without_its_openrouter_prefix():
    text = image_helper.script("openrouter/google/gemini-2.5-flash")
    assert 'DEFAULT_MODEL = "google/gemini-2.5-flash"\n' in text
    assert 'DEFAULT_MODEL = "scripted/gold"\n' in image_helper.script("scripted/gold")


# --- the script, a real process against a real HTTP server -----------------------------------------------------

class Vision:
    """A chat-completions endpoint that records each request and answers with `status`."""

    def __init__(self):
        self.requests: list[dict] = []
        self.status = 200
        vision = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                vision.requests.append({"path": self.path, "headers": dict(self.headers), "body": body})
                answer = ({"choices": [{"message": {"role": "assistant", "content": "a red square"}}]}
                          if vision.status == 200 else {"error": {"message": "upstream broke"}})
                data = json.dumps(answer).encode()
                self.send_response(vision.status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/api/v1/"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()


@pytest.fixture
def vision():
    v = Vision()
    yield v
    v.server.shutdown()
    v.server.server_close()


@pytest.fixture
def workspace(tmp_path):
    ws = tmp_path / "tmp_workspace"
    (ws / "inputs" / "charts").mkdir(parents=True)
    (ws / "inputs" / "charts" / "chart.png").write_bytes(PNG)
    (ws / image_helper.NAME).write_text(image_helper.script("openrouter/vendor/task-model"))
    return ws


def helper(ws: Path, vision: Vision | None, *args: str, **env: str) -> dict:
    base = {"PATH": "/usr/bin:/bin"}
    if vision is not None:
        base |= {"OPENROUTER_API_KEY": "sk-tools-token", "OPENROUTER_BASE_URL": vision.url}
    done = subprocess.run([sys.executable, str(ws / image_helper.NAME), *args], cwd=ws, capture_output=True,
                          text=True, env={**base, **env}, timeout=120)
    assert done.returncode == 0, done.stderr  # whatever happens
    lines = done.stdout.splitlines()
    assert len(lines) == 1, done.stdout  # one JSON object
    return json.loads(lines[0])


def test_the_helper_asks_the_model_with_a_chat_completions_call(workspace, vision):
    out = helper(workspace, vision, "inputs/charts/chart.png", "What", "colour?")
    assert out == {"ok": True, "content": "a red square", "model": "vendor/task-model",
                   "image_path": "inputs/charts/chart.png", "warning": None}
    [req] = vision.requests
    assert req["path"] == "/api/v1/chat/completions"
    assert req["headers"]["Authorization"] == "Bearer sk-tools-token"
    assert req["headers"]["Content-Type"] == "application/json"
    data_url = "data:image/png;base64," + base64.b64encode(PNG).decode()
    assert req["body"] == {"model": "vendor/task-model", "max_tokens": 800, "temperature": 0, "messages": [
        {"role": "user", "content": [{"type": "text", "text": "What colour?"},
                                     {"type": "image_url", "image_url": {"url": data_url}}]}]}


def test_a_missing_path_is_looked_up_by_its_file_name_under_the_workspace(workspace, vision):
    out = helper(workspace, vision, "/somewhere/else/chart.png")
    assert out["ok"] and out["image_path"] == str(workspace / "inputs" / "charts" / "chart.png")
    assert "/somewhere/else/chart.png" in out["warning"]
    assert vision.requests[0]["body"]["messages"][0]["content"][0]["text"]  # a default question
    gone = helper(workspace, vision, "nowhere.png")
    assert gone["ok"] is False and "nowhere.png" in gone["error"] and len(vision.requests) == 1


def test_the_helper_answers_twice_per_task_and_then_refuses(workspace, vision):
    assert helper(workspace, vision, "inputs/charts/chart.png")["ok"]
    assert helper(workspace, vision, "inputs/charts/chart.png")["ok"]
    third = helper(workspace, vision, "inputs/charts/chart.png")
    assert third["ok"] is False and (third["call_count"], third["call_limit"]) == (3, 2) and "limit" in third["error"]
    assert len(vision.requests) == 2
    assert json.loads((workspace / ".wildclaw_image_calls.json").read_text()) == {"count": 3}
    assert helper(workspace, vision, "inputs/charts/chart.png", WILDCLAW_IMAGE_HELPER_CALL_LIMIT="4")["ok"]


def test_an_error_answer_is_ok_false_with_its_status_and_body(workspace, vision):
    vision.status = 500
    out = helper(workspace, vision, "inputs/charts/chart.png")
    assert out["ok"] is False and out["error"].startswith("HTTP 500") and "upstream broke" in out["body"]


def test_the_image_model_can_be_named_and_its_openrouter_prefix_is_dropped(workspace, vision):
    out = helper(workspace, vision, "inputs/charts/chart.png", OPENROUTER_IMAGE_MODEL="openrouter/v/eyes")
    assert out["model"] == "v/eyes"
    out = helper(workspace, vision, "inputs/charts/chart.png", OPENROUTER_IMAGE_MODEL="v/eyes",
                 WILDCLAW_IMAGE_MODEL="w/first")
    assert out["model"] == "w/first" and [r["body"]["model"] for r in vision.requests] == ["v/eyes", "w/first"]


def test_no_key_no_server_no_arguments_are_each_ok_false_and_exit_0(workspace, vision):
    assert "OPENROUTER_API_KEY" in helper(workspace, None, "inputs/charts/chart.png")["error"]
    vision.server.shutdown()
    vision.server.server_close()
    down = helper(workspace, vision, "inputs/charts/chart.png")
    assert down["ok"] is False and down["error"]
    assert helper(workspace, vision)["error"].startswith("usage:")


def test_codex_gets_the_gateway_and_the_tools_token_whatever_the_tasks_env_says(tmp_path):
    """As released (Codex's container always has both): here they are the gateway and the task's tools token."""
    from types import SimpleNamespace

    from pytest_clawswe.harness.gateway_urls import openai_base_url
    from pytest_clawswe.wildclaw.task_runner import TaskRunner

    runner = SimpleNamespace(gateway=SimpleNamespace(url="http://gateway.test:8123"))
    task = parse_task(write(tmp_path, task_text() + "## Env\n\n```\nLANG=C\n```\n"))
    env = TaskRunner._task_env(runner, task, "tools-token", image_helper.ENV)
    assert env == {"OPENROUTER_API_KEY": "tools-token", "LANG": "C",
                   "OPENROUTER_BASE_URL": openai_base_url("http://gateway.test:8123")}
    assert TaskRunner._task_env(runner, task, "tools-token") == {"LANG": "C"}  # another harness: the task's Env
