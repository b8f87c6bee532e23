"""The gateway's listeners and worker processes: serve() in the run's gateway process, serve_worker() in each
extra worker (leader.py)."""
from __future__ import annotations

import asyncio
import json
import logging
import os
import secrets
from collections.abc import Iterable

from aiohttp import web

from pytest_clawswe.gateway.contract import STATE_FILE
from pytest_clawswe.gateway.service.app import Gateway
from pytest_clawswe.gateway.service.replies import log
from pytest_clawswe.gateway.upstream.providers import Upstream


class _OneLineBadRequests(logging.Filter):
    """aiohttp logs a request it cannot parse (a 100 KB header, bytes that are not HTTP) as an ERROR with its
    traceback; it is the client's mistake, not the gateway's: one INFO line."""

    def filter(self, record: logging.LogRecord) -> bool:
        from aiohttp.http_exceptions import HttpProcessingError

        exc = record.exc_info[1] if record.exc_info else None
        if isinstance(exc, HttpProcessingError):
            reason = " ".join(str(exc.message or type(exc).__name__).split())[:200]
            remote = record.args[0] if isinstance(record.args, tuple) and record.args else "?"
            record.msg, record.args = "bad request from %s: %d %s", (remote, exc.code, reason)
            record.exc_info = record.exc_text = None
            record.levelno, record.levelname = logging.INFO, "INFO"
        return True


def quiet_bad_requests() -> None:
    server_log = logging.getLogger("aiohttp.server")
    if not any(isinstance(f, _OneLineBadRequests) for f in server_log.filters):
        server_log.addFilter(_OneLineBadRequests())


def url_for(host: str, port: int) -> str:
    host = {"0.0.0.0": "127.0.0.1", "": "127.0.0.1", "::": "::1"}.get(host, host)
    return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"


async def serve(state_dir, host: str = "127.0.0.1", port: int = 0, upstreams: Iterable[Upstream] = (),
                parent_pid: int | None = None, relay_hosts: Iterable[str] = (), workers: int = 1) -> None:
    """Listen until SIGTERM/SIGINT or until the parent process dies. DIR/gateway.json (url,
    admin_token, pid, relay_urls) appears, atomically, once the sockets listen, and goes at a clean stop.
    `relay_hosts`: one more listener on each, for other engines' relays only (gateway/control/relay.py).
    workers > 1: this process is worker 0 and starts the others on the same sockets (leader.py)."""
    from pathlib import Path

    from pytest_clawswe.files import write_atomic
    from pytest_clawswe.gateway.service.leader import Leader, can_share_port
    from pytest_clawswe.gateway.upstream.providers import upstreams_to_json

    upstreams = list(upstreams)
    state_dir = Path(state_dir)
    state_dir.mkdir(parents=True, exist_ok=True)
    quiet_bad_requests()
    if workers > 1 and not can_share_port():
        log.warning("this system cannot share a port between processes: one gateway worker")
        workers = 1
    gateway = Gateway(state_dir, upstreams, secrets.token_urlsafe(32))
    gateway.registry.shared = workers > 1
    runner = web.AppRunner(gateway.app(), access_log=None, handle_signals=False)
    await runner.setup()
    port, relay_urls = await _listen(gateway, runner, host, port, relay_hosts, shared=workers > 1)
    url = url_for(host, port)
    stop = _stop_on_signals()
    leader = None
    if workers > 1:
        leader = gateway.leader = Leader(gateway, state_dir, workers, host, port, upstreams_to_json(upstreams))
        await leader.start()
    state_file = state_dir / STATE_FILE
    write_atomic(state_file, json.dumps({"url": url, "admin_token": gateway.admin_token, "pid": os.getpid(),
                                         "host": host, "port": port, "workers": workers,
                                         "relay_urls": relay_urls}), private=True)
    log.info("gateway listening on %s (pid %d, %d worker%s)", url, os.getpid(), workers, "s" * (workers > 1))
    try:
        await _serve_until_stopped(stop, parent_pid, leader)
    finally:
        state_file.unlink(missing_ok=True)
        if leader is not None:  # the workers first: their ledger writes are flushed as they stop
            await leader.stop()
        await runner.cleanup()
        log.info("gateway stopped")


async def _listen(gateway: Gateway, runner: web.AppRunner, host: str, port: int, relay_hosts: Iterable[str],
                  shared: bool) -> tuple[int, dict[str, str]]:
    """The agents' listener and one per relay host: (the port it got, relay host -> URL)."""
    from pytest_clawswe.gateway.service.leader import listen_socket

    sock = listen_socket(host, port, shared=shared)
    await web.SockSite(runner, sock, shutdown_timeout=2.0, backlog=4096).start()
    relay_urls = {}
    for relay_host in relay_hosts:
        relay_sock = listen_socket(relay_host, 0, shared=shared)
        gateway.relay_sockets.add(tuple(relay_sock.getsockname()[:2]))
        await web.SockSite(runner, relay_sock, shutdown_timeout=2.0, backlog=512).start()
        relay_urls[relay_host] = url_for(relay_host, relay_sock.getsockname()[1])
    return sock.getsockname()[1], relay_urls


def _stop_on_signals() -> asyncio.Event:
    """An event SIGTERM and SIGINT set (the process stops cleanly: its records are flushed)."""
    import signal

    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    return stop


async def _serve_until_stopped(stop: asyncio.Event, parent_pid: int | None, leader) -> None:
    """Until a signal, or the parent is gone (an orphaned gateway: the run is gone); the leader keeps its workers."""
    while not stop.is_set():
        if parent_pid and os.getppid() != parent_pid:
            log.info("parent process %d is gone; stopping", parent_pid)
            break
        if leader is not None:
            await leader.supervise()
        try:
            await asyncio.wait_for(stop.wait(), timeout=0.5)
        except asyncio.TimeoutError:
            pass


async def serve_worker(state_dir, index: int, parent_pid: int, settings: dict) -> None:
    """Worker `index` of several (leader.py): listens once it knows every token, until SIGTERM, or until
    its leader (the parent) is gone."""
    from pathlib import Path

    from pytest_clawswe.gateway.service.leader import Follower, listen_socket
    from pytest_clawswe.gateway.upstream.providers import upstreams_from_json

    state_dir = Path(state_dir)
    quiet_bad_requests()
    gateway = Gateway(state_dir, upstreams_from_json(settings["upstreams_json"]), settings["admin_token"],
                      worker=index)
    gateway.registry.shared = True
    runner = web.AppRunner(gateway.app(), access_log=None, handle_signals=False)
    await runner.setup()
    stop = _stop_on_signals()
    follower = gateway.follower = Follower(gateway, index, settings["control_url"])
    try:
        await follower.start()  # the snapshot first: no request is refused for a token it does not know yet
        sock = listen_socket(settings["host"], settings["port"])
        await web.SockSite(runner, sock, shutdown_timeout=2.0, backlog=4096).start()
        for relay_host, relay_port in settings.get("relay_sockets") or []:  # other engines' relays (control/relay.py)
            gateway.relay_sockets.add((relay_host, relay_port))
            relay_sock = listen_socket(relay_host, relay_port)
            await web.SockSite(runner, relay_sock, shutdown_timeout=2.0, backlog=512).start()
        while not stop.is_set() and not follower.closed.is_set():
            if os.getppid() != parent_pid:
                break
            try:
                await asyncio.wait_for(stop.wait(), timeout=0.5)
            except asyncio.TimeoutError:
                pass
    finally:
        await runner.cleanup()
        await follower.stop()
