"""Several gateway worker processes on one port (one Python process uses one core at most).

The process the run starts is worker 0, the leader: it serves model requests like the others, owns the
registry (tokens, attempt numbers) and answers the admin API. It starts workers 1..N-1
(`python -m pytest_clawswe.gateway worker`, their settings and the admin secret on stdin), which listen on
the same address with SO_REUSEPORT: the kernel spreads the agents' connections over all of them. Each worker
keeps a websocket open to the leader's control port (127.0.0.1 only, the admin secret required):

  leader -> worker   {"op": "snapshot" | "add" | "revoke" | "flush" | "remember" | "relay", "id": n, ...}
  worker -> leader   {"ack": n}

A token registered or revoked is acknowledged by every worker before the admin call returns; a worker that
does not acknowledge within ACK_TIMEOUT (a "flush": plus SETTLE_S, its settling) is killed (it is restarted with
a fresh snapshot), so it can never go on serving a revoked token. A new or restarted worker listens only once its snapshot is applied. Admin
requests that land on a worker are passed to the leader's control port. Usage is read from the ledger files
(every worker fsyncs its own, ledger.py) after every worker has flushed the token's pending writes: exact
across workers, and across a worker that was killed. DeepSeek's reasoning memory (shaping.py) is told to every
worker before the answer that taught it ends, so the agent's next turn finds it wherever it lands; the leader
learns what it relays, so the snapshot carries, besides the registrations and relays, each active registration's
remembered reasoning: a restarted worker (killed for a late acknowledgement, say) forgets none of it.
"""
from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import logging
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import aiohttp
from aiohttp import web

from pytest_clawswe.gateway.service.tokens import SETTLE_S

log = logging.getLogger("clawswe.gateway")

ACK_TIMEOUT = 10.0


def ack_timeout(op: str) -> float:
    """How long a worker has to acknowledge `op`: ACK_TIMEOUT, and for a "flush" also what settling the token's
    requests may take (tokens.settled: SETTLE_S at most), as a busy worker is not a hung one."""
    return ACK_TIMEOUT + (SETTLE_S if op == "flush" else 0.0)
RESTART_DELAY = 0.5


def listen_socket(host: str, port: int, shared: bool = True):
    """A socket bound for listening; `shared`: other processes of this user may bind it too (the kernel
    balances the connections over them)."""
    import socket

    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    if shared:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    sock.bind((host, port))
    return sock


def can_share_port() -> bool:
    import socket

    return hasattr(socket, "SO_REUSEPORT") and sys.platform.startswith("linux")


