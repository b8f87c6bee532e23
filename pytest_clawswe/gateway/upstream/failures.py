"""What a provider's answer says when it is not an answer: its kind of failure and its reason, in one line.

Every upstream answer the gateway relays is classified here (service/forward.py, service/answers.py), and the kind is written into its
ledger line (`failure`, `reason`). The run reads those lines when an agent ends (provider.py) to tell a
provider that failed the agent from an agent that failed its task.

Kinds:
    auth        401, or an authentication error inside a body or an SSE error event
    billing     402 (no credit), or a provider's insufficient-credit/quota-exhausted equivalent
    permission  403 (key not allowed this model or region)
    model       404 for the model (unknown model name)
    rate_limit  429 (and the providers' "overloaded" errors: 529, overloaded_error)
    server      5xx, and errors inside a 200 answer or its stream that name no other kind
    unreachable the provider could not be reached or timed out (the gateway's own 502)
    cost_limit  the gateway refused the call: the instance reached --max-instance-cost
A 4xx the agent caused (400 invalid request, 413 too large, context too long) is no provider failure.
"""
from __future__ import annotations

from dataclasses import dataclass

from pytest_clawswe.gateway import fastjson

# kinds that no retry inside the instance can fix: one of them ends the instance as a provider error
FATAL = ("auth", "billing", "permission", "model")
TRANSIENT = ("rate_limit", "server", "unreachable")
COST_LIMIT = "cost_limit"
MAX_REASON = 160

_BY_STATUS = {401: "auth", 402: "billing", 403: "permission", 429: "rate_limit", 529: "rate_limit"}
# error types/codes as the providers name them (Anthropic's error.type, OpenAI's error.code/type, OpenRouter's
# numeric error.code inside a 200 answer)
_BY_NAME = {
    "authentication_error": "auth", "invalid_api_key": "auth", "unauthorized": "auth",
    "billing_error": "billing", "insufficient_quota": "billing", "insufficient_credits": "billing",
    "payment_required": "billing", "arrearage": "billing",
    "permission_error": "permission", "permission_denied": "permission", "access_denied": "permission",
    "model_not_found": "model", "not_found_error": "model",
    "rate_limit_error": "rate_limit", "rate_limit_exceeded": "rate_limit", "overloaded_error": "rate_limit",
    "server_is_overloaded": "rate_limit", "slow_down": "rate_limit",
    "api_error": "server", "server_error": "server", "internal_error": "server",
}


@dataclass(frozen=True)
class Failure:
    kind: str
    reason: str  # "<status> <provider's message>", one line, bounded


def _message(obj) -> tuple[str, str]:
    """(name, message) of a provider error object in any of the documented shapes."""
    err = obj.get("error") if isinstance(obj, dict) else None
    if isinstance(obj, dict) and obj.get("type") == "response.failed":  # Responses: the failed response's error
        err = (obj.get("response") or {}).get("error")
    if isinstance(err, str):
        return "", err
    if not isinstance(err, dict):
        return "", ""
    name = err.get("type") if isinstance(err.get("type"), str) else ""
    code = err.get("code")
    if isinstance(code, str) and code:
        name = code if name in ("", "error", "invalid_request_error") else name
    return name, str(err.get("message") or "")


def _one_line(status: int | str, message: str) -> str:
    text = " ".join(message.split()) or "no message"
    text = f"{status} {text}".strip()
    return text if len(text) <= MAX_REASON else text[:MAX_REASON - 3] + "..."


def _kind_of(status: int, name: str, message: str) -> str | None:
    if name in _BY_NAME:
        kind = _BY_NAME[name]
        if kind == "rate_limit" and _exhausted(message):
            return "billing"
        return kind if kind != "model" or "model" in message.lower() or name == "model_not_found" else None
    if status == 429 and _exhausted(message):
        return "billing"  # OpenAI's insufficient_quota comes as a 429: no retry brings the money back
    if status in _BY_STATUS:
        return _BY_STATUS[status]
    if status == 404 and "model" in message.lower():
        return "model"
    if status in (408, 425) or status >= 500:
        return "server"
    return None


def _exhausted(message: str) -> bool:
    text = message.lower()
    return any(w in text for w in ("insufficient", "quota", "credit", "balance", "billing"))


def of_answer(status: int, data: bytes) -> Failure | None:
    """A plain (non-streamed) answer: its status, or an error object inside a 200 body."""
    obj = None
    try:
        obj = fastjson.loads(data) if data else None
    except (ValueError, UnicodeDecodeError):
        pass
    name, message = _message(obj)
    if status < 400:
        if not (name or message):
            return None
        code = (obj.get("error") or {}).get("code") if isinstance(obj.get("error"), dict) else None
        inner = code if isinstance(code, int) else status
        kind = _kind_of(inner, name, message) or "server"
        return Failure(kind, _one_line(inner if isinstance(code, int) else name or status, message))
    kind = _kind_of(status, name, message)
    if kind is None:
        return None
    if not message and data and obj is None:
        message = data[:MAX_REASON].decode("utf-8", "replace")
    return Failure(kind, _one_line(status, message))


def of_event(data) -> Failure | None:
    """One streamed event's JSON: Anthropic's `error` event, Responses' `error`/`response.failed`, or an
    OpenRouter chunk carrying an `error` object (a mid-stream failure)."""
    if not isinstance(data, dict):
        return None
    if data.get("type") not in ("error", "response.failed") and not isinstance(data.get("error"), (dict, str)):
        return None
    if data.get("type") == "error" and "error" not in data:  # Responses' error event: its fields at the top
        data = {"error": data}
    name, message = _message(data)
    if not (name or message):
        return None
    err = data.get("error") if isinstance(data.get("error"), dict) else {}
    code = err.get("code") if isinstance(err, dict) else None
    status = code if isinstance(code, int) else 200
    kind = _kind_of(status, name, message) or "server"
    return Failure(kind, _one_line(status if isinstance(code, int) else name or "error", message))


def gateway_failure(status: int, error: str | None) -> Failure | None:
    """The gateway's own failures to deliver: the provider unreachable, or its stream broken."""
    if error and error.startswith(("upstream unreachable", "upstream stream broke")):
        return Failure("unreachable", _one_line(status, error))
    return None
