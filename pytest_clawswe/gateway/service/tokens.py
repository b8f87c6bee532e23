"""Per-instance tokens: who may call the gateway, from where, with which model, and what they used."""
from __future__ import annotations

import asyncio
import hashlib
import ipaddress
import logging
import secrets
import threading
from dataclasses import dataclass, field
from pathlib import Path

from pytest_clawswe.gateway.record import ledger
from pytest_clawswe.gateway.scripted.solutions import scripted_for
from pytest_clawswe.gateway.scripted.responder import ScriptedModel
from pytest_clawswe.gateway.upstream.providers import Upstream, check_upstream, parse_model, resolve
from pytest_clawswe.gateway.upstream.shaping import Shaping
from pytest_clawswe.usage import Usage

TOKEN_PREFIX = "clawswe-"
log = logging.getLogger("clawswe.gateway")


@dataclass
class Registration:
    token: str
    instance_id: str
    model: str  # the benchmark model name, e.g. openrouter/z-ai/glm-5.1 or scripted/gold
    attempt: int  # 1 + earlier registrations of this instance in the same state dir
    scripted: ScriptedModel | None = None
    upstream: Upstream | None = None
    upstream_model: str = ""
    address: str = ""  # the only client address the token works from ("" = any: a host-side caller)
    relay: str = ""  # the engine whose relay the token works through ("": this machine's engines, directly)
    shaping: Shaping = field(default_factory=Shaping)
    active: bool = True
    usage: Usage = field(default_factory=Usage)  # the records themselves are on disk only
    pending: set = field(default_factory=set)  # ledger writes under way
    answering: dict = field(default_factory=dict)  # requests being answered (their records not yet queued): their
    # futures, each with its web request (whose client may be gone)
    spec: dict = field(default_factory=dict)  # what registered it: how the other worker processes build it
    ceiling: dict | None = None  # {"usd": limit, "prices": USD per token (USAGE_FIELDS order)}: --max-instance-cost


def _key(token: str) -> bytes:
    # tokens are looked up by their digest: a dict lookup then reveals nothing about a near miss
    return hashlib.sha256(token.encode()).digest()


def _address(value: str) -> str:
    if not value:
        return ""
    try:
        return str(ipaddress.ip_address(value))
    except ValueError:
        raise ValueError(f"register: {value!r} is not an IP address") from None


