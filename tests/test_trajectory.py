"""The gateway's record of every call and the ATIF trajectories built from it: a real gateway process, the
official SDKs as clients over the three wire protocols (streamed and not), the scripted model or a stub provider;
each trajectory checked against the ATIF spec (atif_check.py) and against the ledger it must agree with."""
from __future__ import annotations

import base64
import json
import os
import time
from pathlib import Path

import pytest
from atif_check import check, validate_with_harbor
from polling import alive, wait_until
from test_gateway import CONVERSATIONS, DUMMY_KEY, GOLD, KEY_ENV, stub  # noqa: F401 (stub: a fixture)

from pytest_clawswe.cli import main as clawswe_main
from pytest_clawswe.gateway import GatewayProcess, Upstream
from pytest_clawswe.gateway.protocols import BY_NAME, Reply, ToolCall
from pytest_clawswe.gateway.record.calls import read_calls
from pytest_clawswe.gateway.record.ledger import USAGE_FIELDS, read_records
from pytest_clawswe.gateway.record.reassemble import reassemble
from pytest_clawswe.swe.benchmark import ClawSweBench
from pytest_clawswe.trajectory.store import settled_calls
from pytest_clawswe.trajectory.store import write_for_item as write_with_outcome
from pytest_clawswe.usage import Usage
from pytest_clawswe.wildclaw.benchmark import WildClawBench


def write_for_item(run_dir, benchmark, item_id, folder, result, **kwargs):
    """As the runners call it: with the benchmark's own outcome of the item."""
    bench = {"swe": ClawSweBench, "wildclaw": WildClawBench}[benchmark]
    return write_with_outcome(run_dir, benchmark, item_id, folder, result, bench.trajectory_outcome(folder, result),
                              **kwargs)

pytestmark = pytest.mark.timeout(120)


# ---------------------------------------------------------------------------------- reading answers back
@pytest.mark.parametrize("stream", [False, True], ids=["plain", "stream"])
@pytest.mark.parametrize("protocol", ["chat", "responses", "messages"])
def test_an_answer_is_read_back_into_one_turn(protocol, stream):
    wire = BY_NAME[protocol]
    reply = Reply("Let me look.", [ToolCall("shell", {"cmd": "ls -la /testbed"}, "call_1"),
                                   ToolCall("read", '{"path": "a.py"}', "call_2")])
    usage = Usage(1, 100, 20, 30, 5)
    body = {"stream_options": {"include_usage": True}}
    data = b"".join(wire.render_stream(reply, usage, "m", body)) if stream else \
        json.dumps(wire.render(reply, usage, "m", body)).encode()
    turn = reassemble(protocol, data, stream)
    assert turn["text"] == "Let me look."
    assert [(c["id"], c["name"], json.loads(c["arguments"])) for c in turn["tool_calls"]] == [
        ("call_1", "shell", {"cmd": "ls -la /testbed"}), ("call_2", "read", {"path": "a.py"})]
    assert wire.usage_from_body({"usage": turn["usage"]}) == usage


def _sse(data) -> bytes:
    return f"data: {json.dumps(data)}\n\n".encode()


def test_reasoning_is_kept_in_every_protocol():
    chat = b"".join(_sse({"choices": [{"index": 0, "delta": d}]}) for d in (
        {"reasoning_content": "think "}, {"reasoning_content": "hard"}, {"content": "done"}))
    assert reassemble("chat", chat + b"data: [DONE]\n\n", True)[("reasoning")] == "think hard"
    messages = b"".join(_sse(e) for e in (
        {"type": "content_block_start", "index": 0, "content_block": {"type": "thinking", "thinking": ""}},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "thinking_delta", "thinking": "why"}},
        {"type": "content_block_start", "index": 1, "content_block": {"type": "text", "text": ""}},
        {"type": "content_block_delta", "index": 1, "delta": {"type": "text_delta", "text": "so"}}))
    turn = reassemble("messages", messages, True)
    assert (turn["reasoning"], turn["text"]) == ("why", "so")
    responses = {"output": [{"type": "reasoning", "summary": [{"type": "summary_text", "text": "plan"}]},
                            {"type": "message", "content": [{"type": "output_text", "text": "ok"}]}]}
    turn = reassemble("responses", json.dumps(responses).encode(), False)
    assert (turn["reasoning"], turn["text"]) == ("plan", "ok")


