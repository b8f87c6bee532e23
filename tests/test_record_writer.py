"""The call recorder's writer process (gateway/record/writer.py) on its own: what it writes for a call, how it
reads the pipe and when its lines reach the disk, and what it costs per call in work that does not depend on the
machine's speed (redactors built, files opened). The record through a real gateway: tests/test_trajectory.py."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from polling import wait_until

from pytest_clawswe.gateway import fastjson
from pytest_clawswe.gateway.record import writer as record_writer
from pytest_clawswe.gateway.record.calls import frame, read_calls
from pytest_clawswe.gateway.record.reassemble import (_args_text, _chat_stream, _chat_stream_quick, _events,
                                                      _events_one_by_one, _text, reassemble)
from pytest_clawswe.gateway.upstream import redact

ANSWER = b'{"choices":[{"message":{"role":"assistant","content":"done"},"finish_reason":"stop"}],"usage":{}}'


def _head(instance: str, token: str, n: int = 1, **extra) -> dict:
    record = {"ts": f"2026-01-01T00:00:{n % 60:02d}+00:00", "instance_id": instance, "attempt": 1, "stream": False,
              "status": 200, "request_id": f"r{n}"}
    return {"instance_id": instance, "protocol": "chat", "record": record, "secrets": [token, ""], **extra}


def _lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


@pytest.fixture
def built(monkeypatch) -> list[str]:
    """The secrets whose Redactor was built, in order."""
    keys: list[str] = []
    real = redact.Redactor.__init__

    def counted(self, key):
        keys.append(key)
        real(self, key)

    monkeypatch.setattr(redact.Redactor, "__init__", counted)
    return keys


def test_each_secrets_redactor_is_built_once_however_many_instances_take_turns(tmp_path, built):
    """300 agents at once means 300 tokens: a redactor (milliseconds of regular expressions) built again for every
    call made the writer fall far behind at the gateway's ceiling (a cache of 64 served 300 tokens round robin).
    Failed before: 2 rounds of 100 instances built 200 redactors."""
    writer = record_writer.Writer(tmp_path, 0, 64 << 20, ["admin-token-of-the-gateway-0123"])
    tokens = [f"clawswe-token-{i:03d}-abcdefghijklmnopqrstuvwxyz" for i in range(100)]
    for n in range(2):
        for i, token in enumerate(tokens):
            leaked = json.dumps({"messages": [{"role": "user", "content": f"my key: {token}"}]}).encode()
            body = leaked if i % 10 == 0 else b'{"messages":[{"role":"user","content":"fix it"}]}'
            writer.call(_head(f"inst-{i}", token, n), body, ANSWER)
    writer.close()
    assert len(built) == len(set(built)) == 10  # the 10 leaking instances' tokens, each built once
    assert sum(len(_lines(p)) for p in (tmp_path / "calls").iterdir()) == 200


def test_a_secret_in_any_form_is_scrubbed_with_or_without_a_probe_hit(tmp_path):
    token, key = "clawswe-0123456789abcdefghijklmnop", "sk-or-v1-abcdefabcdefabcdef0123456789"
    writer = record_writer.Writer(tmp_path, 0, 64 << 20, [key])
    escaped = "".join(f"\\u{ord(c):04x}" for c in token)
    for n, text in enumerate([token, token.upper(), escaped, key, "nothing secret here"]):
        body = json.dumps({"messages": [{"role": "user", "content": f"found: {text}"}]}).encode()
        writer.call(_head("leak", token, n), body.replace(escaped.replace("\\", "\\\\").encode(), escaped.encode()),
                    ANSWER)
    writer.close()
    text = (tmp_path / "calls" / "leak.jsonl").read_text()
    for secret in (token, key):
        assert secret.lower() not in text.lower()
    assert escaped not in text and text.count("[redacted]") == 4 and "nothing secret here" in text


def test_every_form_of_each_of_a_lines_secrets_is_scrubbed_wherever_it_stands_among_the_probes(tmp_path):
    """A line is probed with all of its secrets' probes in one loop, and only a line with a hit is looked at secret
    by secret: each form of each secret (the call's token and key, the process's admin token), alone in a line,
    the key's text in any letter case, is found so and scrubbed."""
    token, key, admin = "clawswe-0123456789abcdefghijklmnop", "sk-or-v1/abc+defabcdefabcdef0123456789", "admin-" + "f" * 40
    writer = record_writer.Writer(tmp_path, 0, 64 << 20, [admin])
    planted = [(secret, form) for secret in (token, key, admin) for form in redact.key_forms(secret)]
    for n, (secret, form) in enumerate(planted):
        if n % 2 and secret.lower().encode() in form.lower().replace(b"\\/", b"/"):  # (base64 has one case)
            form = form.upper()
        body = b'{"messages":[{"role":"user","content":"found: ' + form + b' here"}]}'
        writer.call({**_head("forms", token, n), "secrets": [token, key]}, body, ANSWER)
    writer.close()
    lines = (tmp_path / "calls" / "forms.jsonl").read_text().lower().splitlines()
    assert len(lines) == len(planted) > 3 * 4
    for line, (secret, form) in zip(lines, planted):
        assert "[redacted]" in line and " here" in line, (secret, form, line)
        assert not any(probe in line.encode() for s in (token, key, admin) for probe in redact.probe_forms(s)), line


