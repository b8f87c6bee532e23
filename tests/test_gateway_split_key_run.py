"""Issue 32 §3 end to end: a provider that echoes the key split over stream events, through the run's gateway, to
the real Claude Code harness in its Docker container. The provider (tests/provider_stub.py) answers the scripted
model's fix with one change: the shell command first writes the key in each form the redactor knows (plain,
upper-cased, base64, \\u-escaped) into /testbed/LEAK.txt, and the text quotes them, every form split over two
events, or one character per event. Whatever the harness got is then in the patch: LEAK.txt must hold only
[redacted], and no file of the run (patch.diff, predictions.jsonl, the evaluation's log, the gateway's record, the
trajectory) may hold the key in any form.
"""
from __future__ import annotations

import base64
import json
import re
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from provider_stub import ProviderStub  # noqa: E402

pytestmark = [pytest.mark.docker, pytest.mark.harness]

IID = "clawswe__tinyjson-py-12"
MODEL = "openrouter/test/model"
KEY = "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"


def leaks(data: bytes) -> list[str]:
    """The forms of the key in `data`: as it is, in any case, \\u-escaped, or base64 (alone or inside a word)."""
    text = data.decode("utf-8", "replace")
    found = []
    decoded = re.sub(r"\\u([0-9a-fA-F]{4})", lambda m: chr(int(m.group(1), 16)), text)
    if KEY.lower() in decoded.lower():
        found.append("plain")
    for word in re.findall(r"[A-Za-z0-9+/=]{40,}", text):
        for shift in range(4):
            try:
                if KEY.encode() in base64.b64decode(word[shift:] + "===")[:4096]:
                    found.append("base64")
                    break
            except ValueError:
                pass
    return found


@pytest.fixture(scope="module")
def row(demo_instances, docker_client):
    from pytest_clawswe.harness.bundles import build_bundle
    from pytest_clawswe.swe.dataset import load_row

    build_bundle("claude-code", client=docker_client, progress=lambda line: None)
    return load_row(next(i for i in demo_instances if i.instance_id == IID))


@pytest.mark.parametrize("how", ["two", "chars"])
def test_a_key_split_over_events_reaches_no_file_of_the_run(pytester, row, monkeypatch, tmp_path, how):
    with ProviderStub([row]) as stub:
        stub.leak = (KEY, how)
        monkeypatch.setenv("OPENROUTER_BASE_URL", stub.url + "/v1")
        monkeypatch.setenv("OPENROUTER_API_KEY", KEY)
        run_dir = tmp_path / "run"
        done = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--run-dir", str(run_dir), "--harness",
                                             "claude-code", "--model", MODEL, "--dataset", "demo", "--instance-ids",
                                             IID, "-n", "0", "--no-model-check", timeout=1500)
    out = done.stdout.str() + done.stderr.str()
    folder = run_dir / "instances" / IID
    patch = (folder / "patch.diff").read_text()
    assert "LEAK.txt" in patch, out[-3000:]  # the harness ran the command the provider sent
    section = patch.split(" b/LEAK.txt\n", 1)[1].split("diff --git", 1)[0]
    written = [line[1:] for line in section.splitlines() if line.startswith("+") and not line.startswith("+++")]
    assert written == ["[redacted]"] * 4, patch[:2000]  # what the harness got, one line per form
    assert done.parseoutcomes().get("passed") == 1, out[-3000:]  # and then the fix, graded as usual
    files = [p for p in run_dir.rglob("*") if p.is_file()]
    assert any(p.name.endswith(".atif.json") for p in files) and any(p.parent.name == "calls" for p in files)
    found = {str(p.relative_to(run_dir)): leaks(p.read_bytes()) for p in files}
    assert not {k: v for k, v in found.items() if v}
    assert "[redacted]" in json.loads((run_dir / "predictions.jsonl").read_text().splitlines()[0])["model_patch"]
