"""Who is calling: the agent's token, the relay's secret, the caller's address (a mixin of the Gateway)."""
from __future__ import annotations

import hashlib

from aiohttp import web

from pytest_clawswe.gateway.contract import RELAY_AGENT_HEADER, RELAY_SECRET_HEADER
from pytest_clawswe.gateway.service.tokens import Registration


class CallerAuth:
    """Who is calling: the agent's token, the relay's secret, the caller's address (a mixin of the Gateway)."""

    def _via_relay(self, request: web.Request) -> bool:
        """Whether the request came in on a relay listener (the relay headers count there, and only there)."""
        sockname = request.transport.get_extra_info("sockname") if request.transport else None
        return bool(sockname) and tuple(sockname[:2]) in self.relay_sockets

    def _caller(self, request: web.Request) -> tuple[str, str | None] | None:
        """(engine, address) of the agent: ("", the peer) directly; through a relay, the engine its secret
        names and the address it saw. None for a relay listener's request without a valid secret."""
        if not self._via_relay(request):
            return "", request.remote  # relay headers sent here are ignored
        secret = request.headers.get(RELAY_SECRET_HEADER, "")
        engine = self.relays.get(hashlib.sha256(secret.encode()).digest()) if secret else None
        if engine is None:
            return None
        return engine, request.headers.get(RELAY_AGENT_HEADER, "")

    def _authenticate(self, request: web.Request) -> Registration | None:
        caller = self._caller(request)
        if caller is None:
            return None
        engine, remote = caller
        for token in _tokens(request.headers):
            reg = self.registry.authenticate(token, remote, relay=engine)
            if reg is not None:
                return reg
        return None


def _tokens(headers) -> list[str]:
    """Every place a harness may put its key (they differ)."""
    found = []
    auth = headers.get("Authorization", "")
    if auth[:7].lower() == "bearer ":
        found.append(auth[7:].strip())
    found += [headers[h].strip() for h in ("x-api-key", "api-key") if headers.get(h)]
    return found