def test_a_line_with_escapes_and_no_secret_builds_no_redactor_and_a_key_partly_escaped_is_still_found(
        tmp_path, built):
    """Tool output with terminal colours reaches the record as `\\u001b`, a JSON escape of an ASCII character, which
    could spell part of a key: every such line built every secret's Redactor (~12 ms each) and ran it over the
    whole line. The probes now also look at the line with its escapes read. Failed before: the
    coloured line built the token's and the admin token's Redactors."""
    token, key = "clawswe-0123456789abcdefghijklmnop", "sk-or-v1/abcdefabcdefabcdef0123456789"
    writer = record_writer.Writer(tmp_path, 0, 64 << 20, [key])
    coloured = json.dumps({"messages": [{"role": "tool", "content": "\x1b[31mFAILED\x1b[0m test_fix\n" * 20}]})
    assert "\\u001b" in coloured
    writer.call(_head("c", token, 1), coloured.encode(), ANSWER)
    assert built == []
    # every other character escaped (upper-case hex), the rest in upper case, the key's / as \/
    spelled = {secret: "".join(f"\\u{ord(c):04X}" if i % 2 else c.upper() for i, c in enumerate(secret)).replace(
        "/", "\\/") for secret in (token, key)}
    for n, secret in enumerate((token, key), 2):
        body = '{"messages":[{"role":"tool","content":"\\u001b[0m found: %s"}]}' % spelled[secret]
        assert json.loads(body)["messages"][0]["content"].lower().endswith(secret.lower())  # (JSON: the key, in mixed case)
        writer.call(_head("c", token, n), body.encode(), ANSWER)
    writer.close()
    assert sorted(built) == sorted([token, key])
    lines = _lines(tmp_path / "calls" / "c.jsonl")
    assert lines[0]["request"] == json.loads(coloured)
    for line in lines[1:]:
        content = line["request"]["messages"][0]["content"]
        assert "[redacted]" in content and token not in content.lower() and key not in content.lower()


@pytest.mark.parametrize("text", [b"plain text", b"a \\n newline", b"\\u001b", b"\\U0041", b"\\u0141", b"\\/path",
                                  b"a\\\\u0041", b"\\u00", b"ends with \\", b"\\U00", b"\\x/"])
def test_the_escape_probe_finds_each_start_of_an_escape_a_loose_form_may_take(text):
    """The probe for escapes (one regex scan) says yes exactly where any of the three kinds read_escapes reads starts
    (`\\u00`, `\\U00`, `\\/`), as the three substring scans it took the place of did."""
    expected = b"\\u00" in text or b"\\/" in text or b"\\U00" in text
    assert redact.may_have_escapes(text) is expected