# ---------------------------------------------------------------------------------- a real gateway
@pytest.fixture
def gw(tmp_path):
    with GatewayProcess.start(tmp_path / "gateway") as gateway:
        yield gateway


def _settled(gateway, token: str, instance: str):
    """What the runner does before it writes an item: the gateway's usage read (which waits for the ledger),
    then the recorded calls."""
    gateway.client().requests(token)
    return settled_calls(gateway.state_dir, instance)


def _item(run_dir: Path, benchmark: str, item_id: str, result: dict) -> Path:
    folder = run_dir / ("tasks" if benchmark == "wildclaw" else "instances") / item_id
    folder.mkdir(parents=True, exist_ok=True)
    (folder / ("result.json" if benchmark == "wildclaw" else "metadata.json")).write_text(json.dumps(result))
    return folder


def _agree_with_ledger(doc: dict, records: list[dict]) -> None:
    """One agent step per ledger line, in its order, with its request id and exactly its tokens."""
    agent = [s for s in doc["steps"] if s["source"] == "agent"]
    assert [s["extra"]["clawswe"]["request_id"] for s in agent] == [r["request_id"] for r in records]
    total = Usage()
    for r in records:
        total += Usage(1, *(int(r[f]) for f in USAGE_FIELDS))
    fm = doc["final_metrics"]
    assert fm["total_prompt_tokens"] == total.input_tokens + total.cache_read_tokens + total.cache_write_tokens
    assert fm["total_completion_tokens"] == total.output_tokens
    assert fm["total_cached_tokens"] == total.cache_read_tokens
    assert sum(s["metrics"]["prompt_tokens"] for s in agent) == fm["total_prompt_tokens"]
    assert sum(s["extra"]["clawswe"]["cache_write_tokens"] for s in agent) == total.cache_write_tokens


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "stream"])
@pytest.mark.parametrize("protocol", ["chat", "responses", "messages"])
def test_every_call_is_recorded_and_its_trajectory_is_atif(gw, tmp_path, protocol, stream):
    instance = f"demo__{protocol}"
    token = gw.client().register(instance, "scripted/gold", GOLD)
    name, args, _, _, _ = CONVERSATIONS[protocol](gw.url, token, stream)
    calls, records = _settled(gw, token, instance)  # written while the gateway runs (incrementally)
    assert len(records) == 2 and [c["request_id"] for c in calls] == [r["request_id"] for r in records]
    assert all(c["request"]["model"] == "fake-model" for c in calls)  # the request as the harness sent it
    assert calls[0]["response"]["tool_calls"][0]["name"] == name

    run_dir = tmp_path
    folder = _item(run_dir, "swe", instance, {"instance_id": instance, "harness": "sdk", "model": "scripted/gold",
                                              "outcome": "resolved"})
    (folder / "patch.diff").write_text("diff --git a/x b/x\n")
    (folder / "eval").mkdir()
    (folder / "eval" / "report.json").write_text(json.dumps({instance: {"tests_status": {
        "FAIL_TO_PASS": {"success": ["t1"], "failure": []}, "PASS_TO_PASS": {"success": ["t2"], "failure": ["t3"]}}}}))
    (run_dir / "run.json").write_text(json.dumps({"harness": "sdk", "harness_settings": {"version": "1.2.3"}}))
    [path] = write_for_item(run_dir, "swe", instance, folder, json.loads((folder / "metadata.json").read_text()))
    assert path == folder / "trajectory" / "attempt-1.atif.json"
    doc = json.loads(path.read_text())
    check(doc)
    assert doc["agent"]["version"] == "1.2.3"  # the harness's version as the run resolved it ("unknown" before)
    _agree_with_ledger(doc, records)
    system, task, first, second = doc["steps"]
    assert (system["source"], system["message"]) == ("system", "You are a coding agent.")
    assert (task["source"], task["message"]) == ("user", "Fix app.txt")
    [call] = first["tool_calls"]
    assert (call["function_name"], call["arguments"]) == (name, args)
    # the observation is what the harness sent back for that call in the next request
    assert first["observation"]["results"] == [{"source_call_id": call["tool_call_id"], "content": "ok"}]
    assert second["extra"]["clawswe"]["status"] == 200 and second["extra"]["clawswe"]["latency_s"] >= 0
    assert [t["function"]["name"] for t in doc["agent"]["tool_definitions"]]
    claw = doc["extra"]["clawswe"]
    assert (claw["outcome"], claw["patch"], claw["attempt"]) == ("resolved", "diff --git a/x b/x\n", 1)
    assert claw["tests"]["PASS_TO_PASS"] == {"passed": ["t2"], "failed": ["t3"]}


