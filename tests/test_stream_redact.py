"""The streamed answer's guard (gateway/upstream/stream_redact.py) on its own: a key split anywhere over any number of deltas
never comes out whole, the text around it comes out whole, and the events stay what each protocol's clients read.
(Through a real gateway and the official SDKs: test_gateway_split_key.py.)"""
from __future__ import annotations

import base64
import random

import pytest

from pytest_clawswe.gateway.protocols import sse
from pytest_clawswe.gateway.upstream.redact import for_key
from pytest_clawswe.gateway.upstream.stream_redact import guard_for

KEY = "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"
REDACTOR = for_key(KEY)
FORMS = {"plain": KEY, "upper": KEY.upper(), "base64": base64.b64encode(KEY.encode()).decode(),
         "escaped": "".join(f"\\u{ord(c):04x}" for c in KEY), "in base64": base64.b64encode(
             f"user:{KEY}".encode()).decode()}


def chat(pieces: list[str]) -> list[bytes]:
    def chunk(delta, finish=None):
        return sse.encode({"id": "c", "object": "chat.completion.chunk", "created": 1, "model": "m",
                           "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})

    return [chunk({"content": p}) for p in pieces] + [chunk({}, "stop"), sse.encode("[DONE]")]


def chat_text(events: list[bytes]) -> str:
    out = []
    for raw in events:
        data = sse.Event(raw).json()
        for choice in (data or {}).get("choices") or []:
            out.append(choice.get("delta", {}).get("content") or "")
    return "".join(out)


def cuts(text: str, rng: random.Random) -> list[str]:
    points = sorted(rng.sample(range(1, len(text)), rng.randint(1, min(12, len(text) - 1))))
    return [text[a:b] for a, b in zip([0, *points], [*points, len(text)])]


@pytest.mark.parametrize("form", FORMS)
def test_any_split_of_a_form_comes_out_redacted_and_the_rest_intact(form):
    rng = random.Random(form)
    for n in range(200):
        before, after = rng.choice(["", "s", "see ", "key: sk", "c2st ", "\\"]), rng.choice(["", ".", "s", " ok"])
        text = f"{before}{FORMS[form]}{after}"
        pieces = cuts(text, rng) if n % 4 else list(text)
        guard = guard_for("chat", REDACTOR)
        got = chat_text(guard.events(chat(pieces)) + guard.finish())
        assert got == REDACTOR.scrub(text.encode()).decode(), (pieces, got)
        assert "[redacted]" in got and KEY.lower() not in got.lower()


def test_text_that_only_looks_like_a_beginning_is_kept_back_then_sent_whole():
    guard = guard_for("chat", REDACTOR)
    pieces = ["The tests", " pass", "es: sk", "-or-v1-7d3 is not it", "s"]
    events = guard.events(chat(pieces))
    assert chat_text(events) == "".join(pieces)
    first = sse.Event(events[0]).json()["choices"][0]["delta"]["content"]
    assert first == "The test"  # the trailing "s" waited for the next piece; nothing more did
    assert sse.Event(events[1]).json()["choices"][0]["delta"]["content"] == "s pas"  # and its own last "s"
    plain = chat(["Hello", " world."])
    assert guard_for("chat", REDACTOR).events(plain) == plain  # nothing kept back: byte for byte as it came


def test_messages_get_one_more_delta_before_the_block_stops():
    events = [sse.encode({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
                         event="content_block_start"),
              sse.encode({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "yes"}},
                         event="content_block_delta"),
              sse.encode({"type": "content_block_stop", "index": 0}, event="content_block_stop")]
    out = guard_for("messages", REDACTOR).events(events)
    kinds = [sse.Event(e).event for e in out]
    assert kinds == ["content_block_start", "content_block_delta", "content_block_delta", "content_block_stop"]
    texts = [sse.Event(e).json()["delta"]["text"] for e in out[1:3]]
    assert texts == ["ye", "s"]


def test_responses_sequence_numbers_stay_consecutive_when_a_delta_is_added():
    def emit(seq, kind, **fields):
        return sse.encode({"type": kind, "sequence_number": seq, **fields}, event=kind)

    where = {"item_id": "m", "output_index": 0, "content_index": 0}
    events = [emit(0, "response.output_text.delta", **where, delta="ask"),
              emit(1, "response.output_text.done", **where, text="ask"),
              emit(2, "response.output_item.done", output_index=0, item={}),
              emit(3, "response.completed", response={})]
    out = guard_for("responses", REDACTOR).events(events)
    data = [sse.Event(e).json() for e in out]
    assert [d["sequence_number"] for d in data] == [0, 1, 2, 3, 4]
    # "ask" ends like the key begins ("s", "sk"): that much waited, and went out just before the part's end
    assert [d.get("delta") for d in data[:2]] == ["a", "sk"] and data[2]["type"] == "response.output_text.done"
