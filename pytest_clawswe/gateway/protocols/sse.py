"""Server-sent events: encoding our own events and splitting a byte stream into events.

The splitter keeps each event's raw bytes, so a stream relayed from a provider reaches the
harness byte for byte while the gateway still reads every event's data (for the usage)."""
from __future__ import annotations

import json
import re

from pytest_clawswe.gateway import fastjson

# an event ends at the first blank line; the spec allows \n, \r\n and \r line endings
_EVENT_END = re.compile(rb"\r\n\r\n|\n\n|\r\r")


def encode(data: dict | str, event: str | None = None) -> bytes:
    """One SSE event. `data` is sent as compact JSON unless it is already a string."""
    text = data if isinstance(data, str) else json.dumps(data, separators=(",", ":"))
    head = f"event: {event}\n" if event else ""
    return f"{head}data: {text}\n\n".encode()


class Event:
    """One event as received (`raw`, terminator included); its fields are parsed only when asked
    for: the relay passes most events on without reading them."""

    __slots__ = ("raw", "_fields", "_json")

    def __init__(self, raw: bytes) -> None:
        self.raw = raw
        self._fields: tuple[str | None, str] | None = None
        self._json = _UNSET

    @property
    def event(self) -> str | None:
        return self._parse()[0]

    @property
    def data(self) -> str:
        return self._parse()[1]

    def _parse(self) -> tuple[str | None, str]:
        if self._fields is None:
            name, data = None, []
            for line in re.split(rb"\r\n|\n|\r", self.raw):
                text = line.decode("utf-8", errors="replace")
                if text.startswith(":") or not text:
                    continue
                field, _, value = text.partition(":")
                value = value[1:] if value.startswith(" ") else value
                if field == "event":
                    name = value
                elif field == "data":
                    data.append(value)
            self._fields = (name, "\n".join(data))
        return self._fields

    def json(self) -> dict | None:
        """The data as a JSON object, or None for `[DONE]`, comments and anything not JSON."""
        if self._json is _UNSET:
            try:
                value = fastjson.loads(self.data)
            except ValueError:
                value = None
            self._json = value if isinstance(value, dict) else None
        return self._json

    def mentions(self, word: bytes) -> bool:
        """Whether the raw bytes hold `word`: a cheap test before parsing."""
        return word in self.raw


_UNSET = object()


def parse_event(raw: bytes) -> Event:
    return Event(raw)


class Splitter:
    """Feed bytes as they arrive; get complete events back."""

    def __init__(self) -> None:
        self._buf = b""

    def feed(self, chunk: bytes) -> list[Event]:
        return [parse_event(raw) for raw in self.feed_raw(chunk)]

    def feed_raw(self, chunk: bytes) -> list[bytes]:
        """The complete events' raw bytes (the relay makes an Event only of the few it reads)."""
        buf = self._buf + chunk if self._buf else chunk
        raws, start = [], 0
        for match in _EVENT_END.finditer(buf):
            raws.append(buf[start:match.end()])
            start = match.end()
        self._buf = buf[start:]  # one copy of the rest, not one per event
        return raws

    def close(self) -> list[Event]:
        """Whatever is left when the stream ends (a last event without its blank line)."""
        rest, self._buf = self._buf, b""
        return [parse_event(rest)] if rest.strip() else []
