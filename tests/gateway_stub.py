"""A provider stand-in on 127.0.0.1 for the gateway tests: it records every request it receives
(path, headers, JSON body) and answers with what the test's `answer(path, body)` returns:
(status, content_type, bytes[, extra headers]) or a list of SSE events (bytes) to stream, each written and
flushed on its own (so one event may be sent in pieces), optionally as (events, extra headers)."""
from __future__ import annotations

import asyncio
import contextlib
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest


class ProviderStandIn:
    """A provider for whole runs on a Stub: a subclass answers the model calls (`_answer_call(path, body,
    headers)`, the Stub's answer forms); Anthropic's token count is answered here, alike for all."""

    def __init__(self) -> None:
        self.stub = Stub(self._answer)

    @property
    def url(self) -> str:
        return self.stub.url

    def __enter__(self):
        self.stub.__enter__()
        return self

    def __exit__(self, *exc) -> None:
        self.stub.__exit__(*exc)

    def _answer(self, path, body, headers):
        if path.endswith("/count_tokens"):
            return 200, "application/json", b'{"input_tokens": 100}'
        return self._answer_call(path, body, headers)

    def _answer_call(self, path, body, headers):
        raise NotImplementedError


@contextlib.contextmanager
def gateway_with_env(state_dir: Path, upstreams: list, env: dict[str, str | None], **start):
    """A gateway process started with `env` in its environment (a variable None: not there), as the tests'
    module-scoped `gateway` fixtures want it; stopped, and the test process's environment put back, at the end."""
    from pytest_clawswe.gateway import GatewayProcess

    with pytest.MonkeyPatch.context() as patch:
        for name, value in env.items():
            if value is None:
                patch.delenv(name, raising=False)
            else:
                patch.setenv(name, value)
        with GatewayProcess.start(state_dir, upstreams, **start) as gw:
            yield gw


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.0"  # the body ends when the connection closes: simplest for streams

    def log_message(self, *args):
        pass

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self.server.seen.append({"path": self.path, "headers": {k.lower(): v for k, v in self.headers.items()},
                                 "body": body})
        answer = self.server.answer(self.path, body, self.headers)
        extra: dict = {}
        if isinstance(answer, tuple) and len(answer) == 2:
            answer, extra = answer
        if isinstance(answer, list):
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            for name, value in extra.items():
                self.send_header(name, value)
            self.end_headers()
            for event in answer:
                self.wfile.write(event)
                self.wfile.flush()
            return
        status, ctype, data, *more = answer  # (status, content type, bytes[, headers])
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        for name, value in (more[0] if more else {}).items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


class Stub:
    def __init__(self, answer) -> None:
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        self.server.daemon_threads = True
        self.server.seen = []
        self.server.answer = answer
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.1}, daemon=True)

    @property
    def seen(self) -> list[dict]:
        return self.server.seen

    def __enter__(self) -> "Stub":
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()


def sse(data, event=None) -> bytes:
    text = data if isinstance(data, str) else json.dumps(data)
    return (f"event: {event}\n" if event else "").encode() + f"data: {text}\n\n".encode()


def chat_answer(model: str, content="hi", tool_calls=None, reasoning=None, usage=None) -> dict:
    message = {"role": "assistant", "content": content}
    if tool_calls:
        message["tool_calls"] = tool_calls
    if reasoning is not None:
        message["reasoning_content"] = reasoning
    return {"id": "up-1", "object": "chat.completion", "created": 1, "model": model,
            "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls" if tool_calls else "stop"}],
            "usage": usage or {"prompt_tokens": 100, "completion_tokens": 10, "total_tokens": 110,
                               "prompt_tokens_details": {"cached_tokens": 40}}}


# ---------------------------------------------------------------------- a storm of oversized requests
def rss(pid: int) -> dict[str, int]:
    """VmRSS and VmHWM (the peak) of a process, in bytes."""
    fields = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("VmRSS", "VmHWM"):
            fields[key] = int(value.split()[0]) * 1024
    return fields


async def _oversized(host, port, token, size, chunked, chunk) -> int:
    """One oversized request, sent as it is read: the status the gateway answered, 0 if it hung up."""
    reader, writer = await asyncio.open_connection(host, port)
    head = (f"POST /v1/chat/completions HTTP/1.1\r\nHost: {host}\r\nAuthorization: Bearer {token}\r\n"
            "Content-Type: application/json\r\n")
    head += "Transfer-Encoding: chunked\r\n\r\n" if chunked else f"Content-Length: {size}\r\n\r\n"
    status = 0
    try:
        writer.write(head.encode() + (b"%x\r\n" % 10 + b'{"model":"' + b"\r\n" if chunked else b'{"model":"'))
        sent = 10
        while sent < size:
            writer.write(b"%x\r\n%b\r\n" % (len(chunk), chunk) if chunked else chunk)
            await writer.drain()
            sent += len(chunk)
        line = await asyncio.wait_for(reader.readline(), 60)
        status = int(line.split()[1]) if line else 0
    except (ConnectionError, asyncio.IncompleteReadError):
        try:
            line = await asyncio.wait_for(reader.readline(), 5)
            status = int(line.split()[1]) if line else 0
        except (ConnectionError, asyncio.TimeoutError, IndexError, ValueError):
            pass
    finally:
        writer.close()
    return status


def storm(gw, token, n=200, size=8 * 1024 * 1024) -> tuple[list[int], dict]:
    """n concurrent oversized requests (half with a Content-Length, half chunked): (statuses, peak RSS)."""
    host, port = gw.url.split("//")[1].rsplit(":", 1)
    port = int(port)
    chunk = b"a" * (256 * 1024)

    async def run():
        return await asyncio.gather(*[_oversized(host, port, token, size, i % 2 == 1, chunk) for i in range(n)])

    statuses = asyncio.run(run())
    return statuses, rss(gw.pid)
