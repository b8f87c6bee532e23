"""An engine's stream of chunks as a file tarfile's stream mode reads: docker-py's get_archive iterator, a pod's
exec output. One reader for every archive read back (engine/framing/archive.py's copy out, the Docker workspace's
read_file, the services' audit): it counts what came, may stop past a cap, and may keep the stream's tail so the
archive's end can be checked."""
from __future__ import annotations

import io
from collections import deque


class TooBig(Exception):
    """The stream passed the reader's cap."""


class ChunkReader(io.RawIOBase):
    """A file over an iterator of byte chunks. `limit`: past that many bytes TooBig is raised (None: no cap);
    `keep_tail`: at least the last that many bytes are kept for bytes_from (0: none)."""

    def __init__(self, chunks, limit: int | None = None, keep_tail: int = 0):
        self._chunks, self._limit, self._keep_tail, self._rest = iter(chunks), limit, keep_tail, b""
        self.total = 0  # bytes that came so far
        self._tail: deque[bytes] = deque()  # chunks summing to at most ~keep_tail bytes
        self._tail_len = 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        while not self._rest:
            chunk = next(self._chunks, None)
            if chunk is None:
                return 0
            self.total += len(chunk)
            if self._limit is not None and self.total > self._limit:
                raise TooBig()
            if self._keep_tail and chunk:
                self._keep(chunk)
            self._rest = chunk
        n = min(len(buffer), len(self._rest))
        buffer[:n], self._rest = self._rest[:n], self._rest[n:]
        return n

    def _keep(self, chunk: bytes) -> None:
        self._tail.append(chunk)
        self._tail_len += len(chunk)
        while self._tail_len - len(self._tail[0]) >= self._keep_tail:
            self._tail_len -= len(self._tail.popleft())

    def drain(self) -> None:
        """Read the stream to its end."""
        while self.readinto(bytearray(65536)):
            pass

    def bytes_from(self, offset: int) -> bytes | None:
        """The stream's bytes from `offset` to what came last, or None when they are no longer kept."""
        data = b"".join(self._tail)
        start = offset - (self.total - len(data))
        return data[start:] if start >= 0 else None
