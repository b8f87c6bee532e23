"""A command in a pod's container through the API's exec (a websocket, the channel protocol kubectl speaks).

The output is read into bounded tails while it streams (an agent that prints without end costs at most the
cap). Input is sent as one known number of bytes that the command reads with `head -c N`: the v4 channel
protocol (the only one before Kubernetes 1.30) cannot close stdin, so the reader must know where it ends.
The exit status comes on the error channel; a stream that ends without one was cut (the node or the API server
went away) and is an InfraError, never an exit code.
"""
from __future__ import annotations

import io
import json
import threading
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote, urlencode

from pytest_clawswe.engine.workspace import OutputTail
from pytest_clawswe.errors import InfraError

STDOUT, STDERR, ERROR = 1, 2, 3
STDIN_CHUNK = 256 * 1024  # bytes per websocket frame of input


@dataclass
class Stream:
    """One exec: its websocket, the output read so far and, once it ended, its exit code."""

    ws: Any  # the kubernetes client's WSClient
    out: OutputTail
    err: OutputTail  # the same OutputTail as `out` when the streams are merged
    code: int | None = None
    ended: threading.Event = field(default_factory=threading.Event)
    failure: str = ""  # why it ended without an exit status


def open_exec(cluster, namespace: str, pod: str, container: str, argv: list[str], cap: int,
              stdin=None, merge: bool = False) -> Stream:
    """Start `argv` in the container; the output is read by pump() (or run()). `stdin`: bytes or a file object,
    sent whole before this returns (the command must know its length: see the module)."""
    from kubernetes.stream.ws_client import WSClient, get_websocket_url

    query = [("command", a) for a in argv] + [("container", container), ("stdout", "true"),
                                              ("stderr", "true"), ("stdin", "true" if stdin is not None else "false"),
                                              ("tty", "false")]
    url = (f"{cluster.server}/api/v1/namespaces/{quote(namespace)}/pods/{quote(pod)}/exec?"
           f"{urlencode(query)}")
    try:
        ws = WSClient(cluster.api_client.configuration, get_websocket_url(url), cluster.auth_headers(),
                      capture_all=False, binary=True)
    except Exception as exc:  # noqa: BLE001  websocket's handshake errors carry the API server's answer
        raise InfraError(f"exec in pod {pod} failed: {str(exc)[:300]}") from None
    out = OutputTail(cap)
    stream = Stream(ws, out, out if merge else OutputTail(cap))
    if stdin is not None:
        source = io.BytesIO(stdin) if isinstance(stdin, (bytes, bytearray)) else stdin
        try:
            for chunk in iter(lambda: source.read(STDIN_CHUNK), b""):
                ws.write_channel(0, bytes(chunk))
        except Exception as exc:  # noqa: BLE001  the socket went away
            ws.close()
            raise InfraError(f"sending input to pod {pod} failed: {exc}") from None
    return stream


def pump(stream: Stream) -> None:
    """Read the exec's output until it ends; sets stream.code (or stream.failure) and stream.ended."""
    ws = stream.ws
    status = b""
    try:
        while ws.is_open():
            ws.update(timeout=1)
            stream.out.add(ws.read_channel(STDOUT))
            stream.err.add(ws.read_channel(STDERR))
            status += ws.read_channel(ERROR) or b""
        stream.out.add(ws.read_channel(STDOUT))
        stream.err.add(ws.read_channel(STDERR))
        status += ws.read_channel(ERROR) or b""
    except Exception as exc:  # noqa: BLE001  the socket broke: a cut stream
        stream.failure = f"{type(exc).__name__}: {exc}"
    finally:
        try:
            ws.close()
        except Exception:  # noqa: BLE001
            pass
        if not stream.failure:
            code, message = exit_code(status)
            if code is None:
                stream.failure = message
            else:
                stream.code = code
                stream.err.add(message.encode())  # a command that could not start: the runtime's words
        stream.ended.set()


def exit_code(status: bytes) -> tuple[int | None, str]:
    """(exit code, "") from the error channel's Status; (None, why) when there is none (a cut stream).

    A command that could not start is answered as Docker's exec answers it: 126, or 127 when it was not found,
    with the runtime's message as its output (exit_message)."""
    if not status.strip():
        return None, "the exec stream ended without an exit status (the node or the API server went away)"
    try:
        answer = json.loads(status)
    except ValueError:
        return None, f"the exec stream ended with an unreadable status: {status[:200]!r}"
    if answer.get("status") == "Success":
        return 0, ""
    for cause in (answer.get("details") or {}).get("causes") or []:
        if cause.get("reason") == "ExitCode":
            try:
                return int(cause.get("message")), ""
            except (TypeError, ValueError):
                break
    message = answer.get("message") or ""
    lowered = message.lower()
    if "container not found" in lowered or "cannot exec in a stopped" in lowered or "not running" in lowered:
        return None, message  # the container is gone: the sandbox, not the command
    if "not found" in lowered or "no such file" in lowered:
        return 127, message
    return 126, message


def run(cluster, namespace: str, pod: str, container: str, argv: list[str], cap: int, stdin=None,
        merge: bool = False) -> Stream:
    """Run to the end in this thread; InfraError when the stream was cut."""
    stream = open_exec(cluster, namespace, pod, container, argv, cap, stdin, merge)
    pump(stream)
    if stream.code is None:
        raise InfraError(f"exec in pod {pod} failed: {stream.failure}")
    return stream



def stdout_chunks(stream: Stream):
    """The exec's standard output, frame by frame as it comes (a tar of a folder out of a pod: nothing is held but
    the frame being read); standard error is dropped. Ends with the stream; a cut shows in what was read."""
    ws = stream.ws
    while True:
        is_open = ws.is_open()
        if is_open:
            try:
                ws.update(timeout=1)
            except Exception:  # noqa: BLE001  the socket broke: what came is all there is
                is_open = False
        data = ws.read_channel(STDOUT)
        if data:
            yield data
        ws.read_channel(STDERR)
        if not is_open:
            return
