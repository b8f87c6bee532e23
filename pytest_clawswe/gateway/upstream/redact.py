"""Every form in which a provider's answer could carry the real key back: the bytes themselves, the
key as a JSON string escapes it (any of its characters written as \\uXXXX or \\/), in any letter case,
and its base64 (alone, or inside a longer base64 text such as a `user:key` Basic credential). Each is
replaced by [redacted] before anything reaches a container.

The exact forms are plain substring searches (C speed, on every answer). The loose forms (escapes, case)
need a regular expression, which runs only when a cheap probe says one could be there: the key lower-cased
in the answer lower-cased, or a JSON escape of an ASCII character (which no encoder needs for a key).

A text that arrives in pieces (a streamed answer's deltas: stream_redact.py) is scrubbed with `hold()`: the
end of what has arrived that could be the start of a form is kept back until the next piece shows whether a
form completes across the boundary."""
from __future__ import annotations

import base64
import functools
import json
import re

REDACTED = b"[redacted]"
# \u00XX for XX in 20-7f: what a JSON encoder writes for an ASCII character it did not have to escape
_ASCII_ESCAPE = re.compile(rb"\\u00[2-7][0-9a-fA-F]")
# an odd run of backslashes (the last one an escape's), or a \uXXXX cut short, right before [redacted]
_CUT_ESCAPE = re.compile(rb"(?<!\\)((?:\\\\)*)\\(?:u[0-9a-fA-F]{0,3})?" + re.escape(REDACTED))


def mend_escapes(json_text: bytes) -> bytes:
    """JSON text scrubbed by a Redactor, made JSON again where a form was found right after an escape's backslash
    or inside a \\uXXXX (`\\[redacted]`, `\\u0[redacted]`): the escape's start goes with the form. Only for JSON text:
    in a plain text (a stream's deltas) that backslash is a character of its own."""
    if REDACTED not in json_text or b"\\" not in json_text:
        return json_text
    return _CUT_ESCAPE.sub(rb"\1" + REDACTED, json_text)


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


@functools.lru_cache(maxsize=4096)
def reach(key: str) -> int:
    """The most bytes a form of `key` can span in a text: its longest exact form, or every character of it written
    as a \\uXXXX escape."""
    return max([len(f) for f in key_forms(key)] + [6 * len(key.lower().encode())]) if key else 0


@functools.lru_cache(maxsize=4096)  # a run registers a token per instance and attempt: a writer sees thousands
def probe_forms(key: str) -> tuple[bytes, ...]:
    """What to look for in a text lower-cased to learn whether `key` may be in it in any form a Redactor finds
    (with a JSON escape of an ASCII character ruled out apart): its exact forms lower-cased, less those that hold a
    shorter one (found only with it)."""
    probes: list[bytes] = []
    for form in sorted({f.lower() for f in key_forms(key)}, key=len):
        if not any(kept in form for kept in probes):
            probes.append(form)
    return tuple(probes)


def _loose_parts(key: str) -> list[tuple[bytes, bytes]]:
    """Per character of the key, the ways JSON text may spell it (itself in any case, \\uXXXX in any hex case,
    \\/) and, as a second regex, the beginnings of its escapes (what a piece may end in mid-character)."""
    parts = []
    for char in key:
        variants = {c for c in (char, char.lower(), char.upper()) if len(c) == 1}
        ways = {re.escape(c.encode()) for c in variants}
        escapes = {b"\\u%04x" % ord(c) for c in variants}
        if char in "/\"\\":
            escapes.add(json.dumps(char)[1:-1].encode() if char != "/" else b"\\/")
        ways |= {re.escape(e) for e in escapes}
        partial = {re.escape(e[:n]) for e in escapes for n in range(1, len(e))}
        parts.append((b"(?:" + b"|".join(sorted(ways)) + b")", b"(?:" + b"|".join(sorted(partial)) + b")"))
    return parts


def _loose_pattern(key: str) -> re.Pattern[bytes]:
    """The key as JSON text may spell it: each character itself (any case), \\uXXXX (any hex case), or \\/."""
    return re.compile(b"".join(full for full, _ in _loose_parts(key)), re.IGNORECASE)


_LOOSE_ESCAPE = re.compile(rb"\\[uU]00([0-9a-fA-F]{2})|\\/")
_ESCAPE_START = re.compile(rb"\\(?:[uU]00|/)")  # where any escape _LOOSE_ESCAPE reads begins


def may_have_escapes(text: bytes) -> bool:
    """Whether `text` holds the start of an escape read_escapes reads (one scan, not one per kind of escape)."""
    return _ESCAPE_START.search(text) is not None


