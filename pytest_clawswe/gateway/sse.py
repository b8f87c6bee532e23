"""Server-sent events: encoding our own events and splitting a byte stream into events.

The splitter keeps each event's raw bytes, so a stream relayed from a provider reaches the
harness byte for byte while the gateway still reads every event's data (for the usage)."""
from __future__ import annotations

import json
import re
from dataclasses import dataclass

# an event ends at the first blank line; the spec allows \n, \r\n and \r line endings
_EVENT_END = re.compile(rb"\r\n\r\n|\n\n|\r\r")


def encode(data: dict | str, event: str | None = None) -> bytes:
    """One SSE event. `data` is sent as compact JSON unless it is already a string."""
    text = data if isinstance(data, str) else json.dumps(data, separators=(",", ":"))
    head = f"event: {event}\n" if event else ""
    return f"{head}data: {text}\n\n".encode()


@dataclass
class Event:
    raw: bytes  # the event as received, terminator included
    event: str | None
    data: str

    def json(self) -> dict | None:
        """The data as a JSON object, or None for `[DONE]`, comments and anything not JSON."""
        try:
            value = json.loads(self.data)
        except ValueError:
            return None
        return value if isinstance(value, dict) else None


def parse_event(raw: bytes) -> Event:
    name, data = None, []
    for line in re.split(rb"\r\n|\n|\r", raw):
        text = line.decode("utf-8", errors="replace")
        if text.startswith(":") or not text:
            continue
        field, _, value = text.partition(":")
        value = value[1:] if value.startswith(" ") else value
        if field == "event":
            name = value
        elif field == "data":
            data.append(value)
    return Event(raw=raw, event=name, data="\n".join(data))


class Splitter:
    """Feed bytes as they arrive; get complete events back."""

    def __init__(self) -> None:
        self._buf = b""

    def feed(self, chunk: bytes) -> list[Event]:
        self._buf += chunk
        events = []
        while True:
            match = _EVENT_END.search(self._buf)
            if not match:
                return events
            raw, self._buf = self._buf[: match.end()], self._buf[match.end():]
            events.append(parse_event(raw))

    def close(self) -> list[Event]:
        """Whatever is left when the stream ends (a last event without its blank line)."""
        rest, self._buf = self._buf, b""
        return [parse_event(rest)] if rest.strip() else []
