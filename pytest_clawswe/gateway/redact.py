"""Every form in which a provider's answer could carry the real key back: the bytes themselves, the
key as a JSON string escapes it (any of its characters written as \\uXXXX or \\/), in any letter case,
and its base64 (alone, or inside a longer base64 text such as a `user:key` Basic credential). Each is
replaced by [redacted] before anything reaches a container.

The exact forms are plain substring searches (C speed, on every answer). The loose forms (escapes, case)
need a regular expression, which runs only when a cheap probe says one could be there: the key lower-cased
in the answer lower-cased, or a JSON escape of an ASCII character (which no encoder needs for a key)."""
from __future__ import annotations

import base64
import functools
import json
import re

REDACTED = b"[redacted]"
# \u00XX for XX in 20-7f: what a JSON encoder writes for an ASCII character it did not have to escape
_ASCII_ESCAPE = re.compile(rb"\\u00[2-7][0-9a-fA-F]")


@functools.lru_cache(maxsize=64)  # computed once per key, not per request
def key_forms(key: str) -> tuple[bytes, ...]:
    if not key:
        return ()
    raw = key.encode()
    forms = {raw, json.dumps(key)[1:-1].encode(), json.dumps(key, ensure_ascii=False)[1:-1].encode(),
             json.dumps(key)[1:-1].replace("/", "\\/").encode()}
    for encode in (base64.b64encode, base64.urlsafe_b64encode):
        forms.add(encode(raw))
        forms.add(encode(raw).rstrip(b"="))
        # inside a longer base64 text the key starts at byte offset 0, 1 or 2 of a 3-byte group; the
        # 4-character groups that also hold neighbouring bytes differ, the ones in between do not
        for offset in range(3):
            text = encode(b"\0" * offset + raw)
            start = 4 if offset else 0
            end = len(text) if (offset + len(raw)) % 3 == 0 else len(text) - 4
            core = text[start:end]
            if len(core) >= 16:  # long enough to be the key's and nobody else's
                forms.add(core)
    # the longest first, so a form inside another is not replaced halfway
    return tuple(sorted((f for f in forms if f), key=len, reverse=True))


def _loose_pattern(key: str) -> re.Pattern[bytes]:
    """The key as JSON text may spell it: each character itself (any case), \\uXXXX (any hex case), or \\/."""
    parts = []
    for char in key:
        ways = {re.escape(c.encode()) for c in (char, char.lower(), char.upper()) if len(c) == 1}
        ways |= {rb"\\u%04x" % ord(c) for c in (char, char.lower(), char.upper()) if len(c) == 1}
        if char in "/\"\\":
            ways.add(re.escape(json.dumps(char)[1:-1].encode()))
        parts.append(b"(?:" + b"|".join(sorted(ways)) + b")")
    return re.compile(b"".join(parts), re.IGNORECASE)


class Redactor:
    """Scrubs one key out of answers; built once per key (`for_key`)."""

    __slots__ = ("forms", "_lower", "_loose")

    def __init__(self, key: str) -> None:
        self.forms = key_forms(key)
        self._lower = key.lower().encode()
        self._loose = _loose_pattern(key) if key else None

    def __bool__(self) -> bool:
        return bool(self.forms)

    def scrub(self, data: bytes) -> bytes:
        for form in self.forms:
            if form in data:
                data = data.replace(form, REDACTED)
        if self._loose is not None and (self._lower in data.lower() or _ASCII_ESCAPE.search(data)):
            data = self._loose.sub(REDACTED, data)
        return data

    def found_in(self, text: str) -> bool:
        data = text.encode(errors="replace")
        return self.scrub(data) != data


@functools.lru_cache(maxsize=64)
def for_key(key: str) -> Redactor:
    return Redactor(key)

