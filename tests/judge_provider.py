"""A judge's provider stand-in for WildClawBench runs: an OpenRouter-like Chat Completions endpoint on 127.0.0.1 that
the run's gateway forwards the graders' judge calls to, as it would to OpenRouter (OPENROUTER_BASE_URL). The released
graders call their judge with an OpenAI-compatible client and ask for a JSON `{"score": 0..1, "reason": ...}`; this
stand-in answers such a prompt as a judge model does (the JSON in a fenced block, after a sentence), on the real
wire: one JSON answer, or SSE events when the grader's client streams (`stream: true`), each call with a fixed usage
and OpenRouter's own `usage.cost` beside it.

What it scores is the test's: `scores` maps a text the judge prompt holds (e.g. "criterion: summary_quality") to a
score. `failures` maps the same texts to what the calls for that criterion get first, one entry per call: an HTTP
status (OpenRouter's error body for it) or HANG (no answer until the test lets it go); then the score."""
from __future__ import annotations

import json
import sys
import threading
from pathlib import Path

from pytest_clawswe.gateway.protocols import CHAT, Reply
from pytest_clawswe.usage import Usage

sys.path.insert(0, str(Path(__file__).parent))
from gateway_stub import ProviderStandIn  # noqa: E402

USAGE = Usage(1, input_tokens=1500, output_tokens=60)  # every answered judge call
PROVIDER_COST = 0.0042  # what the stand-in says each answered call cost, as OpenRouter does
HANG = "hang"
HANG_LIMIT_S = 600.0
ERRORS = {401: "No auth credentials found", 402: "Insufficient credits", 429: "Rate limit exceeded",
          500: "Internal Server Error", 502: "Provider returned error", 503: "Service Unavailable"}


def prompt_text(body: dict) -> str:
    """Every text part of the request's messages, joined (a vision prompt's text sits beside its image)."""
    parts = []
    for message in body.get("messages") or []:
        content = message.get("content") if isinstance(message, dict) else None
        if isinstance(content, str):
            parts.append(content)
        elif isinstance(content, list):
            parts += [p.get("text", "") for p in content if isinstance(p, dict) and p.get("type") == "text"]
    return "\n".join(parts)


def image_urls(body: dict) -> list[str]:
    """The image URLs of the request's messages (data URLs from the released graders)."""
    return [(p.get("image_url") or {}).get("url", "") for m in body.get("messages") or [] if isinstance(m, dict)
            and isinstance(m.get("content"), list) for p in m["content"]
            if isinstance(p, dict) and p.get("type") == "image_url"]


class JudgeProvider(ProviderStandIn):
    def __init__(self, scores: dict[str, float]) -> None:
        super().__init__()
        self.scores = scores
        self.failures: dict[str, list] = {}
        self.release = threading.Event()  # set at the end: a hanging call answers then
        self._lock = threading.Lock()

    @property
    def seen(self) -> list[dict]:
        """Every request received: path, headers (lower-case names), JSON body."""
        return self.stub.seen

    def calls_for(self, marker: str) -> list[dict]:
        return [s for s in self.seen if marker in prompt_text(s["body"])]

    def __exit__(self, *exc) -> None:
        self.release.set()
        super().__exit__(*exc)

    def _answer_call(self, path, body, headers):
        if not path.split("?")[0].endswith("/chat/completions"):
            return 404, "application/json", json.dumps({"error": {"code": 404, "message": f"no route {path}"}}).encode()
        text = prompt_text(body)
        marker = next((m for m in self.scores if m in text), None)
        with self._lock:
            queue = self.failures.get(marker or "")
            first = queue.pop(0) if queue else None
        if first == HANG:
            self.release.wait(HANG_LIMIT_S)
            first = 504
        if first is not None:
            message = ERRORS.get(first, "Gateway Timeout")
            return first, "application/json", json.dumps({"error": {"code": first, "message": message}}).encode()
        if marker is None:  # not a judge prompt (a key check): a short answer
            reply = Reply("OK")
        else:
            verdict = {"score": self.scores[marker], "reason": f"stand-in judge: {marker} scored as the test chose"}
            reply = Reply(f"Here is my assessment.\n```json\n{json.dumps(verdict)}\n```")
        name = str(body.get("model") or "test/model")
        if body.get("stream") is True:
            events = CHAT.render_stream(reply, USAGE, name, body)
            # OpenRouter's own cost rides in the final usage chunk
            return [e.replace(b'"usage":{', b'"usage":{"cost":%s,' % str(PROVIDER_COST).encode()) for e in events]
        rendered = CHAT.render(reply, USAGE, name, body)
        rendered["usage"]["cost"] = PROVIDER_COST
        return 200, "application/json", json.dumps(rendered).encode()
