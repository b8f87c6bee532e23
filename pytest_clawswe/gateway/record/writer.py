"""The call recorder's writer process (calls.py starts one per gateway process): reads calls from its stdin
(calls.frame), reads each answer back into one turn (reassemble.py), redacts every secret it knows in every
form (upstream/redact.py) and appends one line per call to DIR/calls/<instance>[@w<k>].jsonl, until its stdin ends.

    python -m pytest_clawswe.gateway.record.writer STATE_DIR WORKER CAP_BYTES

It reads whatever the pipe holds at once and writes those calls' lines with one flush per file before it waits
for more: every call it has read is on disk whenever it waits (an interrupted run keeps every call recorded so
far; a line torn by a killed writer is skipped when read), and a busy gateway costs it one read and one flush
per batch rather than per call. The request goes into its line as the bytes the harness sent (the gateway parsed
them: they are JSON), only put on one line, not parsed and written again.
"""
from __future__ import annotations

import gc
import json
import os
import struct
import sys
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path

from pytest_clawswe.files import ends_with_newline
from pytest_clawswe.gateway import fastjson
from pytest_clawswe.gateway.record.calls import SECRETS_ENV, calls_path
from pytest_clawswe.gateway.record.reassemble import reassemble
from pytest_clawswe.gateway.upstream import redact

SLIM_RESPONSE_BYTES = 64 * 1024  # past the cap, an answer up to this size is still kept
MAX_OPEN = 2048  # files kept open: one per instance of the gateway process (300 agents at once: 300 files)
READ_SIZE = 1024 * 1024  # at most this much read from the pipe at once (the pipe's own size)
MAX_REDACTORS = 512  # whole redactors kept: built only for a line that may hold a secret's loose form
MAX_REMEMBERED = 64 * 1024 * 1024  # the instances' last requests kept (300 agents of 60 KB: 18 MB)
MIN_REMEMBERED = 4096  # a shorter request is probed whole: its probes cost what a probe costs to start
_FRAME = struct.Struct(">III")


@dataclass(frozen=True)
class _Plan:
    keys: tuple[tuple[str, tuple[bytes, ...]], ...]  # each secret (once, none empty) and its probes
    probes: tuple[bytes, ...]  # all of them, in that order
    exact: int  # the most bytes one of the probes spans
    loose: int  # the most bytes any form of the secrets spans (an escaped one)


