"""JSON helpers shared by the Node-based adapters (openclaw, bare, codex, claude-code).

Each CLI runs headless in the workdir with stdout and stderr kept apart in files under the adapter's state
folder (outside /testbed), so its JSON output parses cleanly; the budget is enforced by Workspace.exec,
which kills every process in the container at the deadline.
"""
from __future__ import annotations

import json

# the CLI runner and the result mapper live in _bundled, shared by every bundled adapter


def parse_json(text: str) -> dict | None:
    """The JSON object a CLI printed, tolerating lines of noise before it."""
    text = text.strip()
    for start in (0, text.find("{")):
        if start < 0:
            break
        try:
            value = json.loads(text[start:])
        except ValueError:
            continue
        return value if isinstance(value, dict) else None
    return None


def parse_jsonl(text: str) -> list[dict]:
    events = []
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("{"):
            try:
                events.append(json.loads(line))
            except ValueError:
                continue
    return events


TOKEN_FIELDS = ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens")
REASON_CHARS = 300  # a failure's reason, as the result keeps it


def token_counts(usage: dict, names: tuple[str, str, str, str]) -> dict[str, int]:
    """The four token counts of a CLI's usage block, read under the CLI's own `names` (in TOKEN_FIELDS' order)."""
    return {field: num(usage.get(name)) for field, name in zip(TOKEN_FIELDS, names)}


def error_text(error) -> str:
    """A CLI's error: the message of {"message": ...}, else the value itself ("" for none)."""
    value = error.get("message") if isinstance(error, dict) else error
    return str(value or "")


def reason(text: str) -> str:
    """A failure's reason, cut to what a result keeps."""
    return text[:REASON_CHARS]


def num(value) -> int:
    try:
        return int(value or 0)
    except (TypeError, ValueError):
        return 0
