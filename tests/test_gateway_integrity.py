"""Issue 12, cases 9, 10, 12 and 13: what a hostile agent can do to the gateway, each against a real
gateway process on 127.0.0.1 (and a provider stub where forwarding is involved)."""
from __future__ import annotations

import base64
import http.client
import json
import sys
from pathlib import Path

import pytest

from pytest_clawswe.gateway import Upstream
from pytest_clawswe.gateway.upstream.redact import key_forms

sys.path.insert(0, str(Path(__file__).parent))
from gateway_stub import Stub, chat_answer, gateway_with_env, rss, sse, storm  # noqa: E402

pytestmark = pytest.mark.timeout(180)

KEY_ENV = "CLAWSWE_TEST_INTEGRITY_KEY"
# a key with the characters JSON encoders like to escape ("/") and base64 likes to show ("+")
KEY = "sk-clawswe/INTEGRITY+key/0123456789abcdefghij"
LIMIT_MB, INFLIGHT_MB = 2, 32  # small limits for this module's gateway, so the storm stays quick


def _answer(path, body, headers):
    model = body.get("model", "")
    if model == "echo-escaped":  # a provider whose JSON encoder writes "/" as "\/"
        text = json.dumps({"error": {"message": "bad key " + KEY}}).replace("/", "\\/")
        return 401, "application/json", text.encode()
    if model == "echo-b64":  # ...or that shows the Basic credential it derived from the key
        cred = base64.b64encode(f"user:{KEY}".encode()).decode()
        return 401, "application/json", json.dumps({"error": {"message": f"bad credential Basic {cred}"}}).encode()
    if model == "echo-b64-stream":
        bare = base64.b64encode(KEY.encode()).decode()
        return [sse({"choices": [{"index": 0, "delta": {"content": f"token {bare}"}}]}),
                sse({"choices": [], "usage": {"prompt_tokens": 5, "completion_tokens": 1}}), sse("[DONE]")]
    if model == "echo-after-escape":  # a text whose JSON escape \u00c2 runs into the key's base64 (c2st...)
        text = chr(0xC2) + base64.b64encode(KEY.encode()).decode()[2:]
        return 200, "application/json", json.dumps(chat_answer(model, content=text)).encode()
    if model in FORMS_ANSWERS:
        return FORMS_ANSWERS[model]()
    if path.endswith("/messages/count_tokens"):
        return 200, "application/json", b'{"input_tokens": 12}'
    return 200, "application/json", json.dumps(chat_answer(model)).encode()


def _escaped(text: str, every: int = 2) -> str:
    """`text` as JSON may spell it: every other character as a \\uXXXX escape."""
    return "".join(f"\\u{ord(c):04x}" if i % every == 0 else c for i, c in enumerate(text))


def _split(event: bytes, at: bytes) -> list[bytes]:
    """One SSE event sent as two writes, cut in the middle of `at`."""
    cut = event.index(at) + len(at) // 2
    return [event[:cut], event[cut:]]


ECHO_HEADERS = {"X-Echo-Key-Upper": KEY.upper(), "X-Echo-Key": KEY, "X-Provider-Debug": "harmless",
                "X-Request-Id": "req-123", "Retry-After": "7", "X-Ratelimit-Remaining-Requests": "99"}
_USAGE = {"prompt_tokens": 5, "completion_tokens": 1}
FORMS_ANSWERS = {  # issue 26 case 1: a provider that echoes the key in the forms redaction used to miss
    "echo-forms": lambda: (200, "application/json", json.dumps(chat_answer("m", content="K")).replace(
        '"K"', f'"{_escaped(KEY)} and {KEY.upper()} and {_escaped(KEY.upper(), 3)}"').encode(), ECHO_HEADERS),
    "echo-forms-error": lambda: (401, "application/json", ('{"error": {"message": "bad key %s"}}'
                                                           % _escaped(KEY.swapcase())).encode(), ECHO_HEADERS),
    "echo-forms-stream": lambda: ([
        *_split(sse({"choices": [{"index": 0, "delta": {"content": "key " + _escaped(KEY) + " ok"}}]}).replace(
            b"\\\\", b"\\"), b"\\u00"),
        *_split(sse({"choices": [{"index": 0, "delta": {"content": "KEY " + KEY.upper()}}]}), KEY.upper()[:20].encode()),
        sse({"choices": [], "usage": _USAGE}), sse("[DONE]")], ECHO_HEADERS),
}


@pytest.fixture(scope="module")
def stub():
    with Stub(_answer) as server:
        yield server


