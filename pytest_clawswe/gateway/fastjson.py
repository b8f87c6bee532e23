"""JSON on the gateway's hot path: orjson (several times quicker than the json module) where it can,
the json module where orjson refuses what json accepts (NaN, lone surrogates, integers past 64 bits)."""
from __future__ import annotations

import json

try:
    import orjson
except ImportError:  # pragma: no cover - a dependency; the json module still works
    orjson = None


def loads(data: bytes | str):
    if orjson is not None:
        try:
            return orjson.loads(data)
        except orjson.JSONDecodeError:
            pass
    return json.loads(data)


def dumps(value) -> bytes:
    """Compact JSON as UTF-8 bytes."""
    if orjson is not None:
        try:
            return orjson.dumps(value)
        except TypeError:  # orjson.JSONEncodeError is a TypeError
            pass
    return json.dumps(value, separators=(",", ":")).encode()
