"""The key check before a run: one cheap request to the provider through the run's gateway.

A one-token completion (Anthropic: /v1/messages; every other provider: /v1/chat/completions) with the
run's model, and with its judge's (run/benchmark.Benchmark.grading_model), so a wrong key (401), a key without
credit (402, or a quota error), a key not allowed the model (403) or an unknown model name (404/400) stops the
run in one sentence before any item starts. It costs one request of a few tokens per model (counted under the
pseudo-instance `_model-check`, so --max-cost sees it too); --no-model-check skips it.
"""
from __future__ import annotations

import json
import urllib.error
import urllib.request
import warnings
from pathlib import Path

import pytest

from pytest_clawswe.gateway.control.admin_api import GatewayClient, GatewayError
from pytest_clawswe.gateway.record.ledger import read_records
from pytest_clawswe.gateway.upstream.failures import TRANSIENT
from pytest_clawswe.gateway.upstream.providers import resolve
from pytest_clawswe.model import Model

CHECK_ID = "_model-check"


def _request(url: str, token: str, model: str, anthropic: bool) -> tuple[int, bytes]:
    messages = [{"role": "user", "content": "Reply with one word."}]
    if anthropic:
        path, body = "/v1/messages", {"model": model, "max_tokens": 1, "messages": messages}
        headers = {"x-api-key": token, "anthropic-version": "2023-06-01"}
    else:
        path, body = "/v1/chat/completions", {"model": model, "max_tokens": 1, "messages": messages}
        headers = {"Authorization": f"Bearer {token}"}
    request = urllib.request.Request(url.rstrip("/") + path, data=json.dumps(body).encode(), method="POST",
                                     headers={"Content-Type": "application/json", **headers})
    try:
        with urllib.request.urlopen(request, timeout=120) as resp:
            return resp.status, resp.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()
    except (urllib.error.URLError, OSError) as exc:
        return 0, str(exc).encode()


def check_model(state_dir: Path, model: Model, role: str = "") -> None:
    """Raise pytest.UsageError (one sentence) when the provider refuses the run's model and key (`role`: what the
    sentence calls the model, e.g. "the judge ")."""
    if model.is_scripted:
        return
    up = resolve(model)
    try:
        client = GatewayClient.from_state_dir(state_dir)
        token = client.register(CHECK_ID, model.spec)
    except (GatewayError, ValueError) as exc:
        raise pytest.UsageError(f"the model check could not start: {exc}") from None
    try:
        status, data = _request(client.url, token, model.spec, up.auth == "x-api-key")
    finally:
        try:
            client.unregister(token)
        except GatewayError:
            pass
    records = read_records(state_dir, CHECK_ID)
    last = records[-1] if records else {}
    if status and status < 400 and not last.get("failure"):
        return
    if last.get("failure") in TRANSIENT:  # busy or rate-limited now: the items' harnesses retry; the run goes on
        warnings.warn(f"clawswe: the model check of {role}{model.spec} got {last.get('reason')}; the run goes on", stacklevel=2)
        return
    reason = last.get("reason") or _reason(status, data)
    raise pytest.UsageError(f"the model check failed: {role}{model.spec} at {up.name} ({up.base_url}) answered {reason}; "
                            "fix the key, the credit or the model name, or skip this check with --no-model-check")


def _reason(status: int, data: bytes) -> str:
    try:
        err = json.loads(data).get("error")
        message = err.get("message") if isinstance(err, dict) else str(err or "")
    except (ValueError, AttributeError):
        message = data[:160].decode("utf-8", "replace")
    return f"{status} {' '.join(str(message).split())}"[:160] if status else f"nothing ({message})"