@pytest.fixture(scope="module")
def gateway(tmp_path_factory, stub):
    env = {KEY_ENV: KEY, "CLAWSWE_GATEWAY_MAX_BODY_MB": str(LIMIT_MB), "CLAWSWE_GATEWAY_INFLIGHT_MB": str(INFLIGHT_MB)}
    upstreams = [Upstream("stub", stub.url + "/v1", KEY_ENV), Upstream("down", "http://127.0.0.1:9/v1", KEY_ENV)]
    # one process: the memory bounds tested here are per worker process (RSS of one pid)
    with gateway_with_env(tmp_path_factory.mktemp("gateway"), upstreams, env, workers=1) as gw:
        yield gw


def _hostport(gw) -> tuple[str, int]:
    host, port = gw.url.split("//")[1].rsplit(":", 1)
    return host, int(port)


def post(gw, path, body, token, source="127.0.0.1", raw=None):
    """(status, parsed JSON or raw text) of one request, from the given loopback source address."""
    host, port = _hostport(gw)
    conn = http.client.HTTPConnection(host, port, timeout=60, source_address=(source, 0))
    data = raw if raw is not None else json.dumps(body).encode()
    conn.request("POST", path, data, {"Authorization": f"Bearer {token}", "Content-Type": "application/json"})
    resp = conn.getresponse()
    text = resp.read()
    conn.close()
    try:
        return resp.status, json.loads(text)
    except ValueError:
        return resp.status, text.decode(errors="replace")


CHAT = {"messages": [{"role": "user", "content": "hi"}]}
NOOP = {"mode": "noop"}


# ---------------------------------------------------------------------------------- case 9
def test_an_agent_chosen_model_name_is_bounded_on_disk_and_in_memory(gateway):
    """Today: 7 requests with a 50 MB model name made a 367 MB ledger and a 700 MB gateway."""
    token = gateway.client().register("bound__model", "scripted/noop", NOOP)
    huge = "m" * (1024 * 1024 + 500_000)  # 1.5 MB: under the body limit, so it is accepted
    before = rss(gateway.pid)["VmRSS"]
    for _ in range(20):
        status, body = post(gateway, "/v1/chat/completions", {"model": huge, **CHAT}, token)
        assert status == 200
        assert len(body["model"]) < 300  # the echoed name is bounded too
    ledger = Path(gateway.state_dir) / "usage" / "bound__model.jsonl"
    lines = ledger.read_text().splitlines()
    assert len(lines) == 20 and max(len(line) for line in lines) < 1000
    assert json.loads(lines[0])["requested_model"].startswith("m" * 200)
    grown = rss(gateway.pid)["VmRSS"] - before
    assert grown < 20 * 1024 * 1024, f"the gateway grew by {grown >> 20} MiB for 20 requests"
    records = gateway.client().requests(token)  # read back from disk
    assert len(records) == 20 and all(r["request_bytes"] > len(huge) for r in records)


def test_a_body_over_the_limit_is_refused_before_it_is_read(gateway):
    token = gateway.client().register("bound__body", "scripted/noop", NOOP)
    big = json.dumps({"model": "x" * (LIMIT_MB * 1024 * 1024), **CHAT}).encode()
    status, body = post(gateway, "/v1/chat/completions", None, token, raw=big)
    assert status == 413 and "limit of 2 MiB" in body["error"]["message"]
    status, body = post(gateway, "/v1/messages", None, token, raw=big)
    assert status == 413 and body["type"] == "error"
    assert gateway.client().usage(token).requests == 0  # nothing was answered, nothing is counted


def test_the_gateway_stays_up_and_bounded_under_200_concurrent_oversized_requests(gateway):
    token = gateway.client().register("bound__storm", "scripted/noop", NOOP)
    Path(f"/proc/{gateway.pid}/clear_refs").write_text("5")  # the peak (VmHWM) starts again from here
    base = rss(gateway.pid)["VmRSS"]
    statuses, mem = storm(gateway, token)
    assert 200 not in statuses and statuses.count(413) + statuses.count(503) > 0, statuses
    peak_growth = mem["VmHWM"] - base
    # at most INFLIGHT_MB of bodies are buffered at once, plus what each open connection's transport
    # reads ahead (measured: ~0.4-0.7 MiB with uvloop, ~0.25 MiB with asyncio's loop)
    assert peak_growth < (INFLIGHT_MB + 200) * 1024 * 1024, f"peak grew by {peak_growth >> 20} MiB"
    print(f"storm: peak RSS {mem['VmHWM'] >> 20} MiB (base {base >> 20} MiB), statuses "
          f"{ {s: statuses.count(s) for s in set(statuses)} }")
    assert post(gateway, "/v1/chat/completions", {"model": "m", **CHAT}, token)[0] == 200  # still serving
    assert gateway.client().usage(token).requests == 1


