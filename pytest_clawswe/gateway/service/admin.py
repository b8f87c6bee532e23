"""The gateway's /_admin/ API (register an agent, read its usage and requests, relays, health) and the model list, as routes the Gateway adds (a mixin: they read the Gateway's registry)."""
from __future__ import annotations

import hashlib
import hmac
import json
import secrets

from aiohttp import web

from pytest_clawswe.gateway.record.ledger import usage_of
from pytest_clawswe.gateway.service.replies import _json, log
from pytest_clawswe.gateway.service.tokens import Registration


class AdminRoutes:
    """The gateway's /_admin/ API (register an agent, read its usage and requests, relays, health) and the model list, as routes the Gateway adds (a mixin: they read the Gateway's registry)."""

    # ------------------------------------------------------------------ model listing (harness probes)
    @staticmethod
    def _model_entry(model_id: str) -> dict:
        # one entry readable as an OpenAI, OpenRouter or Anthropic model object
        return {"id": model_id, "object": "model", "type": "model", "created": 0,
                "created_at": "2025-01-01T00:00:00Z", "owned_by": "clawswe", "display_name": model_id,
                "context_length": 200000, "top_provider": {"context_length": 200000, "max_completion_tokens": 32000}}

    async def models(self, request: web.Request) -> web.Response:
        reg = self._authenticate(request)
        ids = [reg.model] if reg else ["clawswe"]
        data = [self._model_entry(i) for i in ids]
        return _json(200, {"object": "list", "data": data, "has_more": False, "first_id": ids[0], "last_id": ids[-1]})

    async def model(self, request: web.Request) -> web.Response:
        return _json(200, self._model_entry(request.match_info["model_id"]))

    # ------------------------------------------------------------------ admin API
    def _is_admin(self, request: web.Request) -> bool:
        if self._via_relay(request):  # the admin API answers on the run's own listener only
            return False
        auth = request.headers.get("Authorization", "")
        return bool(self.admin_token) and hmac.compare_digest(auth.encode(), f"Bearer {self.admin_token}".encode())

    async def _admin_body(self, request: web.Request) -> dict:
        if not self._is_admin(request):
            raise web.HTTPUnauthorized(text=json.dumps({"error": "bad admin token"}), content_type="application/json")
        try:
            body = await request.json()
        except ValueError:
            body = None
        if not isinstance(body, dict):
            raise web.HTTPBadRequest(text=json.dumps({"error": "body must be a JSON object"}),
                                     content_type="application/json")
        return body

    async def _admin_registration(self, request: web.Request) -> Registration:
        body = await self._admin_body(request)
        reg = self.registry.lookup(str(body.get("token") or ""))
        if reg is None:
            raise web.HTTPNotFound(text=json.dumps({"error": "unknown token"}), content_type="application/json")
        return reg

    async def admin_register(self, request: web.Request) -> web.StreamResponse:
        if self.follower is not None:
            return await self.follower.admin(request)
        body = await self._admin_body(request)
        try:
            reg = self.registry.register(str(body.get("instance_id") or ""), str(body.get("model") or ""),
                                         body.get("scripted"), address=str(body.get("address") or ""),
                                         harness=str(body.get("harness") or ""), shaping=body.get("shaping"),
                                         relay=str(body.get("relay") or ""), ceiling=body.get("ceiling"))
        except ValueError as exc:
            return _json(400, {"error": str(exc)})
        if self.leader is not None:  # every worker knows the token before anyone can use it
            await self.leader.broadcast({"op": "add", "spec": reg.spec})
        log.info("registered %s #%d for %s", reg.instance_id, reg.attempt, reg.model)
        return _json(200, {"token": reg.token, "instance_id": reg.instance_id, "attempt": reg.attempt})

    async def admin_usage(self, request: web.Request) -> web.StreamResponse:
        if self.follower is not None:
            return await self.follower.admin(request)
        reg = await self._admin_registration(request)
        await self.registry.settled(reg)  # a request whose answer just went out is counted too
        usage = reg.usage
        if self.leader is not None:  # counted by several processes: the fsynced files have it all
            await self.leader.broadcast({"op": "flush", "token": reg.token})
            records = await self.registry.records(reg)
            usage = usage_of(records)
        return _json(200, {"instance_id": reg.instance_id, "attempt": reg.attempt, "usage": vars(usage)})

    async def admin_requests(self, request: web.Request) -> web.StreamResponse:
        if self.follower is not None:
            return await self.follower.admin(request)
        reg = await self._admin_registration(request)
        await self.registry.settled(reg)
        if self.leader is not None:
            await self.leader.broadcast({"op": "flush", "token": reg.token})
        return _json(200, {"requests": await self.registry.records(reg)})

    async def admin_unregister(self, request: web.Request) -> web.StreamResponse:
        if self.follower is not None:
            return await self.follower.admin(request)
        reg = await self._admin_registration(request)
        self.registry.unregister(reg.token)
        if self.leader is not None:  # revoked everywhere before the run is told so
            await self.leader.broadcast({"op": "revoke", "token": reg.token, "spec": reg.spec})
        return _json(200, {"ok": True})

    async def admin_relay(self, request: web.Request) -> web.StreamResponse:
        """A secret for one engine's relay; it is kept as a digest (told to every worker), and the run never
        writes it down."""
        if self.follower is not None:
            return await self.follower.admin(request)
        body = await self._admin_body(request)
        engine = str(body.get("engine") or "")
        if not engine:
            return _json(400, {"error": "relay needs an engine"})
        secret = secrets.token_urlsafe(32)
        digest = hashlib.sha256(secret.encode()).digest()
        self.relays[digest] = engine
        if self.leader is not None:  # every worker believes the relay before its secret is handed out
            await self.leader.broadcast({"op": "relay", "digest": digest.hex(), "engine": engine})
        log.info("relay added for engine %s", engine)
        return _json(200, {"secret": secret})

    async def admin_health(self, request: web.Request) -> web.StreamResponse:
        if self.follower is not None:
            return await self.follower.admin(request)
        if not self._is_admin(request):
            return _json(401, {"error": "bad admin token"})
        workers = 1 + len(self.leader.sockets) if self.leader is not None else 1  # serving right now
        return _json(200, {"ok": True, "workers": workers})