def _conversation(turns: int, planted: dict[int, str], seed: int = 0) -> list[bytes]:
    """An agent's requests, each the last one plus an answer and a tool's output (as real requests grow: 20 KB of
    system prompt, 2 KB a turn); `planted` puts a text at the end of that turn's tool output."""
    import random

    rng = random.Random(seed)
    messages = [{"role": "system", "content": "You are a coding agent. " * 800}]
    bodies = []
    for turn in range(turns):
        output = "".join(rng.choice("abcdefghij \n") for _ in range(2000))
        messages += [{"role": "assistant", "content": f"step {turn}"},
                     {"role": "user", "content": output + planted.get(turn, "")}]
        bodies.append(json.dumps({"model": "m", "messages": messages, "tools": [{"name": "exec"}]}).encode())
    return bodies


def _write(tmp_path: Path, name: str, token: str, bodies: list[bytes], key: str, remember: bool = True) -> bytes:
    writer = record_writer.Writer(tmp_path / name, 0, 1 << 30, [key])
    if not remember:
        writer.conversations = record_writer.Conversations(0)
    for n, body in enumerate(bodies):
        writer.call(_head("conv", token, n), body, ANSWER)
    writer.close()
    return (tmp_path / name / "calls" / "conv.jsonl").read_bytes()


def test_a_conversation_is_scrubbed_as_if_each_request_were_read_whole(tmp_path):
    """The part of a request its conversation's previous one showed clean is not probed again (12 probes of a 40 KB
    request cost ~150 us: the writer fell behind on real conversations). What the writer writes must not change:
    secrets in every form, in a new message, in the last bytes of the part already seen (a form that only the new
    bytes complete) and right after it, and a new attempt's token in the part its old token showed clean."""
    token, key = "clawswe-0123456789abcdefghijklmnop", "sk-or-v1-abcdefabcdefabcdef0123456789"
    escaped = "".join(f"\\u{ord(c):04x}" for c in token)
    import base64

    planted = {3: token, 5: key.upper(), 7: "Basic " + base64.b64encode(f"user:{key}".encode()).decode(),
               9: escaped}
    bodies = _conversation(11, planted)
    # then a request that repeats the last one up to the middle of the token (a tool's output that went on)
    cut = _conversation(1, {0: token[:20]})[0][:-len(b'"}], "tools": [{"name": "exec"}]}')]
    bodies += [cut + b'"}]}', cut + token[20:].encode() + b' and more"}]}', cut + token[20:].encode() + b'"}]}']
    with_memory = _write(tmp_path, "memory", token, bodies, key)
    whole = _write(tmp_path, "whole", token, bodies, key, remember=False)
    assert with_memory == whole
    text = with_memory.decode()
    assert token not in text and key.lower() not in text.lower() and escaped not in text
    lines = [json.loads(line) for line in with_memory.splitlines()]
    assert ["[redacted]" in json.dumps(line["request"]) for line in lines] == [False] * 3 + [True] * 8 + \
        [False, True, True]
    # a new attempt: its token was in the part the old one showed clean
    new_token = "clawswe-a-new-attempts-token-0123456789"
    again = _conversation(3, {0: new_token})
    writer = record_writer.Writer(tmp_path / "attempts", 0, 1 << 30, [])
    writer.call(_head("conv", token, 0), again[1], ANSWER)  # clean for the old token
    writer.call(_head("conv", new_token, 1), again[2], ANSWER)
    writer.close()
    first, second = (tmp_path / "attempts" / "calls" / "conv.jsonl").read_text().splitlines()
    assert new_token in first and new_token not in second  # (not a secret of the first attempt's call)