# ---------------------------------------------------------------------------------- case 10
def test_a_token_works_only_from_its_own_container_address(gateway):
    """Today any instance's token works from any container."""
    client = gateway.client()
    mine = client.register("bind__a", "scripted/noop", NOOP, address="127.0.0.2")
    other = client.register("bind__b", "scripted/noop", NOOP, address="127.0.0.3")
    assert post(gateway, "/v1/chat/completions", {"model": "m", **CHAT}, mine, source="127.0.0.2")[0] == 200
    # agent b (127.0.0.3) tries to spend as a, and a as b: both refused, nothing counted for the victim
    status, body = post(gateway, "/v1/chat/completions", {"model": "m", **CHAT}, mine, source="127.0.0.3")
    assert status == 401 and "token" in body["error"]["message"]
    assert post(gateway, "/v1/messages", {"model": "m", "max_tokens": 5, **CHAT}, other, source="127.0.0.2")[0] == 401
    assert post(gateway, "/v1/messages/count_tokens", {"model": "m", **CHAT}, mine, source="127.0.0.3")[0] == 401
    # nor read as another: the model listing answers as an unknown caller
    host, port = _hostport(gateway)
    conn = http.client.HTTPConnection(host, port, timeout=30, source_address=("127.0.0.3", 0))
    conn.request("GET", "/v1/models", headers={"Authorization": f"Bearer {mine}"})
    assert json.loads(conn.getresponse().read())["data"][0]["id"] == "clawswe"
    conn.close()
    assert client.usage(mine).requests == 1 and client.usage(other).requests == 0
    with pytest.raises(ValueError, match="not an IP address"):
        client.register("bind__c", "scripted/noop", NOOP, address="my-container")


def test_a_token_registered_without_an_address_works_from_anywhere(gateway):
    """Host-side callers (the tests, a harness on host networking) register without an address."""
    token = gateway.client().register("bind__any", "scripted/noop", NOOP)
    for source in ("127.0.0.1", "127.0.0.4"):
        assert post(gateway, "/v1/chat/completions", {"model": "m", **CHAT}, token, source=source)[0] == 200


# ---------------------------------------------------------------------------------- case 12
MALFORMED = [b"[1, 2]", b'"text"', b"42", b"null", b"{not json", b"\xff\xfe{}", b""]


@pytest.mark.parametrize("model", ["scripted/noop", "stub/model-x"])
def test_every_malformed_body_is_a_4xx_with_a_one_line_reason(gateway, model):
    """Today count_tokens with a JSON array answers 500 with a traceback in the log."""
    token = gateway.client().register(f"bad__{model.split('/')[0]}", model, NOOP if "scripted" in model else None)
    for path in ("/v1/chat/completions", "/v1/responses", "/v1/messages", "/v1/messages/count_tokens"):
        for raw in MALFORMED:
            status, body = post(gateway, path, None, token, raw=raw)
            assert 400 <= status < 500, (path, raw, status, body)
            message = body["error"]["message"]
            assert "\n" not in message and message.endswith("."), message
    assert gateway.client().usage(token).requests == 0
    assert "Traceback" not in (Path(gateway.state_dir) / "gateway.log").read_text()


def test_a_failed_upstream_call_is_recorded_but_is_no_agent_turn(gateway):
    token = gateway.client().register("bad__down", "down/model")
    status, body = post(gateway, "/v1/chat/completions", {"model": "m", **CHAT}, token)
    assert status == 502
    [record] = gateway.client().requests(token)
    assert record["status"] == 502 and "unreachable" in record["error"]
    assert gateway.client().usage(token).requests == 0
    from pytest_clawswe.gateway import read_usage

    assert read_usage(gateway.state_dir, "bad__down").requests == 0  # the files say the same


# ---------------------------------------------------------------------------------- case 13
def _decoded_b64_words(text: str) -> str:
    """Every base64-looking word of a text, decoded (so a key hidden in base64 shows up)."""
    import re

    out = []
    for word in re.findall(r"[A-Za-z0-9+/=_-]{16,}", text):
        for pad in ("", "=", "=="):
            try:
                out.append(base64.b64decode(word + pad, validate=False).decode("latin-1"))
                break
            except ValueError:
                continue
    return " ".join(out)