class Scrubber:
    """Every secret out of a line, as redact.Redactor scrubs it, with the work shared across a line's secrets.

    A Redactor costs milliseconds to build (its regular expressions) and a run registers a token per instance
    and attempt: one is built only for a line that may hold its secret, which is when one of the secret's exact
    forms in lower case is in the line's lower case (every exact form is found so, and the key in any other letter
    case), or in the lower case of the line with its JSON escapes of ASCII characters read (`\\u00..`, `\\/`: the
    key with some of its characters so escaped, which the Redactor also finds): without either, no form can match,
    so a Redactor would leave the line as it is. (A line with escapes but no secret, as most are whose tool output
    has terminal colours in it, `\\u001b`, builds none: building every secret's Redactor for it cost ~12 ms each.)

    `clean` is a span of the line known to hold no form of these secrets (the part of a request that the same
    conversation's previous call already showed clean: Conversations). A form that is in the line runs outside
    it, so it lies whole within `reach` bytes of the span's ends: only the rest of the line is looked at. That
    makes a call's probes cost what its new messages are long, not the whole conversation (12 probes of a 40 KB
    request cost some 150 us)."""

    def __init__(self) -> None:
        self._redactors: OrderedDict[str, redact.Redactor] = OrderedDict()
        self._plans: dict[tuple[str, ...], _Plan] = {}
        self.probed = 0  # bytes the probes have looked at: the measure of its work

    def scrub(self, line: bytes, secrets: tuple[str, ...], clean: tuple[int, int] = (0, 0)) -> bytes:
        plan = self._plans.get(secrets) or self._plan(secrets)
        if not plan.keys:
            return line
        start, end = clean
        probed, escapes = line, line  # what the probes look at, and where an escape could be part of a form
        if end > start:
            probed, escapes = _outside(line, start, end, plan.exact), _outside(line, start, end, plan.loose)
        lowered = probed.lower()
        self.probed += len(lowered)
        if not redact.may_have_escapes(escapes):  # the common line: one flat loop over every key's probes
            for probe in plan.probes:
                if probe in lowered:
                    break
            else:
                return line
            read = b""
        else:
            read = redact.read_escapes(escapes).lower()  # the line's escapes read, lower-cased
            self.probed += len(read)
        for secret, probes in plan.keys:
            hit = bool(read) and ('"' in secret or "\\" in secret)  # (an escape of these is not read: any may be it)
            for probe in probes:  # (a loop, not any(): this runs for every secret of a line that may hold one)
                if hit:
                    break
                hit = probe in lowered or probe in read
            if hit:
                # a line no Redactor changed is the JSON it was (the gateway's own; the harness's, parsed; ours)
                line = self._redactor(secret).scrub_wire(line)
        return line

    def _plan(self, secrets: tuple[str, ...]) -> _Plan:
        """What a line is probed with for these secrets, worked out once for them (a run's calls repeat a few
        tuples: the instance's token and key, the process's secrets)."""
        if len(self._plans) > MAX_REDACTORS * 8:
            self._plans.clear()
        keys = tuple((s, redact.probe_forms(s)) for s in dict.fromkeys(secrets) if s)
        probes = tuple(p for _, forms in keys for p in forms)
        plan = self._plans[secrets] = _Plan(keys=keys, probes=probes, exact=max(map(len, probes), default=0),
                                            loose=max((redact.reach(s) for s, _ in keys), default=0))
        return plan

    def _redactor(self, secret: str) -> redact.Redactor:
        found = self._redactors.pop(secret, None) or redact.Redactor(secret)
        self._redactors[secret] = found  # the most recently used last
        if len(self._redactors) > MAX_REDACTORS:
            self._redactors.popitem(last=False)
        return found


def _outside(line: bytes, start: int, end: int, margin: int) -> bytes:
    """`line` less its span start..end, kept `margin` bytes into it at each end (a NUL between the two parts: no
    form holds one, so none matches across); the whole line when the span is too short to leave anything out."""
    return line[:start + margin] + b"\0" + line[end - margin:] if end - start > 2 * margin else line


class Conversations:
    """Each instance's last request that went into a line no secret was found in, for the Scrubber's `clean` span:
    an agent's next request repeats it up to where its new messages begin, and that part needs no probe again
    (a form found there would have been found last time). Bounded: at most MAX_REMEMBERED bytes, the least
    recently used instance's request forgotten first."""

    def __init__(self, budget: int) -> None:
        self.budget = budget
        self._last: OrderedDict[str, tuple[tuple[str, ...], bytes]] = OrderedDict()
        self._held = 0

    def clean_prefix(self, instance: str, secrets: tuple[str, ...], body: bytes) -> int:
        """How many bytes at the start of `body` are known to hold none of `secrets` (0: none)."""
        last = self._last.get(instance) if len(body) >= MIN_REMEMBERED else None
        if last is None or last[0] != secrets:  # a new attempt has a new token: what was clean may hold it
            return 0
        return shared_start(body, last[1])

    def remember(self, instance: str, secrets: tuple[str, ...], body: bytes) -> None:
        """`body` went into a line in which no form of `secrets` was found."""
        self.forget(instance)
        if not MIN_REMEMBERED <= len(body) <= self.budget:
            return
        self._last[instance] = (secrets, body)
        self._held += len(body)
        while self._held > self.budget:
            self._held -= len(self._last.popitem(last=False)[1][1])

    def forget(self, instance: str) -> None:
        last = self._last.pop(instance, None)
        if last is not None:
            self._held -= len(last[1])