@pytest.mark.parametrize("form", ["plain", "half-escaped"])
def test_a_form_that_begins_in_the_clean_span_and_ends_past_it_is_scrubbed(form):
    """The Scrubber's clean span ends inside a form: what reaches past it is looked at as far back as a form can
    reach (an exact form: its length; one written with escapes: six bytes a character)."""
    token = "clawswe-0123456789abcdefghijklmnop"
    half = len(token) // 2
    head = token[:half] if form == "plain" else "".join(f"\\u{ord(c):04x}" for c in token[:half])
    line = b'{"request":{"content":"' + b"x" * 5000 + head.encode() + token[half:].encode() + b' done"}}'
    clean_end = line.index(token[half:].encode())  # everything before the form's second half was seen clean
    scrubbed = record_writer.Scrubber().scrub(line, (token,), (12, clean_end))
    assert b"[redacted] done" in scrubbed and token[half:].encode() not in scrubbed
    json.loads(scrubbed)


def test_a_conversations_next_request_is_probed_only_past_what_it_repeats(tmp_path):
    """The measure of the work: what the probes look at is the new turn (and the few bytes a form could reach back),
    not the conversation; a line a secret was found in is not remembered; short requests are not remembered."""
    writer = record_writer.Writer(tmp_path, 0, 1 << 30, [])
    probed = []
    token = "clawswe-token-of-the-conversation-0123"
    bodies = _conversation(4, {2: token})
    for n, body in enumerate(bodies):
        writer.call(_head("conv", token, n), body, ANSWER)
        probed.append(writer.scrubber.probed - sum(probed))
    writer.call(_head("short", token, 9), b'{"messages":[]}', ANSWER)
    probed.append(writer.scrubber.probed - sum(probed))
    writer.close()
    first, second, with_secret, after_secret, short = probed
    assert first > 20_000 and second < 3_500 and with_secret < 3_500  # the new turn is ~2 KB
    assert after_secret > 20_000  # the line with the secret in it was not remembered: the next is probed whole
    assert record_writer.Conversations(1 << 20).clean_prefix("x", (), b"{}") == 0
    assert [record_writer.shared_start(a, b) for a, b in [(b"abc", b"abd"), (b"abc", b"abc"), (b"", b"x")]] == \
        [0, 3, 0]
    long_a, long_b = b"x" * 5000 + b"a", b"x" * 5000 + b"b"
    assert 5000 - 64 < record_writer.shared_start(long_a, long_b) <= 5000


def test_a_redaction_next_to_an_escape_leaves_the_line_json(tmp_path):
    """A key that begins with a JSON escape's letter (an `nvapi-` key), written just after that escape (a line
    break before the key's rest), or that begins inside a unicode escape, was redacted into a backslash and
    `[redacted]`: the line was no longer JSON and was dropped when read (the call lost from the record)."""
    key, hexy = "nvapi-Kq8ZrT3vW9xY2aB5cD7eF1gH4", "00e9Kq8ZrT3vW9xY2aB5cD7e"
    writer = record_writer.Writer(tmp_path, 0, 64 << 20, [key, hexy])
    texts = [r"line\n" + key[1:], rf"x\\{key} y", r"caf\u" + hexy, r"\\\n" + key[1:]]  # as JSON text
    for n, text in enumerate(texts):
        body = b'{"messages": [{"role": "user", "content": "' + text.encode() + b'"}]}'
        json.loads(body)  # the harness sent JSON
        writer.call(_head("near", "clawswe-token-near", n), body, ANSWER)
    writer.close()
    lines = (tmp_path / "calls" / "near.jsonl").read_text().splitlines()
    contents = [json.loads(line)["request"]["messages"][0]["content"] for line in lines]
    assert contents == ["line[redacted]", "x\\[redacted] y", "caf[redacted]", "\\[redacted]"]


def test_the_request_goes_in_as_sent_on_one_line_and_odd_bodies_are_parsed(tmp_path):
    writer = record_writer.Writer(tmp_path, 0, 64 << 20, [])
    request = {"model": "m", "messages": [{"role": "user", "content": "two\nlines and é"}], "n": 1.5}
    bodies = [json.dumps(request, indent=2).replace("\n", "\r\n").encode(),  # pretty, CRLF: one line, same JSON
              json.dumps(request, ensure_ascii=False).encode(),
              b"\xef\xbb\xbf" + json.dumps(request).encode(),  # a byte-order mark: parsed and written again
              json.dumps(request).encode("utf-16"),
              b"null",  # a body the gateway left out
              b"\xff not json"]
    for n, body in enumerate(bodies):
        writer.call(_head("odd", "clawswe-token-xyz", n), body, ANSWER)
    writer.close()
    lines = (tmp_path / "calls" / "odd.jsonl").read_bytes().splitlines()
    assert len(lines) == len(bodies)
    got = [json.loads(line)["request"] for line in lines]
    assert got[:4] == [request] * 4 and got[4] is None and got[5] == "\ufffd not json"
    assert json.loads(lines[0])["response"]["text"] == "done"
    assert record_writer.one_line(bodies[1]) == bodies[1]  # as sent, not parsed and written again


