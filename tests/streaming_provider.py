"""A provider stand-in for WildClawBench runs: an OpenRouter-like endpoint on 127.0.0.1 that the run's gateway
forwards to, as it would to a paid provider (OPENROUTER_BASE_URL). It speaks the three wire protocols on their
own paths (chat completions, responses, Anthropic messages) and streams whenever a harness asks (`stream: true`),
each SSE event written on its own, text and tool-call arguments in pieces, as real providers do.

What it says is a task's reference behaviour (a solve.sh acted out by the project's SolutionModel, the same policy
`scripted/gold` follows), decided from each request alone; every call reports a fixed usage."""
from __future__ import annotations

import json
import sys
from pathlib import Path

from pytest_clawswe.gateway.protocols import CHAT, MESSAGES, RESPONSES
from pytest_clawswe.gateway.scripted.solutions import SolutionModel
from pytest_clawswe.usage import Usage

sys.path.insert(0, str(Path(__file__).parent))
from gateway_stub import ProviderStandIn  # noqa: E402

USAGE = Usage(1, input_tokens=1000, output_tokens=50)
PATHS = {"/chat/completions": CHAT, "/responses": RESPONSES, "/messages": MESSAGES}


class StreamingProvider(ProviderStandIn):
    def __init__(self, solution: str, workdir: str = "/tmp_workspace") -> None:
        super().__init__()
        self.model = SolutionModel("gold", solution, workdir)

    @property
    def seen(self) -> list[dict]:
        """Every request received: path, headers, JSON body."""
        return self.stub.seen

    def _answer_call(self, path, body, headers):
        wire = next((p for suffix, p in PATHS.items() if path.split("?")[0].endswith(suffix)), None)
        if wire is None:
            return 404, "application/json", json.dumps({"error": {"message": f"no endpoint {path}"}}).encode()
        reply = self.model.reply(wire.view(body))
        name = str(body.get("model") or "test/model")
        if body.get("stream") is True:
            return wire.render_stream(reply, USAGE, name, body)
        return 200, "application/json", json.dumps(wire.render(reply, USAGE, name, body)).encode()