class Leader:
    """Worker 0's side: the control port, the other workers' processes and websockets."""

    def __init__(self, gateway, state_dir: Path, workers: int, host: str, port: int, upstreams_json: str) -> None:
        self.gateway = gateway
        self.state_dir = state_dir
        self.count = workers
        self.host, self.port = host, port
        self.upstreams_json = upstreams_json
        self.processes: dict[int, subprocess.Popen] = {}
        self.started: dict[int, float] = {}
        self.restart_at: dict[int, float] = {}
        self.delay: dict[int, float] = {}
        self.sockets: dict[int, web.WebSocketResponse] = {}
        self.waiting: dict[int, tuple[web.WebSocketResponse, asyncio.Future]] = {}  # message id -> (to, its ack)
        self.ids = itertools.count(1)
        self.stopping = False
        self.control_url = ""
        self._runner: web.AppRunner | None = None

    # ------------------------------------------------------------------ the control port
    async def start(self) -> None:
        app = web.Application(client_max_size=self.gateway.max_body)
        app.add_routes([web.get("/_m/ws", self._websocket), web.post("/_m/remember", self._remember),
                        web.post("/_admin/{op}", self._admin), web.get("/_admin/{op}", self._admin)])
        self._runner = web.AppRunner(app, access_log=None, handle_signals=False)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        self.control_url = f"http://127.0.0.1:{port}"
        for index in range(1, self.count):
            self._spawn(index)

    async def _admin(self, request: web.Request) -> web.StreamResponse:
        handler = {"register": self.gateway.admin_register, "usage": self.gateway.admin_usage,
                   "requests": self.gateway.admin_requests, "unregister": self.gateway.admin_unregister,
                   "health": self.gateway.admin_health, "relay": self.gateway.admin_relay}.get(request.match_info["op"])
        if handler is None:
            return await self.gateway.not_found(request)
        return await handler(request)

    def _spawn(self, index: int) -> None:
        cmd = [sys.executable, "-m", "pytest_clawswe.gateway", "worker", "--state-dir", str(self.state_dir),
               "--index", str(index), "--parent-pid", str(os.getpid())]
        settings = {"host": self.host, "port": self.port, "control_url": self.control_url,
                    "admin_token": self.gateway.admin_token, "upstreams_json": self.upstreams_json,
                    "relay_sockets": sorted(self.gateway.relay_sockets)}  # other engines' relays (gateway/control/relay.py)
        process = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=None, stderr=None)  # the leader's log
        assert process.stdin is not None
        process.stdin.write(json.dumps(settings).encode())  # the secret never on a command line
        process.stdin.close()
        self.processes[index] = process
        self.started[index] = time.monotonic()

    async def supervise(self) -> None:
        """Called twice a second: a worker that died is started again (after 0.5 s, doubling up to 30 s while
        it keeps dying within a minute of its start)."""
        now = time.monotonic()
        for index, process in list(self.processes.items()):
            if process.poll() is None or self.stopping:
                continue
            if index not in self.restart_at:
                quick = now - self.started.get(index, 0) < 60
                self.delay[index] = min(30.0, self.delay.get(index, RESTART_DELAY / 2) * 2) if quick else RESTART_DELAY
                self.restart_at[index] = now + self.delay[index]
                log.warning("gateway worker %d exited (%s); starting it again in %.1f s", index, process.returncode,
                            self.delay[index])
            if now >= self.restart_at[index]:
                del self.restart_at[index]
                self._spawn(index)

    async def stop(self) -> None:
        self.stopping = True
        for process in self.processes.values():
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
        for process in self.processes.values():
            for _ in range(100):
                if process.poll() is not None:
                    break
                await asyncio.sleep(0.05)
            else:
                process.kill()
                process.wait(5)
        if self._runner is not None:
            await self._runner.cleanup()

    def _authorized(self, request: web.Request) -> bool:
        return self.gateway._is_admin(request)

    async def _websocket(self, request: web.Request) -> web.StreamResponse:
        if not self._authorized(request):
            return web.json_response({"error": "bad admin token"}, status=401)
        index = int(request.query.get("index", "0"))
        ws = web.WebSocketResponse(heartbeat=None, max_msg_size=0)
        await ws.prepare(request)
        # the snapshot and joining the broadcast list happen together: nothing registered or remembered in
        # between is missed
        message = snapshot(self.gateway.registry, self.gateway.relays)
        self.sockets[index] = ws
        await ws.send_str(json.dumps(message))
        try:
            async for message in ws:
                if message.type != aiohttp.WSMsgType.TEXT:
                    break
                data = json.loads(message.data)
                entry = self.waiting.pop(data.get("ack"), None)
                if entry and not entry[1].done():
                    entry[1].set_result(None)
        finally:
            if self.sockets.get(index) is ws:
                del self.sockets[index]
            for mid, (to, future) in list(self.waiting.items()):
                if to is ws:  # a dead worker holds nothing: its restart gets a fresh snapshot
                    self.waiting.pop(mid, None)
                    if not future.done():
                        future.set_result(None)
        return ws

    async def broadcast(self, message: dict, skip: int | None = None) -> None:
        """Send to every connected worker and wait for all of their acknowledgements."""
        futures = []
        loop = asyncio.get_running_loop()
        for index, ws in list(self.sockets.items()):
            if index == skip:
                continue
            mid = next(self.ids)
            future = loop.create_future()
            self.waiting[mid] = (ws, future)
            futures.append((index, future))
            try:
                await ws.send_str(json.dumps({**message, "id": mid}))
            except (ConnectionError, RuntimeError):
                future.set_result(None)  # it is going away; its restart gets a snapshot
        for index, future in futures:
            try:
                await asyncio.wait_for(asyncio.shield(future), ack_timeout(message.get("op", "")))
            except asyncio.TimeoutError:
                process = self.processes.get(index)
                log.error("gateway worker %d did not acknowledge %s; killing it", index, message.get("op"))
                if process is not None and process.poll() is None:
                    process.kill()

    async def _remember(self, request: web.Request) -> web.Response:
        if not self._authorized(request):
            return web.json_response({"error": "bad admin token"}, status=401)
        body = await request.json()
        _learn(self.gateway.registry, body["token"], body["entries"])  # kept here too: a restart's snapshot carries it
        await self.broadcast({"op": "remember", "token": body["token"], "entries": body["entries"]},
                             skip=int(body.get("index", -1)))
        return web.json_response({"ok": True})

    async def share(self, reg) -> None:
        """Reasoning this process remembered, told to every worker."""
        entries, reg.shaping.unshared[:] = list(reg.shaping.unshared), []
        await self.broadcast({"op": "remember", "token": reg.token, "entries": entries})