def test_more_instances_than_open_files_keep_every_line_and_the_cap(tmp_path):
    writer = record_writer.Writer(tmp_path, 0, 4000, [])
    writer._max_open = 3
    body = json.dumps({"messages": [{"role": "user", "content": "x" * 800}]}).encode()
    for n in range(4):
        for i in range(7):
            writer.call(_head(f"i{i}", "clawswe-token-xyz", n), body, ANSWER)
    writer.close()
    for i in range(7):
        lines = _lines(tmp_path / "calls" / f"i{i}.jsonl")
        assert [bool(line.get("cut")) for line in lines] == [False, False, True, True]  # ~1 KB a line, a 4 KB cap (1 KB kept free)
        assert lines[2]["request"] is None and lines[2]["cut"]["request_bytes"] > 800


def test_frames_are_read_whole_across_the_pipes_pieces():
    one = frame({"instance_id": "a"}, b'{"x":1}', [b"data: {}\n\n", b"data: [DONE]\n\n"])
    two = frame({"instance_id": "b"}, b"null", [])
    pending = bytearray()
    got = []
    for piece in (one[:5], one[5:-3], one[-3:] + two[:14], two[14:]):
        pending += piece
        got += list(record_writer.frames(pending))
    assert got == [(fastjson.dumps({"instance_id": "a"}), b'{"x":1}', b"data: {}\n\ndata: [DONE]\n\n"),
                   (fastjson.dumps({"instance_id": "b"}), b"null", b"")]
    assert pending == bytearray()


@pytest.mark.timeout(60)
def test_the_writer_process_writes_what_it_read_before_it_waits_for_more(tmp_path):
    """Batched reads never hold a line back: with the pipe still open, every call sent is on disk; a frame that
    arrives in two pieces is written once whole; the end of the pipe ends the process."""
    proc = subprocess.Popen([sys.executable, "-m", "pytest_clawswe.gateway.record.writer", str(tmp_path), "0",
                             str(64 << 20)], stdin=subprocess.PIPE, env={**os.environ, "CLAWSWE_RECORDER_SECRETS": "[]"})
    assert proc.stdin is not None
    try:
        calls = [frame(_head("w", "clawswe-token-xyz", n), b'{"messages":[]}', [ANSWER]) for n in range(3)]
        proc.stdin.write(calls[0] + calls[1] + calls[2][:20])
        proc.stdin.flush()
        wait_until(lambda: len(read_calls(tmp_path, "w")) == 2, 30, "the writer wrote 2 calls", interval=0.05)
        time.sleep(0.3)
        assert len(read_calls(tmp_path, "w")) == 2  # the cut frame waits for its rest
        proc.stdin.write(calls[2][20:])
        proc.stdin.flush()
        wait_until(lambda: len(read_calls(tmp_path, "w")) == 3, 30, "the writer wrote 3 calls", interval=0.05)
    finally:
        proc.stdin.close()
        assert proc.wait(30) == 0
    assert [c["request_id"] for c in read_calls(tmp_path, "w")] == ["r0", "r1", "r2"]