def test_retried_attempts_keep_their_own_trajectory(gw, tmp_path):
    instance = "demo__retried"
    for _ in range(2):  # a second registration of the instance is its next attempt
        token = gw.client().register(instance, "scripted/gold", GOLD)
        CONVERSATIONS["chat"](gw.url, token, True)
        _settled(gw, token, instance)
    folder = _item(tmp_path, "wildclaw", instance, {})
    result = {"task_id": instance, "harness": "h", "model": "scripted/gold", "outcome": "passed",
              "overall_score": 0.75, "scores": {"overall_score": 0.75, "file_ok": 1.0, "judge": 0.5}}
    paths = write_for_item(tmp_path, "wildclaw", instance, folder, result)
    docs = [json.loads(p.read_text()) for p in paths]
    assert [d["extra"]["clawswe"]["attempt"] for d in docs] == [1, 2]
    for doc, attempt in zip(docs, (1, 2)):
        check(doc)
        _agree_with_ledger(doc, read_records(gw.state_dir, instance, attempt))
    assert docs[0]["extra"]["clawswe"]["outcome"] == "error" and docs[0]["extra"]["clawswe"]["score"] is None
    last = docs[1]["extra"]["clawswe"]
    assert (last["outcome"], last["score"], last["patch"], last["tests"]) == ("passed", 0.75, None, None)
    assert last["criteria"] == [{"name": "file_ok", "score": 1.0}, {"name": "judge", "score": 0.5}]


def test_the_record_is_capped_per_instance_and_says_what_was_cut(tmp_path, monkeypatch):
    monkeypatch.setenv("CLAWSWE_RECORD_MAX_MB", str(3000 / 1024 / 1024))  # ~3 KB: the first call fits, not more
    instance = "demo__capped"
    with GatewayProcess.start(tmp_path / "gateway") as gateway:
        token = gateway.client().register(instance, "scripted/gold", GOLD)
        CONVERSATIONS["messages"](gateway.url, token, False)
        calls, records = _settled(gateway, token, instance)
    assert len(calls) == len(records) == 2
    assert "cut" not in calls[0] and calls[1]["request"] is None and calls[1]["cut"]["request_bytes"] > 0
    assert sum(p.stat().st_size for p in (tmp_path / "gateway" / "calls").iterdir()) < 6000
    folder = _item(tmp_path, "swe", instance, {"instance_id": instance, "outcome": "unresolved"})
    doc = json.loads(write_for_item(tmp_path, "swe", instance, folder, {"instance_id": instance})[0].read_text())
    check(doc)
    _agree_with_ledger(doc, records)  # what was cut is the bodies, never a step or a token
    assert doc["extra"]["clawswe"]["truncated"]["calls_cut"] == 1


def _forms(secret: str) -> list[str]:
    raw = secret.encode()
    return [secret, base64.b64encode(raw).decode(), "".join(f"\\u{ord(c):04x}" for c in secret)]


def test_no_key_or_token_in_the_record_whatever_the_agent_sends(tmp_path, stub, monkeypatch):  # noqa: F811
    """The agent puts its gateway token and the provider key (say it found them) into its messages, in clear,
    base64 and JSON-escaped; a provider error echoes the key; none of it reaches the record."""
    monkeypatch.setenv(KEY_ENV, DUMMY_KEY)
    import openai

    with GatewayProcess.start(tmp_path / "gateway", [Upstream("stub", stub.url + "/v1", KEY_ENV)]) as gateway:
        client = gateway.client()
        tokens = [client.register("leak__fwd", "stub/vendor/m"), client.register("leak__echo", "stub/echo-key"),
                  client.register("leak__gold", "scripted/gold", GOLD)]
        for token in tokens:
            leaked = " ".join(f for s in (DUMMY_KEY, token) for f in _forms(s))  # its own token: all it knows
            sdk = openai.OpenAI(base_url=gateway.url + "/v1", api_key=token, max_retries=0, timeout=30)
            for stream in (False, True):
                try:
                    sdk.chat.completions.create(model="m", stream=stream, messages=[
                        {"role": "system", "content": f"env: {leaked}"}, {"role": "user", "content": leaked}])
                except openai.AuthenticationError:
                    pass  # the echoing provider's 401
        for token in tokens:
            _settled(gateway, token, client.requests(token)[0]["instance_id"])
    files = list((tmp_path / "gateway" / "calls").iterdir())
    assert len(files) == 3
    for path in files:
        text = path.read_text()
        assert text.count("[redacted]") >= 6, path  # the secrets were there, and were scrubbed
        for secret in (DUMMY_KEY, *tokens):
            for form in _forms(secret):
                assert form not in text, (path, form)
                assert form.lower() not in text.lower(), (path, form)