class TokenRegistry:
    def __init__(self, state_dir: str | Path, upstreams: list[Upstream] | tuple = (), worker: int = 0) -> None:
        self.state_dir = Path(state_dir)
        self.upstreams = list(upstreams)
        self.ledger = ledger.Ledger(self.state_dir, worker)
        self.shared = False  # several worker processes: shaping memory is told to the others (leader.py)
        self._by_key: dict[bytes, Registration] = {}
        self._attempts: dict[str, int] = {}
        self._lock = threading.Lock()

    def register(self, instance_id: str, model: str, scripted: dict | None = None, address: str = "",
                 harness: str = "", shaping: str | list[str] | None = None, relay: str = "",
                 ceiling: dict | None = None) -> Registration:
        """A new token for one run of one instance, usable only from `address` when one is given
        (the container's address on the run network), and only through `relay` (an engine's relay, gateway/control/relay.py)
        when one is given, else only directly. Raises ValueError for what it can't serve."""
        if not instance_id:
            raise ValueError("register needs an instance_id")
        reg = self._build(TOKEN_PREFIX + secrets.token_urlsafe(24), instance_id, model, scripted, address, harness,
                          shaping, relay)
        reg.ceiling = _ceiling(ceiling)
        with self._lock:
            earlier = self._attempts.get(instance_id)
            if earlier is None:  # a resumed run: continue the numbering found on disk
                earlier = max((r.get("attempt", 0) for r in ledger.read_records(self.state_dir, instance_id)),
                              default=0)
            reg.attempt = self._attempts[instance_id] = earlier + 1
            self._by_key[_key(reg.token)] = reg
        reg.spec = {"token": reg.token, "instance_id": instance_id, "model": model, "scripted": scripted,
                    "address": address, "harness": harness, "shaping": shaping, "attempt": reg.attempt,
                    "relay": relay, "ceiling": reg.ceiling}
        return reg

    def _build(self, token, instance_id, model, scripted, address, harness, shaping, relay="") -> Registration:
        parsed = parse_model(model, self.upstreams)  # the gateway process's own boundary: a spec from outside
        check_upstream(parsed, self.upstreams)
        reg = Registration(token, instance_id, parsed.spec, 0, address=_address(address), relay=relay)
        if parsed.is_scripted:
            reg.scripted = scripted_for({"mode": parsed.scripted_mode, **(scripted or {})})
        else:
            reg.upstream, reg.upstream_model = resolve(parsed, self.upstreams), parsed.upstream_name
        reg.shaping = Shaping.select(reg.upstream, reg.upstream_model, harness, shaping)
        if self.shared:
            reg.shaping.unshared = []
        return reg

    def adopt(self, spec: dict, active: bool = True) -> Registration:
        """A registration made by another worker process (its spec), or the one already here. A revoked
        token stays revoked whatever order the messages arrive in."""
        reg = self.lookup(spec["token"])
        if reg is None:
            reg = self._build(spec["token"], spec["instance_id"], spec["model"], spec.get("scripted"),
                              spec.get("address") or "", spec.get("harness") or "", spec.get("shaping"),
                              spec.get("relay") or "")
            reg.attempt, reg.spec = spec["attempt"], spec
            reg.ceiling = _ceiling(spec.get("ceiling"))
            with self._lock:
                self._by_key[_key(reg.token)] = reg
        reg.active = reg.active and active
        return reg

    def registrations(self) -> list[Registration]:
        return list(self._by_key.values())

    def lookup(self, token: str | None) -> Registration | None:
        """The registration of a token, active or not (the admin API reads revoked ones too)."""
        if not token:
            return None
        return self._by_key.get(_key(token))

    def authenticate(self, token: str | None, remote: str | None = None, relay: str = "") -> Registration | None:
        """The active registration of a token used from `remote`, through `relay` ("": directly): a token
        bound to a container's address works from that address on that engine only, so one agent cannot
        spend or read as another (container addresses repeat across engines)."""
        reg = self.lookup(token)
        if reg is None or not reg.active or reg.relay != relay:
            return None
        if reg.address and _normal(remote) != reg.address:
            return None
        return reg

    def unregister(self, token: str) -> bool:
        reg = self.lookup(token)
        if reg is None:
            return False
        reg.active = False
        return True

    def record_nowait(self, reg: Registration, record: dict) -> asyncio.Future:
        """Count one model request: in memory at once (the admin API sees it), and on disk once the returned
        future is done (group-committed). The admin API waits for `reg.pending` before it reads the disk."""
        reg.usage += ledger.usage_of([record])
        commit = self.ledger.commit(record)  # queued now: a stop right after still writes it (Ledger.close)
        reg.pending.add(commit)
        commit.add_done_callback(reg.pending.discard)
        commit.add_done_callback(_report)
        return commit

    async def record(self, reg: Registration, record: dict) -> None:
        """record_nowait, returning once the record is on disk."""
        await asyncio.shield(self.record_nowait(reg, record))

    @staticmethod
    def answering(reg: Registration, request) -> asyncio.Future:
        """A request of `reg` (the web request `request`) is being answered: its record is not written yet, so a
        read of the usage waits for it (the harness may have seen the answer's last byte, and been stopped, before
        the record)."""
        done = asyncio.get_running_loop().create_future()
        reg.answering[done] = request
        done.add_done_callback(lambda f: reg.answering.pop(f, None))
        return done

    @staticmethod
    async def settled(reg: Registration) -> None:
        """Wait for the requests under way and their ledger writes, bounded: one whose client is gone (the agent
        was stopped) for GONE_S (a stream to it ends at once, but a plain call waits on its provider, maybe for
        minutes, and is recorded when it answers), one still streaming to a live agent for SETTLE_S."""
        if reg.answering:
            _, waiting = await asyncio.wait(list(reg.answering), timeout=GONE_S)
            live = [f for f in waiting if not client_gone(reg.answering[f])]
            if live:
                await asyncio.wait(live, timeout=SETTLE_S - GONE_S)
        if reg.pending:
            await asyncio.gather(*list(reg.pending), return_exceptions=True)

    async def records(self, reg: Registration) -> list[dict]:
        """The records of this registration, read from disk once every pending write is there (not waiting
        for requests still being answered: see settled)."""
        if reg.pending:
            await asyncio.gather(*list(reg.pending), return_exceptions=True)
        return await asyncio.to_thread(ledger.read_records, self.state_dir, reg.instance_id, reg.attempt)

    def close(self) -> None:
        self.ledger.close()


SETTLE_S = 10.0
GONE_S = 1.0


def client_gone(request) -> bool:
    """Whether the harness that sent the web request `request` hung up (aiohttp goes on with a handler whose
    client left)."""
    transport = request.transport
    return transport is None or transport.is_closing()


def _report(commit: asyncio.Future) -> None:
    if not commit.cancelled() and commit.exception() is not None:
        log.error("a usage record could not be written: %s", commit.exception())


def _normal(remote: str | None) -> str:
    try:
        addr = ipaddress.ip_address(remote or "")
    except ValueError:
        return ""
    mapped = getattr(addr, "ipv4_mapped", None)  # ::ffff:172.18.0.3 on a dual-stack socket
    return str(mapped or addr)


def _ceiling(value) -> dict | None:
    if not value:
        return None
    try:
        usd, prices = float(value["usd"]), [float(p) for p in value.get("prices") or [0, 0, 0, 0]]
    except (KeyError, TypeError, ValueError):
        raise ValueError("register: ceiling must be {\"usd\": number, \"prices\": [4 numbers]}") from None
    if len(prices) != 4 or usd <= 0:
        raise ValueError("register: ceiling needs a positive usd and 4 prices per token")
    return {"usd": usd, "prices": prices}
