"""The gateway's record of every model call: DIR/calls/<instance_id>.jsonl (worker k > 0 of several:
<instance_id>@w<k>.jsonl), one JSON line per request, from which trajectories are built (pytest_clawswe/trajectory).

A line is the call's ledger line (same `request_id`, so each call pairs with its line in DIR/usage/) plus the
request body as the harness sent it and the answer as the harness received it, put back together into one turn
(text, reasoning, tool calls, usage: reassemble.py). No headers are kept, and every line is scrubbed of the
provider keys, the instance's gateway token and the admin token in every form redact.py knows.

Off the request's path and out of the gateway's process: `submit` (called once the answer went out) hands the
raw request bytes, the bytes sent back and the ledger line to a writer process (writer.py) through a
pipe, one write on the event loop for the calls of a few milliseconds (BATCH_S); the writer reads the answer
back, redacts and appends (every call it has read is flushed before it waits for more: an interrupted run keeps
every call already recorded). The gateway's
own interpreter does no JSON, redaction or disk work for it beyond the call's header, so the record takes
little CPU time (or interpreter lock) from the answers.

Bounded: at most CLAWSWE_RECORD_MAX_MB (default 64) per instance and gateway process; past it a line keeps
its ledger fields and the answer (if under 64 KiB) but not the request body, and says what was cut in `cut`
({"request_bytes": n, "response_bytes": m}). The gateway's memory is bounded too: while more than 2 MiB wait
for the writer (or a request is over 4 MiB), calls go without their request body (`cut` says so), and past
16 MiB they are not recorded (counted as not recorded in the trajectory). CLAWSWE_RECORD_CALLS=0 turns
recording off.
"""
from __future__ import annotations

import asyncio
import json
import logging
import os
import secrets
import struct
import subprocess
import sys
from pathlib import Path

from pytest_clawswe.files import safe_name
from pytest_clawswe.gateway import fastjson
from pytest_clawswe.gateway.record.ledger import read_lines

log = logging.getLogger("clawswe.gateway")

DIR_NAME = "calls"
MAX_BEHIND = 16 * 1024 * 1024  # bytes queued for the writer before calls are dropped
BODIES_BEHIND = 2 * 1024 * 1024  # bytes queued past which a call goes without its request body (memory bound)
MAX_BODY = 4 * 1024 * 1024  # a request body over this is recorded without it (an agent-chosen 1.5 MB model name...)
PIPE_SIZE = 1024 * 1024
# calls are handed to the writer in batches: the first call of a batch waits at most BATCH_S (its answer is out
# already: only its line on disk waits), a batch over BATCH_BYTES goes at once. (50 ms batches took the writer ~20%
# less CPU a call at 1,800 calls/s on one worker, but not at the 2 workers' ceiling, where the writer, niced, runs
# late and reads large batches anyway, and there it fell behind in bursts: 11 streamed calls cut in 47,000)
BATCH_S = 0.004
BATCH_BYTES = 256 * 1024
SECRETS_ENV = "CLAWSWE_RECORDER_SECRETS"  # how the writer learns the process-wide secrets (never argv)


def enabled() -> bool:
    return os.environ.get("CLAWSWE_RECORD_CALLS", "1").strip().lower() not in ("0", "no", "off", "false")


def cap_bytes() -> int:
    return int(float(os.environ.get("CLAWSWE_RECORD_MAX_MB", "64")) * 1024 * 1024)


def calls_path(state_dir: str | Path, instance_id: str, worker: int = 0) -> Path:
    suffix = f"@w{worker}" if worker else ""
    return Path(state_dir) / DIR_NAME / f"{safe_name(instance_id)}{suffix}.jsonl"


def calls_paths(state_dir: str | Path, instance_id: str) -> list[Path]:
    first = calls_path(state_dir, instance_id)
    return [first, *sorted(first.parent.glob(f"{safe_name(instance_id)}@w*.jsonl"))]


def read_calls(state_dir: str | Path, instance_id: str, attempt: int | None = None) -> list[dict]:
    """The recorded calls of one instance (all attempts, or one), every worker's file, in time order; a torn
    line (a process killed mid-write) is skipped."""
    return read_lines(calls_paths(state_dir, instance_id), attempt)


def frame(head: dict, request: bytes, sent: list[bytes]) -> bytes:
    """One call on the pipe: three lengths, then the header (JSON), the request and the answer as sent."""
    return b"".join(frame_parts(head, request, sent))


def frame_parts(head: dict, request: bytes, sent: list[bytes]) -> list[bytes]:
    header = fastjson.dumps(head)
    return [struct.pack(">III", len(header), len(request), sum(map(len, sent))), header, request, *sent]