def snapshot(registry, relays: dict) -> dict:
    """What a new or restarted worker is told before it listens: every registration (a revoked one too, so it
    stays revoked), the relays, and each active registration's remembered reasoning as "remember" teaches it
    (oldest first, at most MAX_REMEMBERED: Shaping.learn's cap); a revoked token is refused everywhere, so its
    memory would serve no turn."""
    registrations = registry.registrations()
    return {"op": "snapshot", "id": 0, "regs": [[r.spec, r.active] for r in registrations],
            "relays": [[digest.hex(), engine] for digest, engine in relays.items()],
            "memory": [[r.token, list(r.shaping.reasoning.items())] for r in registrations
                       if r.active and r.shaping.reasoning]}


def adopt_snapshot(registry, relays: dict, data: dict) -> None:
    """A worker's registry and relays as the leader's snapshot says (snapshot())."""
    for spec, active in data["regs"]:
        registry.adopt(spec, active)
    for digest, engine in data.get("relays") or []:
        relays[bytes.fromhex(digest)] = engine
    for token, entries in data.get("memory") or []:
        _learn(registry, token, entries)


def _learn(registry, token: str, entries) -> None:
    """Reasoning another worker remembered, [[key, text], ...], learnt by this process's registration."""
    reg = registry.lookup(token)
    for key, text in (entries if reg is not None else []):
        reg.shaping.learn(key, text)


class Follower:
    """Worker k's side: the websocket to the leader, admin requests passed on, shaping memory told."""

    def __init__(self, gateway, index: int, control_url: str) -> None:
        self.gateway = gateway
        self.index = index
        self.control_url = control_url
        self.ready = asyncio.Event()
        self.closed = asyncio.Event()
        self._session: aiohttp.ClientSession | None = None
        self._task: asyncio.Task | None = None

    def _headers(self) -> dict:
        return {"Authorization": f"Bearer {self.gateway.admin_token}"}

    async def start(self) -> None:
        self._session = aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=None, sock_connect=10))
        ws = await self._session.ws_connect(f"{self.control_url}/_m/ws?index={self.index}", headers=self._headers(),
                                            max_msg_size=0, heartbeat=None)
        self._task = asyncio.ensure_future(self._listen(ws))
        await self.ready.wait()

    async def _listen(self, ws) -> None:
        registry = self.gateway.registry
        try:
            async for message in ws:
                if message.type != aiohttp.WSMsgType.TEXT:
                    break
                data = json.loads(message.data)
                op = data["op"]
                if op == "snapshot":  # applied before this worker listens: no turn finds it without
                    adopt_snapshot(registry, self.gateway.relays, data)
                    self.ready.set()
                elif op == "relay":
                    self.gateway.relays[bytes.fromhex(data["digest"])] = data["engine"]
                elif op == "add":
                    registry.adopt(data["spec"])
                elif op == "revoke":
                    reg = registry.lookup(data["token"])
                    if reg is None:
                        registry.adopt(data["spec"], active=False)
                    else:
                        reg.active = False
                elif op == "flush":
                    reg = registry.lookup(data["token"])
                    if reg is not None:
                        await registry.settled(reg)
                elif op == "remember":
                    _learn(registry, data["token"], data["entries"])
                if op != "snapshot":
                    await ws.send_str(json.dumps({"ack": data["id"]}))
        except Exception:
            log.exception("gateway worker %d lost its leader", self.index)
        finally:
            self.ready.set()
            self.closed.set()

    async def admin(self, request: web.Request) -> web.StreamResponse:
        """An admin call that landed here, answered by the leader; refused here as the leader would (on a
        relay listener the admin API does not answer at all)."""
        assert self._session is not None
        if not self.gateway._is_admin(request):
            return web.json_response({"error": "bad admin token"}, status=401)
        headers = {"Authorization": request.headers.get("Authorization", ""), "Content-Type": "application/json"}
        data = await request.read()
        async with self._session.request(request.method, self.control_url + request.path, data=data,
                                         headers=headers) as resp:
            return web.Response(status=resp.status, body=await resp.read(), content_type="application/json")

    async def share(self, reg) -> None:
        assert self._session is not None
        entries, reg.shaping.unshared[:] = list(reg.shaping.unshared), []
        async with self._session.post(self.control_url + "/_m/remember", headers=self._headers(),
                                      json={"token": reg.token, "entries": entries, "index": self.index}) as resp:
            resp.raise_for_status()

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._task
        if self._session is not None:
            await self._session.close()