@pytest.mark.parametrize("data", [
    b'data: {"a":1}\n\ndata: {"b":[1,2]}\n\ndata: [DONE]\n\n',
    b'event: message_start\ndata: {"type":"message_start"}\n\n: a comment\n\nevent: x\ndata: {"c":"data: y"}\n\n',
    b'data: {"a":\ndata: 1}\n\ndata: {"b":2}\n\n',  # one event's data over two lines, joined
    b'data: {"a":1}\nid: 3\ndata: {"c":1}\n\n',  # two data lines of one event around another field: not JSON
    b'data:{"a":1}\r\n\r\ndata:  {"b":2}\r\n\r\ndata: 5\n\ndata: {"torn":',
    b'data: {"a":1}\n\ndata: {not json}\n\ndata: {"c":3}\n\n',
    b'data: {"a":1}\n\ndata: {"b":[1,2]}\n\ndata: [DONE]\n\n\n',  # a blank line more at the end
    b'data: {"a":1}\n\n\ndata: {"b":2}\n\n',  # a blank line more between two events
    b'data: {"a":1\n\ndata: "b":2}\n\n',  # two halves of an object, neither JSON alone: not one object
    b'data: 5\n\ndata: [DONE]\n\ndata: {"c":1}\n\n',  # values that are not objects, [DONE] not last
    b'data:{"a":1}\n\ndata: {"b":2}\n\n',  # a data line without its space
    b'data: ',
])
def test_stream_events_are_read_as_one_by_one(data):
    """The quick reading of a stream's events (one parse for all) gives what reading each event alone gives."""
    assert _events(data) == _events_one_by_one(data.replace(b"\r\n", b"\n"))


def test_a_streamed_answer_with_a_null_choice_is_still_read_back():
    """A chunk whose choices hold a null (seen from OpenAI-compatible proxies) cost the call its line: the read-back
    raised (failed before: AttributeError)."""
    from pytest_clawswe.gateway.record.reassemble import reassemble

    data = (b'data: {"model":"m","choices":[null]}\n\n'
            b'data: {"choices":[{"delta":{"content":"done"},"finish_reason":"stop"}],"usage":{"total_tokens":3}}\n\n'
            b"data: [DONE]\n\n")
    turn = reassemble("chat", data, True)
    assert (turn["text"], turn["stop"], turn["model"], turn["usage"]) == ("done", "stop", "m", {"total_tokens": 3})


def _chat_walk(events: list[dict]) -> dict:
    """What a Chat Completions SDK puts together from a stream, one event after another (the reference the quick
    reading is held to)."""
    out = {"text": "", "reasoning": "", "tool_calls": [], "usage": None, "model": "", "stop": None}
    calls: dict = {}
    for data in events:
        if data.get("usage"):
            out["usage"] = data["usage"]
        if not out["model"]:
            out["model"] = str(data.get("model") or "")
        for choice in data.get("choices") or ():
            if not choice:
                continue
            delta = choice.get("delta") or {}
            if delta.get("content"):
                out["text"] += _text(delta["content"])
            if delta.get("reasoning_content") or delta.get("reasoning"):
                out["reasoning"] += _text(delta.get("reasoning_content") or delta.get("reasoning"))
            for part in delta.get("tool_calls") or ():
                slot = calls.setdefault(part.get("index", len(calls)), {"id": "", "name": "", "arguments": ""})
                fn = part.get("function") or {}
                slot["id"] = slot["id"] or str(part.get("id") or "")
                slot["name"] = slot["name"] or str(fn.get("name") or "")
                slot["arguments"] += _args_text(fn.get("arguments") or "")
            if choice.get("finish_reason"):
                out["stop"] = choice["finish_reason"]
        if isinstance(data.get("error"), dict):
            out["error"] = str(data["error"].get("message") or "error")[:500]
    out["tool_calls"] = [c for _, c in sorted(calls.items())]
    return out


_CHUNK = {"id": "c1", "object": "chat.completion.chunk", "created": 1, "model": "m"}


