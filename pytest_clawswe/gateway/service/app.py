"""The gateway's HTTP service (aiohttp): model endpoints for the containers, /_admin/ for the run.

Model endpoints authenticate the per-instance token (Authorization: Bearer, x-api-key or api-key),
then either the scripted model answers or the request is forwarded to the real provider with the
real key (forward.py). Both answers go through the same relay, which passes the bytes on (SSE event by SSE
event when streamed), reads the usage out of them and records it for the instance.
"""
from __future__ import annotations

import asyncio
import json
import logging
import os
import time
from collections.abc import AsyncIterator, Iterable

import aiohttp
from aiohttp import web

from pytest_clawswe.gateway import fastjson
from pytest_clawswe.gateway.protocols import CHAT, MESSAGES, RESPONSES, Protocol
from pytest_clawswe.gateway.record.calls import Recorder
from pytest_clawswe.gateway.record.ledger import bounded, make_record
from pytest_clawswe.gateway.scripted.responder import HangingModel, scripted_usage
from pytest_clawswe.gateway.service import cost_ceiling
from pytest_clawswe.gateway.service.admin import AdminRoutes
from pytest_clawswe.gateway.service.answers import CLIENT_GONE, AnswerPassing
from pytest_clawswe.gateway.service.auth import CallerAuth
from pytest_clawswe.gateway.service.forward import Forwarding, _upstream_headers, _with_usage_requested
from pytest_clawswe.gateway.service.replies import _error, _json, _kind, _refuse, log
from pytest_clawswe.gateway.service.tokens import TokenRegistry, client_gone
from pytest_clawswe.gateway.upstream import failures, redact
from pytest_clawswe.gateway.upstream.providers import Upstream

# The largest request body accepted. The largest real request of the scripted demo runs is 58 KB (Claude
# Code; OpenClaw 41 KB, Hermes 29 KB; docs/fidelity.md), but a real run's request grows with its context: a 1M-token
# context (DeepSeek's window, the largest in the paper's settings) is ~4 MB of text and at most ~8 MB
# as escaped JSON, so 16 MiB leaves 2x headroom. CLAWSWE_GATEWAY_MAX_BODY_MB changes it.
MAX_BODY = int(float(os.environ.get("CLAWSWE_GATEWAY_MAX_BODY_MB", "16")) * 1024 * 1024)
# Bodies being read at once may hold at most this much memory; past it a request is told to retry (503,
# which every SDK retries), so a storm of large requests cannot grow the gateway without bound.
MAX_INFLIGHT_BODIES = int(float(os.environ.get("CLAWSWE_GATEWAY_INFLIGHT_MB", "256")) * 1024 * 1024)
MAX_CONNECTIONS = 4096  # to the providers: 300 agents and their side requests all in flight at once
HANG_LIMIT_S = 3600  # scripted/hang: the longest a request is held


