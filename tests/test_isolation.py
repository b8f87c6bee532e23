"""What an agent can reach and read from inside its container during a real run (issue: egress lock)."""
import json

import pytest

pytestmark = pytest.mark.docker
SECRET = "sk-or-REAL-KEY-MUST-NOT-LEAK"


def probe(pytester, rootpath, instance, tmp_path, *extra):
    run_dir = tmp_path / "probe"
    pytester.runpytest_subprocess(
        f"--harness={rootpath}/tests/fake_harnesses.py:ProbeHarness", "--model", "scripted/noop",
        "--dataset", "demo", "--instance-ids", instance.instance_id, "--run-dir", str(run_dir),
        "-p", "no:cacheprovider", *extra, timeout=600)
    text = (run_dir / "instances" / instance.instance_id / "probe.txt").read_text()
    return dict(line.split("=", 1) for line in text.splitlines() if "=" in line), run_dir


def test_a_locked_agent_reaches_the_gateway_and_nothing_else(pytester, python_demo, tmp_path, monkeypatch):
    monkeypatch.setenv("OPENROUTER_API_KEY", SECRET)
    seen, run_dir = probe(pytester, pytester._request.config.rootpath, python_demo, tmp_path)
    assert seen["gateway"] == "reached"
    assert {seen[k] for k in ("mirror", "pypi", "github", "ip", "dns")} == {"blocked"}
    assert seen["env_has_key"] == "0"
    assert seen["gold_seen"] == "0" and seen["test_name_seen"] == "0", seen
    commits, ancestors = seen["commits"].split(" ancestors=")
    assert commits == ancestors  # no future history
    leaked = [p for p in run_dir.rglob("*") if p.is_file() and SECRET in p.read_text(errors="replace")]
    assert leaked == []


def test_network_open_is_an_explicit_choice(pytester, python_demo, tmp_path):
    seen, run_dir = probe(pytester, pytester._request.config.rootpath, python_demo, tmp_path, "--network", "open")
    assert seen["gateway"] == "reached" and seen["mirror"] == "reached"
    assert json.loads((run_dir / "run.json").read_text())["harness"] == "probe"