@pytest.mark.parametrize("model", ["echo-escaped", "echo-b64", "echo-b64-stream"])
def test_the_key_is_redacted_in_its_escaped_and_base64_forms(gateway, model):
    """Today only the exact bytes of the key are redacted."""
    token = gateway.client().register(f"redact__{model}", f"stub/{model}")
    stream = model.endswith("stream")
    status, body = post(gateway, "/v1/chat/completions", {"model": "m", "stream": stream, **CHAT}, token)
    text = body if isinstance(body, str) else json.dumps(body)
    assert "[redacted]" in text
    for form in key_forms(KEY):
        assert form.decode() not in text
    assert KEY not in text.replace("\\/", "/") and KEY not in _decoded_b64_words(text)


def _request(gw, path, body, token, headers=None):
    """(status, response headers, body text) of one request."""
    host, port = _hostport(gw)
    conn = http.client.HTTPConnection(host, port, timeout=60)
    conn.request("POST", path, json.dumps(body).encode(),
                 {"Authorization": f"Bearer {token}", "Content-Type": "application/json", **(headers or {})})
    resp = conn.getresponse()
    text = resp.read().decode(errors="replace")
    conn.close()
    return resp.status, resp.getheaders(), text


def _unescaped(text: str) -> str:
    """The text with every JSON \\uXXXX escape decoded, lower-cased: what an agent would read."""
    import re

    return re.sub(r"\\u([0-9a-fA-F]{4})", lambda m: chr(int(m.group(1), 16)), text).lower()


@pytest.mark.parametrize("model", ["echo-forms", "echo-forms-error", "echo-forms-stream"])
def test_the_key_is_redacted_upper_cased_escaped_and_in_headers(gateway, model):
    """Issue 26 case 1. Today the upper-cased key in a response header and the \\u-escaped key in the body
    (streamed, or split across chunks) reach the container."""
    token = gateway.client().register(f"forms__{model}", f"stub/{model}")
    stream = model.endswith("stream")
    status, headers, text = _request(gateway, "/v1/chat/completions", {"model": "m", "stream": stream, **CHAT}, token)
    assert status == (401 if model.endswith("error") else 200)
    seen = "\n".join(f"{k}: {v}" for k, v in headers) + "\n" + text
    assert KEY.lower() not in _unescaped(seen), seen
    assert "[redacted]" in text
    names = {k.lower() for k, _ in headers}
    # only what a client needs of the provider's headers comes through
    assert {"x-echo-key-upper", "x-echo-key", "x-provider-debug"}.isdisjoint(names), names
    assert {"x-request-id", "retry-after", "x-ratelimit-remaining-requests"} <= names, names


# ---------------------------------------------------------------------------------- issue 26 case 4
def test_a_request_with_a_huge_header_is_one_line_in_the_log(gateway):
    """Today a 100 KB header puts a 9-line aiohttp traceback into gateway.log at ERROR."""
    import socket

    log = Path(gateway.state_dir) / "gateway.log"
    before = len(log.read_text().splitlines())
    host, port = _hostport(gateway)
    with socket.create_connection((host, port), timeout=30) as sock:
        sock.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * 100_000
                     + b"\r\nContent-Length: 2\r\n\r\n{}")
        answer = sock.recv(65536)
    assert answer.split(b" ")[1].startswith(b"4"), answer[:200]
    import time

    time.sleep(0.5)  # the log line is written after the answer
    new = log.read_text().splitlines()[before:]
    assert len(new) == 1, new
    assert "Traceback" not in new[0] and "ERROR" not in new[0], new
    assert "bad request" in new[0].lower(), new


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "asked-to-stream"])
def test_an_answer_redacted_right_after_an_escape_is_still_json(gateway, stream):
    """A provider's JSON whose escape `\\u00c2` is followed by the rest of the key's base64: the form found
    from inside the escape was replaced, the escape's `\\u00` was left before [redacted], and the harness got an
    answer that is not JSON (a 200 it cannot read)."""
    token = gateway.client().register(f"escape__{stream}", "stub/echo-after-escape")
    status, headers, text = _request(gateway, "/v1/chat/completions", {"model": "m", "stream": stream, **CHAT}, token)
    assert status == 200, text
    if text.startswith("data:"):  # (a provider's one-piece answer to a stream request is passed on as it came)
        content = "".join(c["delta"].get("content") or "" for line in text.splitlines() if line.startswith("data: {")
                          for c in json.loads(line[6:])["choices"])
    else:
        content = json.loads(text)["choices"][0]["message"]["content"]
    assert "[redacted]" in content
    assert KEY.lower() not in _unescaped(text) and base64.b64encode(KEY.encode()).decode() not in content