class Gateway(CallerAuth, Forwarding, AnswerPassing, AdminRoutes):
    def __init__(self, state_dir, upstreams: Iterable[Upstream] = (), admin_token: str = "",
                 max_body: int = MAX_BODY, worker: int = 0) -> None:
        self.registry = TokenRegistry(state_dir, list(upstreams), worker)
        self.leader = None  # leader.Leader when this is worker 0 of several
        self.follower = None  # leader.Follower when this is one of the other workers
        self.admin_token = admin_token
        self.max_body = max_body
        self.http: aiohttp.ClientSession | None = None
        self._inflight = 0  # bytes of request bodies being read right now
        self.relay_sockets: set[tuple] = set()  # (address, port) of the listeners for other engines' relays
        self.relays: dict[bytes, str] = {}  # digest of a relay secret -> the engine it speaks for
        self.recorder = Recorder(state_dir, worker, secrets_=(admin_token,),  # trajectory: every call's bodies
                                 upstreams=self.registry.upstreams)

    def app(self) -> web.Application:
        app = web.Application(client_max_size=self.max_body)
        routes = []
        for prefix in ("/v1", ""):  # "" too: some harnesses are given the root as base URL
            routes += [
                web.post(f"{prefix}/chat/completions", self._model_handler(CHAT)),
                web.post(f"{prefix}/responses", self._model_handler(RESPONSES)),
                web.post(f"{prefix}/messages", self._model_handler(MESSAGES)),
                web.post(f"{prefix}/messages/count_tokens", self.count_tokens),
                web.get(f"{prefix}/models", self.models),
                web.get(f"{prefix}/models/{{model_id:.+}}", self.model),
            ]
        routes += [
            web.get("/api/v1/models", self.models),  # hermes probes the OpenRouter path
            web.post("/_admin/register", self.admin_register),
            web.post("/_admin/usage", self.admin_usage),
            web.post("/_admin/requests", self.admin_requests),
            web.post("/_admin/unregister", self.admin_unregister),
            web.post("/_admin/relay", self.admin_relay),
            web.get("/_admin/health", self.admin_health),
            web.route("*", "/{tail:.*}", self.not_found),  # last: probes like ollama's /api/show
        ]
        app.add_routes(routes)
        app.on_startup.append(self._open_http)
        app.on_cleanup.append(self._close_http)
        return app

    async def _open_http(self, app) -> None:
        timeout = aiohttp.ClientTimeout(total=None, sock_connect=30, sock_read=900)
        connector = aiohttp.TCPConnector(limit=MAX_CONNECTIONS, limit_per_host=0)
        self.http = aiohttp.ClientSession(timeout=timeout, auto_decompress=True, connector=connector,
                                          cookie_jar=aiohttp.DummyCookieJar())  # a provider's cookies stay out

    async def _close_http(self, app) -> None:
        if self.http:
            await self.http.close()
        self.registry.close()
        self.recorder.close()  # trajectory: what is queued is written

    async def _read_json(self, request: web.Request, protocol: Protocol) -> tuple[bytes, dict] | web.Response:
        """The body as a JSON object, or the 4xx/503 answer that says in one line why not."""
        limit = self.max_body
        too_big = f"The request body is larger than the gateway's limit of {limit // (1024 * 1024)} MiB."
        if request.content_length is not None and request.content_length > limit:
            return _refuse(_error(protocol, 413, too_big, "request_too_large"))
        chunks: list[bytes] = []  # joined once at the end: a growing bytearray over-allocates
        size = 0
        try:
            async for chunk in request.content.iter_any():
                if size + len(chunk) > limit:
                    return _refuse(_error(protocol, 413, too_big, "request_too_large"))
                if self._inflight + len(chunk) > MAX_INFLIGHT_BODIES:
                    return _refuse(_error(protocol, 503, "The gateway is reading too many large requests at "
                                          "once; retry shortly.", "overloaded_error"))
                chunks.append(chunk)
                size += len(chunk)
                self._inflight += len(chunk)
            raw = b"".join(chunks)
        finally:
            self._inflight -= size
            chunks.clear()
        try:
            body = fastjson.loads(raw)
        except (ValueError, UnicodeDecodeError):
            return _error(protocol, 400, "The request body is not valid JSON.", "invalid_request_error")
        if not isinstance(body, dict):
            return _error(protocol, 400, f"The request body must be a JSON object, not a JSON {_kind(body)}.",
                          "invalid_request_error")
        return raw, body

    # ------------------------------------------------------------------ model endpoints
    def _model_handler(self, protocol: Protocol):
        async def handle(request: web.Request) -> web.StreamResponse:
            return await self.model_request(request, protocol)

        return handle

    async def model_request(self, request: web.Request, protocol: Protocol) -> web.StreamResponse:
        started = time.monotonic()
        reg = self._authenticate(request)
        if reg is None:
            return _error(protocol, 401, "Unknown or revoked clawswe gateway token: use the token the run "
                          "registered for this instance.", "authentication_error")
        parsed = await self._read_json(request, protocol)
        if isinstance(parsed, web.StreamResponse):
            return parsed
        raw, body = parsed
        result = None  # (response, status, usage, error); the 500 is built only when needed
        answered = self.registry.answering(reg, request)
        try:
            if reg.ceiling and cost_ceiling.reached(await self.registry.records(reg), reg.ceiling):
                request["clawswe_failure"] = failures.Failure(failures.COST_LIMIT, cost_ceiling.refusal(reg.ceiling))
                result = (_error(protocol, 400, cost_ceiling.refusal(reg.ceiling), "invalid_request_error"), 400, None,
                          "cost limit")
            elif reg.scripted is not None:
                result = await self._scripted(request, protocol, reg, body, len(raw))
            else:
                result = await self._forward(request, protocol, reg, body)
        except Exception:  # a bug must not take the gateway down; the harness sees a 500
            log.exception("request of %s failed", reg.instance_id)
        finally:
            try:
                if result is None:
                    result = (_error(protocol, 500, "The gateway failed on this request.", "api_error"), 500, None,
                              "internal")
                response, status, usage, error = result
                await self._share(reg)
                failure = request.get("clawswe_failure") or failures.gateway_failure(status, error)
                record = make_record(reg.instance_id, reg.attempt, protocol.name, body.get("stream") is True, reg.model,
                                     status, time.monotonic() - started, usage,
                                     requested_model=str(body.get("model") or ""), request_bytes=len(raw), error=error,
                                     failure=failure.kind if failure else None, reason=failure.reason if failure else None,
                                     provider_cost_usd=request.get("clawswe_provider_cost"),
                                     request_id=self.recorder.new_id())  # trajectory: pairs call and line
                # an answer goes out once its line is on disk: a plain one whole, a stream its held-back end
                await self.registry.record(reg, record)
                if response.prepared:
                    await self.end_stream(response)
                # trajectory: the call's bodies, piped to the recorder's writer process (the answer is out already)
                self.recorder.submit(reg, protocol.name, raw, response.get("trajectory_sent") if response.prepared
                                     else getattr(response, "body", None), record)
                # every request is in the ledger; the log has the ones that did not go well (DEBUG: all)
                log.log(logging.DEBUG if status < 400 else logging.INFO,
                        "%s #%d %s stream=%s %s %.2fs in=%d out=%d cache_read=%d cache_write=%d%s",
                        reg.instance_id, reg.attempt, protocol.name, record["stream"], status, record["latency_s"],
                        record["input_tokens"], record["output_tokens"], record["cache_read_tokens"],
                        record["cache_write_tokens"], f" error={error}" if error else "")
            finally:  # its record is queued (or it failed): a read of the usage need not wait any more
                answered.set_result(None)
                if isinstance(response, web.StreamResponse) and response.prepared:
                    await self.end_stream(response)  # on every path: a held-back end never stays held
        return response

    async def _scripted(self, request, protocol, reg, body, size):
        if isinstance(reg.scripted, HangingModel):
            return await self._hang(request, protocol)
        view = protocol.view(reg.shaping.filter_tools(protocol.name, body))
        reply = reg.scripted.reply(view)
        usage = scripted_usage(size, view, reply)
        model = bounded(str(body.get("model") or reg.model))  # echoed back: the agent's own, but bounded
        source_body, hide_usage = _with_usage_requested(protocol, body)
        if body.get("stream") is True:
            events = protocol.render_stream(reply, usage, model, source_body)
            headers = {"Content-Type": "text/event-stream; charset=utf-8", "Cache-Control": "no-cache"}
            return await self._relay(request, protocol, 200, headers, _aiter(events), hide_usage, b"")
        data = json.dumps(protocol.render(reply, usage, model, body)).encode()
        return await self._relay(request, protocol, 200, {"Content-Type": "application/json"}, _aiter([data]),
                                 False, b"")

    async def _hang(self, request, protocol):
        """`scripted/hang`: hold the request until the client hangs up (its agent was stopped) or an hour
        passed. aiohttp does not cancel a handler when its client goes away, so the transport is watched."""
        deadline = time.monotonic() + HANG_LIMIT_S
        while time.monotonic() < deadline:
            if client_gone(request):
                return web.Response(status=CLIENT_GONE), CLIENT_GONE, None, "client closed the request"
            await asyncio.sleep(0.2)
        return _error(protocol, 504, "scripted/hang never answers.", "timeout"), 504, None, "hang"

    async def count_tokens(self, request: web.Request) -> web.StreamResponse:
        """Anthropic's token counter (Claude Code may call it): free, so not counted as a request."""
        reg = self._authenticate(request)
        if reg is None:
            return _error(MESSAGES, 401, "Unknown or revoked clawswe gateway token.", "authentication_error")
        parsed = await self._read_json(request, MESSAGES)
        if isinstance(parsed, web.StreamResponse):
            return parsed
        raw, body = parsed
        if reg.scripted is not None:
            return _json(200, {"input_tokens": max(1, len(raw) // 4)})
        up = reg.upstream
        headers = _upstream_headers(request, up)
        try:
            body = {**body, "model": reg.upstream_model}
            async with self.http.post(up.base_url + "/messages/count_tokens", json=body, headers=headers) as resp:
                data = redact.for_key(up.key()).scrub_wire(await resp.read())
                return web.Response(status=resp.status, body=data, content_type="application/json")
        except (aiohttp.ClientError, asyncio.TimeoutError) as exc:
            return _error(MESSAGES, 502, f"Token counting failed ({type(exc).__name__}).", "api_error")

    async def not_found(self, request: web.Request) -> web.Response:
        message = f"The clawswe gateway has no endpoint {request.method} {request.path}."
        return _json(404, {"error": {"message": message, "type": "not_found_error"}})


async def _aiter(items) -> AsyncIterator[bytes]:
    for item in items:
        yield item