def shared_start(data: bytes, other: bytes, exact_to: int = 64) -> int:
    """A length both begin with, at most `exact_to` - 1 bytes short of the longest (memcmp in halving steps: a
    few microseconds for 40 KB, where comparing byte by byte in Python would take milliseconds)."""
    low, high = 0, min(len(data), len(other))
    if data.startswith(memoryview(other)[:high]):
        return high
    while high - low >= exact_to:
        middle = (low + high) // 2
        if data.startswith(memoryview(other)[low:middle], low):
            low = middle
        else:
            high = middle
    return low


def one_line(request: bytes) -> bytes:
    """The request body as one line of JSON. The gateway parsed it, so UTF-8 JSON text that opens an object has
    line breaks only between its tokens (JSON strings escape theirs), where a space means the same. Any other
    body (a byte-order mark, UTF-16, bytes that are not UTF-8) is parsed and written again; one that does not
    parse is kept as a string."""
    if request[:1] == b"{" and (request.isascii() or _utf8(request)):
        if b"\n" in request or b"\r" in request:
            request = request.replace(b"\r", b" ").replace(b"\n", b" ")
        return request
    try:
        return fastjson.dumps(fastjson.loads(request))
    except (ValueError, UnicodeDecodeError):
        return fastjson.dumps(request.decode("utf-8", errors="replace"))


def _utf8(data: bytes) -> bool:
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


class Writer:
    def __init__(self, state_dir: Path, worker: int, cap: int, secrets: list[str]) -> None:
        self.state_dir, self.worker, self.cap = state_dir, worker, cap
        self.secrets = [s for s in secrets if s]
        self.scrubber = Scrubber()
        self.conversations = Conversations(MAX_REMEMBERED)
        self._files: OrderedDict[str, object] = OrderedDict()  # by instance id
        self._used: dict[str, int] = {}  # bytes in the instance's file (kept when its file is closed for room)
        self._unflushed: set[str] = set()
        self._folders: set[Path] = set()  # the folders made for call files
        self._max_open = _open_files_allowed(MAX_OPEN)

    def call(self, head: dict, request: bytes, sent: bytes) -> None:
        """Write one call's line (flushed by `flush`)."""
        record = head.get("record") or {}
        if head.get("cut"):  # the gateway left the body out (it was behind)
            record = {**record, "cut": head["cut"]}
        body = one_line(request)
        turn = fastjson.dumps(reassemble(head.get("protocol") or "chat", sent, bool(record.get("stream"))))
        instance = str(head.get("instance_id") or "_")
        out = self._file(instance)
        used = self._used[instance]
        if used + len(body) + len(turn) + 1024 > self.cap:
            record = {**record, "cut": {"request_bytes": len(body), "response_bytes": len(turn)}}
            body = b"null"
            if len(turn) > SLIM_RESPONSE_BYTES:
                turn = b"null"
        before = fastjson.dumps(record)[:-1] + b',"request":'
        line = b"".join((before, body, b',"response":', turn, b"}\n"))
        secrets = tuple(head.get("secrets") or ())
        known = self.conversations.clean_prefix(instance, secrets, body)  # (b"null", cut: too short to know)
        scrubbed = self.scrubber.scrub(line, (*secrets, *self.secrets), (len(before), len(before) + known))
        if scrubbed is line or scrubbed == line:
            self.conversations.remember(instance, secrets, body)
        else:  # a secret was in it: the next call is looked at whole
            self.conversations.forget(instance)
        line = scrubbed
        out.write(line)  # type: ignore[attr-defined]
        self._unflushed.add(instance)
        self._used[instance] = used + len(line)

    def flush(self) -> None:
        """Every line written so far onto the disk (the OS's: a killed writer loses none)."""
        for instance in self._unflushed:
            out = self._files.get(instance)
            if out is not None:
                out.flush()  # type: ignore[attr-defined]
        self._unflushed.clear()

    def _file(self, instance: str):
        out = self._files.get(instance)
        if out is not None:
            self._files.move_to_end(instance)  # the most recently used last
            return out
        path = calls_path(self.state_dir, instance, self.worker)
        if path.parent not in self._folders:  # (one folder for every instance: made once, not per instance)
            path.parent.mkdir(parents=True, exist_ok=True)
            self._folders.add(path.parent)
        out = open(path, "ab")
        if instance not in self._used:
            self._used[instance] = out.tell()  # a resumed run: what the file holds counts
            if out.tell() and not ends_with_newline(path):  # a process killed mid-line wrote here
                out.write(b"\n")
        while len(self._files) >= self._max_open:
            self._files.popitem(last=False)[1].close()  # type: ignore[attr-defined]  (closing flushes)
        self._files[instance] = out
        return out

    def close(self) -> None:
        for out in self._files.values():
            out.close()  # type: ignore[attr-defined]
        self._files.clear()
        self._unflushed.clear()