class Recorder:
    """One per gateway process. `new_id()` names a request (also written into its ledger line); `submit()`
    hands the call over once its answer went out."""

    def __init__(self, state_dir: str | Path, worker: int = 0, on: bool | None = None,
                 secrets_: tuple[str, ...] = (), upstreams=()) -> None:
        self.state_dir = Path(state_dir)
        self.worker = worker
        self.on = enabled() if on is None else on
        self.secrets = [s for s in secrets_ if s]  # process-wide ones (the admin token)
        self.upstreams = list(upstreams)  # every provider key the gateway holds is scrubbed from every line
        self._prefix = f"{secrets.token_hex(3)}w{worker}-"  # unique across processes and restarts
        self._count = 0
        self._process: subprocess.Popen | None = None
        self._transport: asyncio.WriteTransport | None = None
        self._waiting: list[bytes] | None = None  # frames submitted while the pipe is being connected
        self._batch: list[bytes] = []  # the pieces of the frames of this turn of the event loop
        self._batched = 0
        self._timer: asyncio.TimerHandle | None = None  # the batch's write, due BATCH_S after its first call
        self.dropped = 0
        if self.on:  # started now, not on the first request's path
            self._spawn()

    def new_id(self) -> str:
        self._count += 1
        return f"{self._prefix}{self._count}"

    def submit(self, reg, protocol: str, raw: bytes, sent, record: dict) -> None:
        """Queue one call: `raw` the request as it came, `sent` the answer's bytes as the harness got them
        (bytes, a list of chunks, or None), `record` its ledger line. Never blocks."""
        if not self.on:
            return
        try:
            data = sent if isinstance(sent, list) else [sent] if isinstance(sent, bytes) else []
            head = {"instance_id": reg.instance_id, "protocol": protocol, "record": record,
                    "secrets": [reg.token, reg.upstream.key() if reg.upstream is not None else ""]}
            if self._behind() > BODIES_BEHIND:
                head["cut"] = {"request_bytes": len(raw), "response_bytes": 0, "why": "the writer was behind"}
                raw = b"null"  # the gateway's memory stays bounded; the step, its answer and tokens are kept
            elif len(raw) > MAX_BODY:
                head["cut"] = {"request_bytes": len(raw), "response_bytes": 0,
                               "why": f"the request is over {MAX_BODY >> 20} MiB"}
                raw = b"null"
            self._send(frame_parts(head, raw, data))
        except Exception:  # noqa: BLE001 - the record must never cost the agent its answer
            log.exception("could not record a call of %s", reg.instance_id)

    def _behind(self) -> int:
        """Bytes handed over and not yet taken by the writer (in the pipe's buffer, or batched for it)."""
        return (self._transport.get_write_buffer_size() if self._transport is not None else 0) + self._batched

    def _send(self, parts: list[bytes]) -> None:
        if self._transport is None:
            if self._waiting is None:
                self._waiting = []
                asyncio.get_running_loop().create_task(self._start())
            self._waiting.append(b"".join(parts))
            return
        if self._transport.is_closing():
            return
        if self._behind() > MAX_BEHIND:
            self.dropped += 1
            if self.dropped in (1, 100, 10000):
                log.warning("the call recorder is %d MiB behind: %d call(s) not recorded",
                            MAX_BEHIND // 2**20, self.dropped)
            return
        # the calls answered within BATCH_S go in one write: one system call and one wake-up of the writer for all
        # of them, and one copy of their bytes (at a busy gateway's pace a turn of the event loop answers one or two)
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # not on the loop (the gateway stopping): at once
            loop = None
        if not self._batch and loop is not None:
            self._timer = loop.call_later(BATCH_S, self._write_batch)
        self._batch += parts
        self._batched += sum(map(len, parts))
        if loop is None or self._batched > BATCH_BYTES:
            self._write_batch()

    def _write_batch(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        batch, self._batch, self._batched = self._batch, [], 0
        if batch and self._transport is not None and not self._transport.is_closing():
            self._transport.write(b"".join(batch))

    def _spawn(self) -> None:
        env = {**os.environ, SECRETS_ENV: json.dumps(
            [*self.secrets, *(u.key() for u in self.upstreams if u.key())])}
        try:
            self._process = subprocess.Popen(
                [sys.executable, "-m", "pytest_clawswe.gateway.record.writer", str(self.state_dir),
                 str(self.worker), str(cap_bytes())], stdin=subprocess.PIPE, env=env, close_fds=True)
        except OSError:
            log.exception("the call recorder could not start: calls are not recorded")
            self.on = False
            return
        try:
            import fcntl

            assert self._process.stdin is not None
            fcntl.fcntl(self._process.stdin.fileno(), getattr(fcntl, "F_SETPIPE_SZ", 1031), PIPE_SIZE)
        except (OSError, ImportError):
            pass  # the default pipe size: only more wake-ups

    async def _start(self) -> None:
        try:
            assert self._process is not None and self._process.stdin is not None
            self._transport, _ = await asyncio.get_running_loop().connect_write_pipe(
                asyncio.Protocol, self._process.stdin)
        except Exception:  # noqa: BLE001 - the record is lost, the answers are not
            log.exception("the call recorder could not start: calls are not recorded")
            self.on = False
            return
        waiting, self._waiting = self._waiting or [], None
        for data in waiting:
            self._send([data])

    def close(self, timeout: float = 30.0) -> None:
        """Let the writer finish what it has (the gateway is stopping)."""
        self._write_batch()
        if self._transport is not None:
            self._transport.close()
        if self._process is not None:
            if self._process.stdin is not None and not self._process.stdin.closed:
                try:
                    self._process.stdin.close()
                except OSError:
                    pass
            try:
                self._process.wait(timeout)
            except subprocess.TimeoutExpired:
                self._process.kill()
        self._transport = self._process = None