def test_recording_can_be_turned_off(tmp_path, monkeypatch):
    monkeypatch.setenv("CLAWSWE_RECORD_CALLS", "0")
    with GatewayProcess.start(tmp_path / "gateway") as gateway:
        token = gateway.client().register("demo__off", "scripted/gold", GOLD)
        CONVERSATIONS["chat"](gateway.url, token, False)
        time.sleep(0.3)
        assert len(read_records(gateway.state_dir, "demo__off")) == 2
    assert read_calls(tmp_path / "gateway", "demo__off") == []


def test_export_atif_writes_one_file_per_item_and_attempt(gw, tmp_path, capsys):
    run_dir = Path(gw.state_dir).parent
    for instance in ("demo__one", "demo__two"):
        token = gw.client().register(instance, "scripted/gold", GOLD)
        CONVERSATIONS["responses"](gw.url, token, True)
        _settled(gw, token, instance)
        _item(run_dir, "swe", instance, {"instance_id": instance, "harness": "h", "model": "scripted/gold",
                                         "outcome": "unresolved"})
    _item(run_dir, "swe", ".demo__three.partial", {})  # an item still running: no result of its own
    assert clawswe_main(["export", "atif", str(run_dir), "--out", str(tmp_path / "out")]) == 0
    names = sorted(p.name for p in (tmp_path / "out").iterdir())
    assert names == ["demo__one.attempt-1.atif.json", "demo__two.attempt-1.atif.json"]
    for name in names:
        doc = json.loads((tmp_path / "out" / name).read_text())
        check(doc)
        assert doc["extra"]["clawswe"]["outcome"] == "not_resolved"
    assert (run_dir / "instances" / "demo__one" / "trajectory" / "attempt-1.atif.json").is_file()
    assert "2 ATIF trajectories written" in capsys.readouterr().out
    assert clawswe_main(["export", "atif", str(tmp_path / "nowhere")]) == 2


def test_harbor_models_accept_our_files_when_installed(gw, tmp_path):
    """The format's own models (harbor needs Python >= 3.12; installed here with --ignore-requires-python when
    available); skipped, not passed, when they are not."""
    pytest.importorskip("harbor.models.trajectories",
                        reason="Harbor's ATIF models are not installed (scripts/venv.sh installs them for the tests)")
    token = gw.client().register("demo__harbor", "scripted/gold", GOLD)
    CONVERSATIONS["messages"](gw.url, token, True)
    _settled(gw, token, "demo__harbor")
    folder = _item(tmp_path, "swe", "demo__harbor", {"instance_id": "demo__harbor"})
    doc = json.loads(write_for_item(tmp_path, "swe", "demo__harbor", folder, {})[0].read_text())
    assert validate_with_harbor(doc)
    bad = {**doc, "steps": [{**doc["steps"][0], "metrics": {"prompt_tokens": 1}}]}  # metrics on a system step
    with pytest.raises(ValueError):
        validate_with_harbor(bad)
    os.environ.get("PATH")  # (keeps the import used when harbor is absent)