def read_escapes(text: bytes) -> bytes:
    """`text` with each escape a loose form takes for an ASCII character (`\\u00XX`, the pattern being case-blind:
    `\\U00XX` too; `\\/`) read as that character, wherever it stands, as the loose pattern matches it (not only
    where JSON reads one): a loose form of the key in `text` is the key, in some letter case, in the result."""
    return _LOOSE_ESCAPE.sub(_escaped_char, text)


def _escaped_char(found: re.Match[bytes]) -> bytes:
    return bytes([int(found[1], 16)]) if found[1] else b"/"


def _beginnings(parts: list[tuple[bytes, bytes | None]]) -> bytes:
    """A regex of every non-empty beginning of a form made of `parts` (each: the regex of one character's full
    spellings, and of the beginnings of its escapes, or None)."""
    nested = b""
    for full, partial in reversed(parts):
        nested = b"(?:" + full + (b"(?:" + nested + b")?" if nested else b"") + b")" + \
            (b"|" + partial if partial else b"")
    return nested


def _at_end(beginnings: bytes) -> re.Pattern[bytes]:
    """Any of the beginnings at the very end of a text: search() finds the longest first (the leftmost start)."""
    return re.compile(b"(?:" + beginnings + b")\\Z")


class Redactor:
    """Scrubs one key out of answers; built once per key (`for_key`)."""

    __slots__ = ("forms", "shortest", "_lower", "_loose", "_exact_end", "_loose_end", "_plain_window", "_window")

    def __init__(self, key: str) -> None:
        self.forms = key_forms(key)
        self._lower = key.lower().encode()
        self.shortest = min([len(f) for f in self.forms] + [len(self._lower)]) if key else 0  # no form is shorter
        self._loose = _loose_pattern(key) if key else None
        self._exact_end = self._loose_end = None
        self._plain_window = self._window = 0
        if key:  # the exact forms case by case; the loose ones lower-cased (the text is lower-cased to match)
            self._exact_end = _at_end(b"|".join(
                b"(?:" + _beginnings([(re.escape(f[i:i + 1]), None) for i in range(len(f))]) + b")" for f in self.forms))
            self._loose_end = _at_end(_beginnings(_loose_parts(key.lower())))
            self._plain_window = max(max(map(len, self.forms)), len(self._lower))
            self._window = reach(key)

    def __bool__(self) -> bool:
        return bool(self.forms)

    def scrub(self, data: bytes) -> bytes:
        for form in self.forms:
            if form in data:
                data = data.replace(form, REDACTED)
        if self._loose is not None and (self._lower in data.lower() or _ASCII_ESCAPE.search(data) or b"\\/" in data):
            data = self._loose.sub(REDACTED, data)
        return data

    def scrub_wire(self, data: bytes) -> bytes:
        """`scrub` for bytes as they travel (a JSON body, SSE events of JSON): a form found from inside an escape
        (`\\u00` + a base64 form that begins with hex digits) leaves no broken escape before [redacted]."""
        out = self.scrub(data)
        return out if out is data else mend_escapes(out)

    def split(self, data: bytes) -> int:
        """Where to cut a text that goes on in the next piece: before it, nothing can become part of a form that
        more text completes (what comes after is kept back, unscrubbed, and scrubbed with the next piece); no
        form in `data` runs across the cut. len(data) when nothing needs keeping."""
        cut = len(data) - self.hold(data)
        while cut < len(data):
            across = self._across(data, cut)
            if across == cut:
                break
            cut = across
        return cut

    def _across(self, data: bytes, cut: int) -> int:
        """The start of the leftmost form that begins before `cut` and ends after it, else `cut`."""
        start = cut
        for form in self.forms:
            at = data.find(form, max(0, cut - len(form) + 1))
            if -1 < at < cut:
                start = min(start, at)
        if self._loose is not None:
            for found in self._loose.finditer(data, max(0, cut - self._window)):
                if found.start() >= cut:
                    break
                if found.end() > cut:
                    start = min(start, found.start())
                    break
        return start

    def hold(self, data: bytes) -> int:
        """How many bytes at the end of `data` could be the beginning of a form (a whole one too, when a longer
        form may begin with it): to be kept back until more text shows (0: nothing). A few microseconds for a
        delta's text."""
        if self._exact_end is None or not data:
            return 0
        window = data[-self._window:]
        if b"\\" not in window:  # no escape: no form is longer than its plain spelling
            window = window[-self._plain_window:]
        held = 0
        for pattern, text in ((self._exact_end, window), (self._loose_end, window.lower())):
            found = pattern.search(text)  # type: ignore[union-attr]
            if found:
                held = max(held, len(window) - found.start())
        return held

    def found_in(self, text: str) -> bool:
        data = text.encode(errors="replace")
        return self.scrub(data) != data


@functools.lru_cache(maxsize=64)
def for_key(key: str) -> Redactor:
    return Redactor(key)

