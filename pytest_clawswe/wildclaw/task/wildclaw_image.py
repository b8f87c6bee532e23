#!/usr/bin/env python3
"""Codex's image helper in a WildClawBench task's container (/tmp_workspace/.wildclaw_image.py), written by us to
behave as the released Codex runner's: never imported, copied in by image_helper.install with DEFAULT_MODEL set.

    python3 .wildclaw_image.py <image_path> [question]

asks a vision model about one image with a chat-completions call to $OPENROUTER_BASE_URL (key
$OPENROUTER_API_KEY) and prints one JSON object: `ok`, then `content` or `error`, with `model`, `image_path`,
`warning`. It exits 0 whatever happens, so a failed look is an observation for the agent, not a crash. Only the
standard library: the container's python3 is all it has.
"""
from __future__ import annotations

import base64
import json
import mimetypes
import os
import sys
import urllib.error
import urllib.request

DEFAULT_MODEL = ""  # the task's model, set when installed
WORKSPACE = os.path.dirname(os.path.abspath(__file__))  # /tmp_workspace in the container
CALLS_FILE = os.path.join(WORKSPACE, ".wildclaw_image_calls.json")
DEFAULT_QUESTION = "Describe the image and extract task-relevant facts."
MAX_MATCHES = 5


def call_limit() -> int:
    try:
        return int(os.environ.get("WILDCLAW_IMAGE_HELPER_CALL_LIMIT") or "2")
    except ValueError:
        return 2


def find_image(requested: str) -> tuple[str | None, str | None]:
    """(the path to read, a warning): a path that does not exist is looked for by its file name under the
    workspace, and the first match is taken."""
    if os.path.exists(requested):
        return requested, None
    name = os.path.basename(requested)
    matches: list[str] = []
    for folder, _dirs, files in os.walk(WORKSPACE) if name else ():
        if name in files:
            matches.append(os.path.join(folder, name))
            if len(matches) >= MAX_MATCHES:
                break
    if not matches:
        return None, f"image not found: {requested}"
    several = f"; {len(matches)} files are named {name}" if len(matches) > 1 else ""
    return matches[0], f"{requested} does not exist; read {matches[0]} instead{several}"


def count_call() -> int:
    """This call's number in the task (the count survives in CALLS_FILE between calls)."""
    try:
        with open(CALLS_FILE, encoding="utf-8") as f:
            count = int(json.load(f).get("count") or 0) + 1
    except (OSError, ValueError, AttributeError):
        count = 1
    try:
        with open(CALLS_FILE, "w", encoding="utf-8") as f:
            json.dump({"count": count}, f)
    except OSError:
        pass  # an unwritable workspace must not cost the agent its look
    return count


def model_name() -> str:
    model = os.environ.get("WILDCLAW_IMAGE_MODEL") or os.environ.get("OPENROUTER_IMAGE_MODEL") or DEFAULT_MODEL
    return model.split("/", 1)[1] if model.startswith("openrouter/") else model


def request(image_path: str, question: str, model: str, key: str) -> urllib.request.Request:
    with open(image_path, "rb") as f:
        data = base64.b64encode(f.read()).decode("ascii")
    mime = mimetypes.guess_type(image_path)[0] or "image/jpeg"
    body = {"model": model, "max_tokens": 800, "temperature": 0,
            "messages": [{"role": "user", "content": [
                {"type": "text", "text": question},
                {"type": "image_url", "image_url": {"url": f"data:{mime};base64,{data}"}}]}]}
    base = (os.environ.get("OPENROUTER_BASE_URL") or "https://openrouter.ai/api/v1").rstrip("/")
    return urllib.request.Request(base + "/chat/completions", data=json.dumps(body).encode(), method="POST",
                                  headers={"Authorization": f"Bearer {key}", "Content-Type": "application/json"})


def look(argv: list[str]) -> dict:
    if not argv:
        return {"ok": False, "error": "usage: python3 .wildclaw_image.py <image_path> [question]"}
    image_path, warning = find_image(argv[0])
    if image_path is None:
        return {"ok": False, "error": warning, "requested_path": argv[0]}
    seen = {"image_path": image_path, "warning": warning}
    count, limit = count_call(), call_limit()
    if count > limit:
        return {"ok": False, "error": f"the image helper's limit of {limit} calls per task is reached; use what "
                "it answered before, or a direct chat/completions request with an image if needed",
                "call_count": count, "call_limit": limit, **seen}
    key = os.environ.get("OPENROUTER_API_KEY", "").strip()
    if not key:
        return {"ok": False, "error": "OPENROUTER_API_KEY is not set", **seen}
    model = model_name()
    seen = {"model": model, **seen}
    try:
        req = request(image_path, " ".join(argv[1:]).strip() or DEFAULT_QUESTION, model, key)
    except OSError as exc:
        return {"ok": False, "error": f"cannot read the image: {exc}", **seen}
    try:
        with urllib.request.urlopen(req, timeout=90) as response:
            answer = json.loads(response.read().decode("utf-8", errors="replace"))
        content = answer.get("choices", [{}])[0].get("message", {}).get("content", "")
        return {"ok": True, "content": content, **seen}
    except urllib.error.HTTPError as exc:
        body = exc.read().decode("utf-8", errors="replace")
        return {"ok": False, "error": f"HTTP {exc.code} {exc.reason}", "body": body[:2000], **seen}
    except Exception as exc:  # a timeout, a refused connection, an answer that is not JSON: all reported
        return {"ok": False, "error": f"{type(exc).__name__}: {exc}", **seen}


def main() -> int:
    try:
        out = look(sys.argv[1:])
    except Exception as exc:  # exit 0 whatever happens: the agent reads the error and goes on
        out = {"ok": False, "error": f"{type(exc).__name__}: {exc}"}
    print(json.dumps(out, ensure_ascii=False))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
