"""Every form in which a provider's answer could carry the real key back: the bytes themselves, the
key as a JSON string escapes it, and its base64 (alone, or inside a longer base64 text such as a
`user:key` Basic credential). Each is replaced by [redacted] before anything reaches a container."""
from __future__ import annotations

import base64
import functools
import json

REDACTED = b"[redacted]"


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


def scrub(data: bytes, forms) -> bytes:
    for form in forms:
        if form in data:
            data = data.replace(form, REDACTED)
    return data


def contains(text: str, forms) -> bool:
    data = text.encode(errors="replace")
    return any(f in data for f in forms)
