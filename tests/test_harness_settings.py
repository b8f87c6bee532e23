"""Issue 13 §1-2, §5: every row of the settings table (pytest_clawswe/harnesses/settings.yaml) read back from
what each adapter really writes and runs inside a real instance container.

The adapters run their real create_agent / send_task / delete_agent in a demo instance container; the harness
executables are stub scripts in a stand-in bundle folder that record their argv (NUL-separated, so the prompt
comes back byte for byte), environment and working directory. This checks what the adapter produces, which is
what the table is about, for all five harnesses, zeroclaw included (no zeroclaw binary exists here); that the
real harnesses accept these settings is what the gold/noop runs of test_harness_node/python show.
"""
from __future__ import annotations

import ast
import json
import math
import tomllib
from pathlib import Path

import pytest
import yaml

from pytest_clawswe.engine.sandbox.docker_workspace import Workspace
from pytest_clawswe.labels import LABEL_RUN
from pytest_clawswe.harness.adapter import AgentContext, get_harness_class
from pytest_clawswe.swe.instance.patch import scrub_artifacts
from pytest_clawswe.swe.instance.prompt import instance_prompt

SETTINGS = Path(__import__("pytest_clawswe.harness.adapters", fromlist=["x"]).__file__).parent / "settings.yaml"
TABLE = yaml.safe_load(SETTINGS.read_text())
HARNESSES = ("openclaw", "hermes", "nanobot", "zeroclaw", "generic")
STUB_HOME = "/tmp/clawswe-stub-bundle"
RECORD = "/tmp/clawswe-stub"
MODEL = "openrouter/z-ai/glm-5.1"
BUDGET = 3600.0
# the executable each adapter starts, relative to its bundle
EXECUTABLE = {"openclaw": "bin/openclaw", "hermes": "bin/hermes", "nanobot": "bin/nanobot", "zeroclaw": "bin/zeroclaw",
              "generic": "python/bin/python3"}
STUB = f"""#!/bin/sh
n=$(basename "$0")
mkdir -p {RECORD}
printf '%s\\0' "$@" > {RECORD}/$n.argv
pwd > {RECORD}/$n.cwd
env -0 > {RECORD}/$n.env
echo '{{}}'
"""
# a prompt whose bytes "$(cat ...)" would change: trailing newlines, a literal {{base_commit}}, quotes, $()
PROBLEM = "Fix `parse('$(x)')` \"quoted\" {base_commit} {problem_statement}\n\n"


def test_the_table_covers_the_five_harnesses_and_every_row_names_its_source():
    assert set(TABLE) == set(HARNESSES)
    for name, entry in TABLE.items():
        assert entry["rows"], name
        for row in entry["rows"]:
            assert row["where"] in ("config", "argv", "env", "cwd", "adapter", "cleanup"), row
            assert row.get("source"), row


def _lookup(config, key, subst):
    parts = key if isinstance(key, list) else key.split(".")
    value = config
    for part in parts:
        value = value[subst(part)]
    return value


def _parse_config(name: str, raw: bytes):
    if name == "zeroclaw":
        return tomllib.loads(raw.decode())
    if name == "generic":  # mykey.py: plain assignments of literals
        tree = ast.parse(raw.decode())
        return {n.targets[0].id: ast.literal_eval(n.value) for n in tree.body if isinstance(n, ast.Assign)}
    return yaml.safe_load(raw)  # JSON is YAML (hermes writes its YAML as JSON)


