"""A Docker client that reads the answer to an exec's start late, as a client thread descheduled under load does
(test helper). Nothing is mocked: the engine, the exec and the socket are real; only the moment this process reads
the engine's answer (its status line and headers) is held back until the command's output is there too.

The engine writes its `101 UPGRADED` answer, then starts the command and streams its output on the same
connection. http.client reads the status line and headers through a buffered reader that takes what the socket
holds (up to 8 KiB); when the command's output already arrived, it is taken along, and docker-py's stream reader,
reading the socket beneath that buffer, never sees it (pytest_clawswe/engine/docker/attach_stream.py)."""
from __future__ import annotations

import contextlib
import http.client
import socket
import struct
import threading
import time

import docker
from docker.api.exec_api import ExecApiMixin

UPGRADED = b"HTTP/1.1 101"


def _wait(sock: socket.socket, until: bytes | None, limit_s: float) -> None:
    """Wait, reading nothing, until the socket holds the 101 answer and the output: its first whole frame (`until`
    None) or the frames up to the one holding `until`."""
    deadline = time.monotonic() + limit_s
    while time.monotonic() < deadline:
        try:
            seen = sock.recv(65536, socket.MSG_PEEK)
        except (BlockingIOError, TimeoutError):
            seen = None
        if seen is not None:
            if seen and len(seen) < len(UPGRADED) and UPGRADED.startswith(seen):
                seen = None  # the status line is still arriving
            elif not seen.startswith(UPGRADED):
                return  # not an exec's answer (or the connection closed)
        if seen:
            head_end = seen.find(b"\r\n\r\n")
            frames = seen[head_end + 4:] if head_end >= 0 else b""
            if until is None and len(frames) >= 8 and len(frames) >= 8 + struct.unpack(">BxxxL", frames[:8])[1]:
                return
            if until is not None and until in frames:
                return
        time.sleep(0.005)


@contextlib.contextmanager
def late_answers(times: int | None = None, until: bytes | None = None, only=None, limit_s: float = 60.0):
    """While in the block, this process reads the answers to exec starts late: the first `times` of them (None:
    all), of the commands `only(cmd)` accepts (None: all). Yields the list of the answers held back."""
    original_begin = http.client.HTTPResponse.begin
    original_create, original_start = ExecApiMixin.exec_create, ExecApiMixin.exec_start
    chosen: set[str] = set()
    state = threading.local()
    held: list[str] = []

    def exec_create(self, container, cmd, *args, **kwargs):
        created = original_create(self, container, cmd, *args, **kwargs)
        if only is None or only(cmd):
            chosen.add(created["Id"])
        return created

    def exec_start(self, exec_id, *args, **kwargs):
        state.exec_id = exec_id if exec_id in chosen and (times is None or len(held) < times) else None
        try:
            return original_start(self, exec_id, *args, **kwargs)
        finally:
            state.exec_id = None

    def begin(self):
        exec_id = getattr(state, "exec_id", None)
        sock = getattr(getattr(self.fp, "raw", None), "_sock", None)
        if exec_id and isinstance(sock, socket.socket):
            timeout = sock.gettimeout()
            try:
                _wait(sock, until, limit_s)
                held.append(exec_id)
            finally:
                sock.settimeout(timeout)
        return original_begin(self)

    http.client.HTTPResponse.begin = begin
    ExecApiMixin.exec_create, ExecApiMixin.exec_start = exec_create, exec_start
    try:
        yield held
    finally:
        http.client.HTTPResponse.begin = original_begin
        ExecApiMixin.exec_create, ExecApiMixin.exec_start = original_create, original_start


def stock_client(client: docker.DockerClient) -> docker.DockerClient:
    """A client of the environment's engine (the one `client` reaches, in these tests) with docker-py's own
    APIClient, as shipped."""
    stock = docker.from_env(timeout=600)
    assert type(stock.api) is docker.APIClient
    return stock
