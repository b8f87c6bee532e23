"""The gateway's URL as each SDK wants it as its base URL, for the adapters (the harness's side of the line: the
gateway gives its root URL; what an SDK appends is the SDK's business)."""
from __future__ import annotations


def openai_base_url(url: str) -> str:
    """Base URL for OpenAI-style clients (chat completions, responses)."""
    return url.rstrip("/") + "/v1"


def anthropic_base_url(url: str) -> str:
    """Base URL for Anthropic clients (they add /v1/messages themselves)."""
    return url.rstrip("/")