def _open_files_allowed(wanted: int) -> int:
    """How many call files to keep open: `wanted`, the process's file limit raised toward it where it may be."""
    try:
        import resource

        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        if soft != resource.RLIM_INFINITY and soft < wanted + 64:
            soft = wanted + 64 if hard == resource.RLIM_INFINITY else min(hard, wanted + 64)
            resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
        return max(16, min(wanted, soft - 64) if soft != resource.RLIM_INFINITY else wanted)
    except (ImportError, OSError, ValueError):
        return 200


def frames(pending: bytearray) -> list[tuple[bytes, bytes, bytes]]:
    """The whole frames at the start of `pending` as (header, request, answer), removed from it once read."""
    found, at = [], 0
    with memoryview(pending) as view:  # one copy of each part (a bytearray's slice is a copy of its own)
        while len(pending) - at >= _FRAME.size:
            sizes = _FRAME.unpack_from(view, at)
            start = at + _FRAME.size
            head_end, request_end = start + sizes[0], start + sizes[0] + sizes[1]
            end = request_end + sizes[2]
            if len(pending) < end:
                break
            found.append((bytes(view[start:head_end]), bytes(view[head_end:request_end]), bytes(view[request_end:end])))
            at = end
    del pending[:at]  # (the view released first: a bytearray with a view on it cannot change size)
    return found


def main(argv: list[str]) -> int:
    state_dir, worker, cap = Path(argv[0]), int(argv[1]), int(argv[2])
    try:
        os.nice(10)  # on a busy machine the gateway's answers get the CPU first; the record can wait
    except OSError:
        pass
    # a call makes no reference cycles: the collector's passes (one per 700 objects made: several per call) find
    # nothing and cost ~3% of the writer's time; a rare pass still collects what an exception's traceback holds
    gc.set_threshold(100_000, 50, 50)
    writer = Writer(state_dir, worker, cap, json.loads(os.environ.pop(SECRETS_ENV, "[]") or "[]"))
    stdin = sys.stdin.fileno()
    pending = bytearray()
    # read into one buffer made once: os.read(fd, 1 MiB) maps and faults in fresh memory for every read (~20 us,
    # as much as a call's whole record when the writer keeps up and each read brings a call or two)
    buffer = bytearray(READ_SIZE)
    view = memoryview(buffer)
    try:
        while True:
            size = os.readv(stdin, [buffer])  # what the pipe holds (waits only when it is empty)
            if not size:
                return 0  # the gateway closed the pipe (or died): everything sent is written (a cut frame is not)
            pending += view[:size]
            for head, request, sent in frames(pending):
                try:
                    writer.call(fastjson.loads(head), request, sent)
                except Exception as exc:  # noqa: BLE001 - one odd call must not end the record of the others
                    print(f"clawswe recorder: a call could not be recorded: {exc}", file=sys.stderr)
            writer.flush()  # before waiting for more
    finally:
        writer.close()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
