"""An exec's output read from the engine without losing its beginning (the run's Docker client reads it so).

Why it was lost (issue 32 §4; docker-py up to 7.2.0, `APIClient._read_from_socket`, `_get_raw_response_socket`):
the engine answers an exec's start with `101 UPGRADED`, then starts the command and streams its output on
the same connection, in frames (8-byte header: stream, length). http.client reads the answer's status line
and headers through a buffered reader (`response.raw._fp.fp`, socket.makefile: up to 8 KiB per read), so
when the command's first output has already arrived by the time this process reads the headers (its
thread descheduled for some tens of milliseconds: a busy machine, the GIL), those frames are taken into
that buffer along with the headers. docker-py then reads the frames from the raw socket beneath the buffer
(`response.raw._fp.fp.raw`) and never sees them: the answer comes back without its first frames, whole
frames at a time, the rest intact. Reproduced on a real engine by holding back the reading of the headers
until the first frame is there (tests/late_reader.py): `echo FIRST; sleep 1; echo SECOND` gives `SECOND`; and
without help, under load (benchmarks/bench_exec_stream.py). Known upstream: docker/docker-py#3332 (open), and #425
(2014) for the same raw-socket reading. The engine's side: moby's postContainerExecStart writes the 101 answer,
then calls ContainerExecStart.
Every exec's output went through that path: the workspace's (both ways), swebench's `exec_run` and its
evaluation's test output.

Here the frames are read from that buffered reader itself, so what it took comes first. The frame format is
Docker's own (attach/exec without a TTY: a header `>BxxxL`, then the bytes); ours is a dozen lines because
docker-py's reader is the defect. Engines reached over ssh:// read through the ssh process's pipe, which
docker-py already reads through its buffer; anything else falls back to docker-py.
"""
from __future__ import annotations

import io
import struct
from collections.abc import Iterator

HEADER = struct.Struct(">BxxxL")  # stream (1 stdout, 2 stderr), 3 bytes of padding, payload length
STDOUT, STDERR = 1, 2
CHUNK = 64 * 1024


def buffered_reader(response) -> io.BufferedReader | None:
    """The buffered reader http.client read the answer's headers through (None: not one, e.g. a named pipe)."""
    reader = getattr(getattr(getattr(response, "raw", None), "_fp", None), "fp", None)
    return reader if isinstance(reader, io.BufferedReader) else None


def frames(reader: io.BufferedReader, tty: bool) -> Iterator[tuple[int, bytes]]:
    """(stream, bytes) as they come, until the engine ends the stream."""
    if tty:  # no frames: the terminal's bytes as they are
        while chunk := reader.read1(CHUNK):
            yield STDOUT, chunk
        return
    while True:
        header = reader.read(HEADER.size)  # a buffered read: waits for all 8 bytes, or the end
        if len(header) < HEADER.size:
            return
        stream, size = HEADER.unpack(header)
        while size > 0:
            data = reader.read1(min(size, CHUNK))
            if not data:
                return
            size -= len(data)
            yield stream, data