def test_a_killed_gateway_leaves_every_call_it_had_recorded(tmp_path):
    """Written as it goes: SIGKILL the gateway after two calls; both are on disk, and its writer process,
    its stdin gone, ends rather than linger."""
    import signal
    import subprocess

    gateway = GatewayProcess.start(tmp_path / "gateway")
    try:
        token = gateway.client().register("demo__killed", "scripted/gold", GOLD)
        CONVERSATIONS["chat"](gateway.url, token, True)
        calls, records = _settled(gateway, token, "demo__killed")
        assert len(calls) == len(records) == 2
        writers = subprocess.run(["pgrep", "-P", str(gateway.pid), "-f", "gateway.record.writer"], capture_output=True,
                                 text=True).stdout.split()
        assert len(writers) == 1
        os.kill(gateway.pid, signal.SIGKILL)
        wait_until(lambda: not alive(int(writers[0])), 10, "the writer stopped with the gateway", interval=0.05)
    finally:
        gateway.stop()
    assert [c["request_id"] for c in read_calls(tmp_path / "gateway", "demo__killed")] == \
        [r["request_id"] for r in records]


def test_observations_are_found_when_a_harness_rewrites_the_call_ids():
    """OpenClaw writes `call_ab-1` back as `callab1`; another harness may use ids of its own: the result is
    still the observation of the call that asked for it (found by the call's name and arguments)."""
    from pytest_clawswe.trajectory import atif

    def call(rid, request, tool_calls):
        return {"request_id": rid, "attempt": 1, "protocol": "chat", "status": 200, "ts": "2026-01-01T00:00:00+00:00",
                "request": request, "response": {"text": "", "tool_calls": tool_calls}}

    first = {"messages": [{"role": "system", "content": "sys"}, {"role": "user", "content": "env"},
                          {"role": "user", "content": [{"type": "text", "text": "fix it"}]}]}
    asked = [{"id": "call_ab-1", "name": "exec", "arguments": '{"cmd": "ls"}'},
             {"id": "call_cd-2", "name": "exec", "arguments": '{"cmd": "pwd"}'}]
    second = {"messages": [*first["messages"],
                           {"role": "assistant", "tool_calls": [
                               {"id": "callab1", "function": {"name": "exec", "arguments": '{"cmd":"ls"}'}},
                               {"id": "mine-7", "function": {"name": "exec", "arguments": '{"cmd":"pwd"}'}}]},
                           {"role": "tool", "tool_call_id": "callab1", "content": "a.py"},
                           {"role": "tool", "tool_call_id": "mine-7", "content": "/testbed"}]}
    doc = atif.build([call("r1", first, asked), call("r2", second, [])],
                     {"benchmark": "swe", "item_id": "x", "attempt": 1, "harness": "h", "model": "m",
                      "outcome": "error", "patch": None, "tests": None, "criteria": None, "score": None,
                      "truncated": None}, harness="h", model="m")
    check(doc)
    assert [s["message"] for s in doc["steps"][:2]] == ["sys", "env\n\nfix it"]
    assert doc["steps"][2]["observation"]["results"] == [{"source_call_id": "call_ab-1", "content": "a.py"},
                                                         {"source_call_id": "call_cd-2", "content": "/testbed"}]


def test_a_writer_far_behind_costs_request_bodies_then_calls_never_the_gateways_memory(tmp_path):
    """The pipe to the writer stands in here (the rest of the record is tested on a real gateway above): past
    8 MiB queued a call goes without its request body, saying so; past 64 MiB it is counted as dropped."""
    import struct
    from types import SimpleNamespace

    from pytest_clawswe.gateway.record import calls as rec_module

    class Pipe:
        queued = 0
        frames: list[bytes] = []

        def get_write_buffer_size(self):
            return self.queued

        def is_closing(self):
            return False

        def write(self, data):
            self.frames.append(data)

    rec = rec_module.Recorder(tmp_path, on=False)  # no writer process: its pipe is the stand-in
    rec.on, rec._transport = True, Pipe()
    reg = SimpleNamespace(instance_id="x", token="clawswe-t", upstream=None)
    for queued in (0, rec_module.BODIES_BEHIND + 1, rec_module.MAX_BEHIND + 1):
        rec._transport.queued = queued
        rec.submit(reg, "chat", b'{"messages": []}', [b"data: {}\n\n"], {"request_id": rec.new_id()})
    heads = []
    for data in Pipe.frames:
        head_len, request_len, _ = struct.unpack(">III", data[:12])
        heads.append((json.loads(data[12:12 + head_len]), data[12 + head_len:12 + head_len + request_len]))
    assert len(heads) == 2 and rec.dropped == 1
    assert "cut" not in heads[0][0] and heads[0][1] == b'{"messages": []}'
    assert heads[1][0]["cut"]["request_bytes"] == 16 and heads[1][1] == b"null"