@pytest.mark.docker
@pytest.mark.parametrize("name", HARNESSES)
def test_settings_read_back_from_the_container(docker_client, python_demo, tmp_path, name):
    options = {"version": "stub"} if name == "zeroclaw" else {}
    harness = get_harness_class(name)(MODEL, options)
    harness.home = STUB_HOME  # the stand-in bundle
    row = {"problem_statement": PROBLEM, "base_commit": "0123abc", "patch": ""}
    prompt = instance_prompt(harness, row)
    assert "{base_commit} {problem_statement}\n\n" in prompt, "text of the problem statement is never substituted"
    timeouts = []
    with Workspace(docker_client, python_demo.image, labels={LABEL_RUN: "t-settings"}, network="none") as ws:
        exe = f"{STUB_HOME}/{EXECUTABLE[name]}"
        ws.write_file(exe, STUB, mode=0o755)
        ws.exec(["mkdir", "-p", f"{STUB_HOME}/python/lib/python3.12/site-packages/genericagent"], check=True)
        real_exec = ws.exec

        def exec_(cmd, **kw):  # the wrapper's deadline of the harness run
            if kw.get("timeout"):
                timeouts.append(kw["timeout"])
            return real_exec(cmd, **kw)

        ws.exec = exec_
        ctx = AgentContext("demo__inst-1.2", row, ws, tmp_path, MODEL, BUDGET, gateway_url="http://gw.invalid:1234",
                          gateway_token="clawswe-token")
        harness.create_agent(ctx)
        harness.send_task(ctx, prompt)
        exe_name = Path(exe).name
        argv = ws.read_file(f"{RECORD}/{exe_name}.argv").decode().split("\0")[:-1]
        env = dict(e.split("=", 1) for e in ws.read_file(f"{RECORD}/{exe_name}.env").decode().split("\0") if "=" in e)
        cwd = ws.read_file(f"{RECORD}/{exe_name}.cwd").decode().strip()
        entry = TABLE[name]
        config = _parse_config(name, ws.read_file(f"{harness.agent_home}/{entry['file']}"))
        extra = {}
        if name == "openclaw":
            extra["agent_ws_exists"] = ws.exec(["test", "-d", harness.agent_workspace(ctx)]).exit_code == 0
        if name == "nanobot":  # the harness's templates in /testbed are gone before the diff
            ws.exec("mkdir -p memory sessions .nanobot && touch AGENTS.md HEARTBEAT.md SOUL.md TOOLS.md USER.md",
                    workdir="/testbed", check=True)
            scrub_artifacts(ws, harness.workspace_artifacts, "/testbed")
            extra["left"] = set(ws.exec("ls -A", workdir="/testbed").stdout.split())
        harness.delete_agent(ctx)
        extra["home_removed"] = ws.exec(["test", "-e", harness.agent_home]).exit_code != 0

    values = {"agent": getattr(harness, "agent_id", lambda c: "")(ctx), "home": harness.agent_home, "model": MODEL,
              "budget": str(math.ceil(BUDGET)), "prompt": prompt,
              "provider": "custom:http://gw.invalid:1234/v1"}

    def subst(value):
        if isinstance(value, str):
            return value.format(**values) if value != "{prompt}" else prompt
        if isinstance(value, list):
            return [subst(v) for v in value]
        return value

    checked = 0
    for r in entry["rows"]:
        where, key, want = r["where"], r["key"], subst(r["value"])
        if where == "config":
            assert _lookup(config, key, subst) == want, r
        elif where == "argv":
            assert key in argv, (r, argv)
            if want is not True:
                assert argv[argv.index(key) + 1] == want, r  # the prompt: byte for byte (issue 13 §5)
        elif where == "env":
            assert env.get(key) == want, r
        elif where == "cwd":
            assert cwd == want, r
        elif where == "adapter":
            assert getattr(harness, key) == want, r
        elif where == "cleanup":
            assert key in harness.workspace_artifacts and key not in extra["left"], r
        checked += 1
    assert checked == len(entry["rows"])
    # the wrapper's deadline is the budget plus the harness's grace period
    assert BUDGET + harness.grace_s in timeouts, timeouts
    assert extra["home_removed"]
    if name == "openclaw":
        assert extra["agent_ws_exists"] and values["agent"] == "swe-demo__inst-1-2"
    # the run.json record of the adapter's options: every option with its effective value
    resolved = harness.resolved_options()
    assert json.loads(json.dumps(resolved)) == resolved and "model_name" in resolved
