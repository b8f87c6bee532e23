"""How a model request goes to the real provider (a mixin of the Gateway): the real key instead of the agent's
token, the model name the provider knows, the shaping the registration chose, and a one-piece answer told back
in the protocol and mode the harness asked for."""
from __future__ import annotations

import asyncio
import json

import aiohttp
from aiohttp import web
from multidict import CIMultiDict

from pytest_clawswe.gateway import fastjson
from pytest_clawswe.gateway.protocols import CHAT, MESSAGES, RESPONSES, Protocol, Reply, ToolCall
from pytest_clawswe.gateway.record.ledger import bounded
from pytest_clawswe.gateway.service.answers import _response_headers
from pytest_clawswe.gateway.service.replies import _error, _zero, log
from pytest_clawswe.gateway.upstream import failures, redact, shaping
from pytest_clawswe.gateway.upstream.providers import Upstream

UPSTREAM_PATH = {CHAT: "/chat/completions", RESPONSES: "/responses", MESSAGES: "/messages"}
# never passed on: connection-level headers, the container's credentials, what aiohttp recomputes
_DROP_REQUEST = {"host", "content-length", "authorization", "x-api-key", "api-key", "connection", "keep-alive",
                 "transfer-encoding", "te", "trailer", "upgrade", "proxy-authorization", "accept-encoding", "cookie",
                 "content-encoding",  # the body is re-encoded as plain JSON
                 "x-clawswe-relay", "x-clawswe-agent"}  # a relay's secret and the address it saw (gateway/control/relay.py)


def _with_usage_requested(protocol: Protocol, body: dict) -> tuple[dict, bool]:
    """Streamed chat reports usage only when asked; ask on the harness's behalf (and hide the
    extra chunk from it), else the gateway could not count the tokens."""
    if protocol is CHAT and body.get("stream") is True and not (body.get("stream_options") or {}).get("include_usage"):
        return {**body, "stream_options": {**(body.get("stream_options") or {}), "include_usage": True}}, True
    return body, False


def _upstream_headers(request: web.Request, up: Upstream) -> CIMultiDict:
    """The harness's headers (anthropic-version, betas, user agent...) with the real key instead of its token."""
    headers = request.headers.copy()  # C-level copy, then the few dropped: quicker than filtering each
    for name in _DROP_REQUEST:
        headers.popall(name, None)
    headers.update(up.auth_headers())
    if up.auth == "x-api-key":
        headers.setdefault("anthropic-version", "2023-06-01")
    if up.name == "openrouter":
        headers["X-Title"] = "pytest-clawswe"  # OpenRouter's app attribution
    return headers


class Forwarding:
    """The request forwarded to the registration's provider (a mixin of the Gateway)."""

    async def _forward(self, request, protocol, reg, body):
        up = reg.upstream
        key = up.key()
        if not key:
            message = f"The gateway has no key for {up.name}: {up.key_env} is not set on the host."
            return _error(protocol, 502, message, "api_error"), 502, None, "no upstream key"
        shape = reg.shaping
        wire = protocol  # what the provider is spoken to in
        wants_stream = body.get("stream") is True
        body = shape.filter_tools(protocol.name, {**body, "model": reg.upstream_model})
        if protocol is RESPONSES and "zeroclaw_responses_chat" in shape:
            wire, body = CHAT, shaping.responses_to_chat(body)
        if wire is CHAT:
            body = shape.chat_request(body)
        rebuild = wire is not protocol or ("zeroclaw_no_stream" in shape and wants_stream)
        if rebuild:  # the provider answers in one piece; the harness gets its own protocol back
            body = {k: v for k, v in body.items() if k not in ("stream", "stream_options")}
            body["stream"] = False
        body, hide_usage = _with_usage_requested(wire, body)
        url = up.base_url + UPSTREAM_PATH[wire]
        if request.query_string:
            url += "?" + request.query_string
        headers = _upstream_headers(request, up)
        forms = redact.for_key(key)
        try:
            async with self.http.post(url, data=fastjson.dumps(body), headers=headers) as upstream:
                out_headers = _response_headers(upstream.headers, forms)
                if rebuild and upstream.status < 400:
                    data = await upstream.read()
                    return self._rebuilt(protocol, wire, data, wants_stream, reg, request, forms)
                collector = shape.stream_collector() if wire is CHAT else None
                return await self._relay(request, protocol, upstream.status, out_headers,
                                         upstream.content.iter_any(), hide_usage, forms, shape, collector,
                                         share=lambda: self._share(reg), drain=upstream.content.read_nowait)
        except (aiohttp.ClientError, asyncio.TimeoutError) as exc:
            reason = type(exc).__name__
            message = f"The gateway could not reach {up.name} ({reason})."
            return _error(protocol, 502, message, "api_error"), 502, None, f"upstream unreachable: {reason}"

    def _rebuilt(self, protocol, wire, data, wants_stream, reg, request, forms):
        """A one-piece Chat Completions answer, told to the harness in the protocol and mode it asked for."""
        data = forms.scrub_wire(data)  # before its text is cut into stream events: a key must not be cut in two
        try:
            obj = json.loads(data)
            message = obj["choices"][0]["message"]
        except (ValueError, KeyError, IndexError, TypeError):
            message = None
        if not isinstance(message, dict):
            request["clawswe_failure"] = failures.of_answer(200, forms.scrub_wire(data))  # an error in a 200
            return (_error(protocol, 502, "The provider's answer could not be read.", "api_error"), 502, None,
                    "unreadable upstream answer")
        reg.shaping.remember(message)
        usage = wire.usage_from_body(obj)
        calls = [ToolCall((c.get("function") or {}).get("name") or "", (c.get("function") or {}).get("arguments")
                          or "{}", c.get("id") or "") for c in message.get("tool_calls") or [] if isinstance(c, dict)]
        reply = Reply(message.get("content") or "", calls)
        model = bounded(str(obj.get("model") or reg.upstream_model))
        if wants_stream:
            body = {"stream_options": {"include_usage": True}} if protocol is CHAT else {}
            events = [forms.scrub_wire(e) for e in protocol.render_stream(reply, usage or _zero(), model, body)]
            response = web.Response(status=200, body=b"".join(events),
                                    headers={"Content-Type": "text/event-stream; charset=utf-8"})
        else:
            rendered = json.dumps(protocol.render(reply, usage or _zero(), model, {})).encode()
            response = web.Response(status=200, body=forms.scrub_wire(rendered),
                                    headers={"Content-Type": "application/json"})
        return response, 200, usage, None if usage else "no usage in the answer"

    async def _share(self, reg) -> None:
        """Several workers: reasoning remembered here reaches the others before the harness can go on."""
        if not reg.shaping.unshared:
            return
        peer = self.leader or self.follower
        try:
            if peer is not None:
                await peer.share(reg)
        except Exception:  # the answer still goes out; only a later turn on another worker misses it
            log.exception("could not share the reasoning memory of %s", reg.instance_id)
