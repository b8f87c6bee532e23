"""The WildClawBench task image holds what the released suite's Warmup lines and graders expect, and its
browsers work offline. Real Docker: the image is built on first use (cached by content hash after)."""
from __future__ import annotations

import time

import pytest

from pytest_clawswe.labels import LABEL_RUN
from pytest_clawswe.wildclaw.task.images import ensure_images, task_image_tag

pytestmark = pytest.mark.docker

# Warmup lines of the released suite whose packages the image preinstalls: offline (no network at all here)
# they must succeed, and quickly, because nothing needs to be fetched.
OFFLINE_WARMUP = [
    "pip install openai playwright",
    "python3 -m playwright install chromium",
    "pip install -q fastapi uvicorn",
    "pip install weasyprint pymupdf requests",
    "pip install requests Pillow",
    "pip install PyYAML>=6.0",
    "pip install -q json_repair",
    "~/miniconda3/envs/eval/bin/pip --version",
    "~/miniconda3/envs/eval/bin/python -c 'import numpy, PIL'",
    "npm install -g agent-browser",  # from npm's cache (prefer-offline): the version the image was tested with
    "npm --version && node --version && npx --version",
    "agent-browser --version",
    "ffmpeg -version >/dev/null && ffprobe -version >/dev/null",
]

PAGE = ("<p id=out>static</p><script>setTimeout(() => "
        "{document.getElementById('out').textContent = 'rendered ' + (6 * 7)}, 200)</script>")

PLAYWRIGHT = """
from playwright.sync_api import sync_playwright
with sync_playwright() as p:
    b = p.chromium.launch()
    page = b.new_page()
    page.goto("file:///tmp/page.html")
    page.wait_for_function("document.getElementById('out').textContent.startsWith('rendered')")
    print(page.inner_text("#out"))
    page.screenshot(path="/tmp/shot.png")
    b.close()
"""


@pytest.fixture(scope="module")
def task_image(docker_client):
    return ensure_images(docker_client, progress=lambda line: None)[0]


def run(docker_client, image: str, script: str) -> tuple[int, str]:
    c = docker_client.containers.run(image, ["bash", "-c", script], detach=True, network_mode="none",
                                     labels={LABEL_RUN: "t-wildclaw-image"}, init=True)
    try:
        code = c.wait(timeout=300)["StatusCode"]
        return code, c.logs().decode(errors="replace")
    finally:
        c.remove(force=True)


def test_the_task_image_tag_follows_its_build_inputs():
    tag = task_image_tag()
    assert tag.startswith("clawswe-wildclaw-task:") and tag == task_image_tag()


@pytest.mark.parametrize("line", OFFLINE_WARMUP)
def test_a_released_warmup_line_succeeds_offline_when_its_packages_are_there(docker_client, task_image, line):
    start = time.monotonic()
    code, out = run(docker_client, task_image, line)
    assert code == 0, out[-2000:]
    assert time.monotonic() - start < 60, out[-500:]


def test_playwright_and_agent_browser_drive_headless_chromium_offline(docker_client, task_image):
    script = (f"cat > /tmp/page.html <<'EOF'\n{PAGE}\nEOF\n"
              f"python3 - <<'EOF'\n{PLAYWRIGHT}\nEOF\n"
              "python3 -c \"from PIL import Image; print('png', Image.open('/tmp/shot.png').size)\"\n"
              "agent-browser open file:///tmp/page.html && agent-browser wait 1000 "
              "&& agent-browser get text '#out' && agent-browser close\n")
    code, out = run(docker_client, task_image, script)
    assert code == 0, out[-3000:]
    assert out.count("rendered 42") == 2, out[-3000:]  # once per tool: only a browser running the script shows it
    assert "png (" in out


def test_a_task_image_that_is_not_loaded_is_one_sentence_before_anything_is_written(pytester, tmp_path):
    run_dir = tmp_path / "run"
    done = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--benchmark", "wildclaw", "--dataset", "demo",
                                         "--harness", "claude-code", "--model", "scripted/gold",
                                         "--task-image", "clawswe-test/not-loaded:v0", "--run-dir", str(run_dir))
    assert done.ret == pytest.ExitCode.USAGE_ERROR
    done.stderr.fnmatch_lines(["*--task-image clawswe-test/not-loaded:v0: no such image on this Docker engine; "
                               "load it first*"])
    assert not run_dir.exists()


@pytest.mark.harness
def test_a_loaded_image_runs_the_agents_with_our_bundles(pytester, monkeypatch, tmp_path, docker_client, task_image):
    """--task-image: a stand-in for a released image (ours under another name) runs a demo task to 1.0."""
    from tests.test_wildclaw_run import bundle, results, run_wild

    bundle(docker_client, "claude-code")
    docker_client.images.get(task_image).tag("clawswe-test/released-standin", "v0")
    run_dir = tmp_path / "standin"
    try:
        done = run_wild(pytester, monkeypatch, "claude-code", "scripted/gold", run_dir, "-k", "rolling_window",
                        "--task-image", "clawswe-test/released-standin:v0")
    finally:
        docker_client.images.remove("clawswe-test/released-standin:v0")  # the tag only: the image is ours
    assert done.ret == 0, done.stdout.str()[-3000:]
    (r,) = results(run_dir).values()
    assert r["overall_score"] == 1.0
    import json

    assert json.loads((run_dir / "run.json").read_text())["task_image"] == "clawswe-test/released-standin:v0"
