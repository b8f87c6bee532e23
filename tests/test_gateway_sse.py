"""The SSE splitter at every chunk boundary: a provider's stream may arrive cut anywhere (inside a
line, between \\r and \\n, inside a multi-byte character), and the events must come out the same."""
from __future__ import annotations

import pytest

from pytest_clawswe.gateway.protocols import sse

EVENTS = [
    'event: message_start\ndata: {"type":"message_start"}\n\n',
    ': a comment line\n\n',
    'data: {"text":"caf\u00e9 \u2603"}\n\n',
    'data: line one\ndata: line two\n\n',
    'data: [DONE]\n\n',
]


@pytest.mark.parametrize("newline", ["\n", "\r\n", "\r"], ids=["lf", "crlf", "cr"])
def test_every_split_point_gives_the_same_events(newline):
    stream = "".join(EVENTS).replace("\n", newline).encode()
    whole = sse.Splitter().feed(stream)
    assert [e.raw for e in whole] == [e.replace("\n", newline).encode() for e in EVENTS]
    assert [e.data for e in whole] == ['{"type":"message_start"}', "", '{"text":"caf\u00e9 \u2603"}',
                                       "line one\nline two", "[DONE]"]
    assert whole[0].event == "message_start" and whole[2].json() == {"text": "caf\u00e9 \u2603"}
    for cut in range(1, len(stream)):  # two pieces, cut at every byte
        splitter = sse.Splitter()
        got = splitter.feed(stream[:cut]) + splitter.feed(stream[cut:]) + splitter.close()
        assert [(e.raw, e.event, e.data) for e in got] == [(e.raw, e.event, e.data) for e in whole], cut
    splitter = sse.Splitter()  # and one byte at a time
    got = [e for i in range(len(stream)) for e in splitter.feed(stream[i:i + 1])] + splitter.close()
    assert [e.raw for e in got] == [e.raw for e in whole]


def test_a_last_event_without_its_blank_line_comes_out_at_close():
    splitter = sse.Splitter()
    assert splitter.feed(b'data: {"a":1}\n\ndata: {"b":2}') [0].json() == {"a": 1}
    [last] = splitter.close()
    assert last.json() == {"b": 2} and splitter.close() == []