@pytest.mark.parametrize("events", [
    [{**_CHUNK, "choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}, "finish_reason": None}]},
     *({**_CHUNK, "choices": [{"index": 0, "delta": {"content": f"tok{i} "}, "finish_reason": None}]}
       for i in range(20)),
     {**_CHUNK, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]},
     {**_CHUNK, "choices": [], "usage": {"prompt_tokens": 3, "completion_tokens": 2}}],
    [{"model": "", "choices": [None]}, {"model": "m2", "choices": [{"delta": {"reasoning": "why "}}]},
     {"choices": [{"delta": {"reasoning_content": "so", "content": [{"type": "text", "text": "a"}, "b"]}}]},
     {"choices": [{"delta": {"content": None, "tool_calls": [
         {"index": 1, "id": "call_b", "function": {"name": "read", "arguments": "{\"pa"}},
         {"index": 0, "id": "call_a", "function": {"name": "shell", "arguments": ""}}]}}]},
     {"choices": [{"delta": {"tool_calls": [{"index": 1, "function": {"arguments": "th\": 1}"}},
                                            {"index": 0, "id": "late", "function": {"arguments": {"cmd": "ls"}}}]},
                   "finish_reason": "tool_calls"}], "usage": {"total_tokens": 9}},
     {"choices": [{"delta": {}, "finish_reason": None}], "usage": None},
     {"error": {"message": "overloaded"}}, {"error": {"message": "x" * 600}}],
    [{"choices": [{"index": 0, "delta": {"content": "a"}}, {"index": 1, "delta": {"content": "b"},
                                                             "finish_reason": "length"}]},
     {"choices": [{"index": 0, "delta": {"tool_calls": [{"function": {"name": "f"}}]}, "finish_reason": "stop"}]},
     {"choices": None}],
    [],
], ids=["text", "everything", "two-choices", "empty"])
def test_a_chat_stream_is_put_together_as_the_sdk_puts_it(events):
    """The reading of a Chat Completions stream (a comprehension per field, for speed) gives what the SDK's walk
    through the events gives: text, reasoning and tool calls in order, the last usage, finish reason and error,
    the first model."""
    data = b"".join(f"data: {json.dumps(e)}\n\n".encode() for e in events) + b"data: [DONE]\n\n"
    assert reassemble("chat", data, True) == _chat_walk(events)
    # the quick reading took it (None: it did not); a stream of [DONE] alone has no array to read
    assert _chat_stream_quick(data) == (_chat_walk(events) if events else None)
    assert _chat_stream(_events(data)) == _chat_walk(events)


@pytest.mark.parametrize("data", [
    b'data: {"choices":[false,{"delta":{"content":"a"}}]}\n\n',  # a choice that is neither an object nor null
    b'data: {"choices":[{"delta":false,"finish_reason":"stop"}]}\n\n',  # a delta that is not an object
    b'data: {"choices":false}\n\ndata: {"choices":[{"delta":{"content":"a"}}]}\n\n',
    b'data: 5\n\ndata: {"choices":[{"delta":{"content":"a"}}]}\n\n',  # an event that is not an object
    b'data: {"choices":[{"delta":{"content":"\\ud800 lone"}}]}\n\n',  # a lone surrogate: only json reads it
    b'data: {"usage":{"total_tokens":NaN},"choices":[]}\n\n',  # NaN: not JSON, which json still reads
    b': keep-alive\n\ndata: {"choices":[{"delta":{"content":"a"}}]}\n\n',  # a comment: not one array
    b'data: {"choices":[{"delta":{"content":"a"}}]}\r\n\r\ndata: {"choices":[{"delta":{"content":"b"}}]}\r\n\r\n',
], ids=["false-choice", "false-delta", "false-choices", "number-event", "lone-surrogate", "nan", "comment", "crlf"])
def test_a_chat_stream_the_quick_reading_does_not_fit_is_read_the_general_way(data):
    """A stream whose chunks the quick reading's types do not fit, or whose layout is not one `data:` line per
    event, is read as the general reading reads it (the quick one declines it: it does not guess)."""
    quick = _chat_stream_quick(data)
    general = _chat_stream(_events(data))
    assert reassemble("chat", data, True) == general
    if b"\r" in data:
        assert quick == general  # line ends are made one before the quick reading
    else:
        assert quick is None
    assert general["text"] in ("", "a", "ab", "\ud800 lone")
