"""`python -m pytest_clawswe.gateway serve --state-dir DIR [--host H] [--port P] [--upstream SPEC]...`

What control/process.py starts: `serve` runs service/workers.py (the listeners, and the other workers, each started
as `worker` by the first)."""
from __future__ import annotations

import argparse
import asyncio
import json
import logging
import sys

from pytest_clawswe.gateway.service.workers import serve, serve_worker
from pytest_clawswe.gateway.upstream.providers import Upstream, upstreams_from_json


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m pytest_clawswe.gateway", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("serve", help="run the model gateway until SIGTERM or until the parent dies")
    run.add_argument("--state-dir", required=True, help="gateway.json, usage/<instance>.jsonl go here")
    run.add_argument("--host", default="127.0.0.1", help="bind address (default 127.0.0.1)")
    run.add_argument("--port", type=int, default=0, help="0 picks a free port (default)")
    run.add_argument("--upstream", action="append", default=[], metavar="NAME=BASE_URL,KEY_ENV[,x-api-key]",
                     help="an extra provider for models named NAME/<model>")
    run.add_argument("--upstreams-json", default="", help="extra providers as JSON (what GatewayProcess passes)")
    run.add_argument("--relay-host", action="append", default=[], metavar="ADDR",
                     help="also listen here, for other engines' relays only (pytest_clawswe/gateway/control/relay.py)")
    run.add_argument("--parent-pid", type=int, default=None, help="stop when this process is no longer the parent")
    run.add_argument("--workers", type=int, default=1,
                     help="worker processes on the one port (default 1; GatewayProcess passes its own default)")
    worker = sub.add_parser("worker", help="one more worker of a gateway (started by the gateway itself)")
    worker.add_argument("--state-dir", required=True)
    worker.add_argument("--index", type=int, required=True)
    worker.add_argument("--parent-pid", type=int, required=True)
    args = parser.parse_args(argv)
    if args.command == "worker":
        settings = json.loads(sys.stdin.read())  # from the leader: holds the admin secret
        _setup()
        asyncio.run(serve_worker(args.state_dir, args.index, args.parent_pid, settings))
        return 0
    try:
        upstreams = upstreams_from_json(args.upstreams_json) + [Upstream.from_spec(s) for s in args.upstream]
    except (ValueError, TypeError) as exc:
        parser.error(str(exc))
    _setup()
    asyncio.run(serve(args.state_dir, args.host, args.port, upstreams, args.parent_pid, relay_hosts=args.relay_host,
                      workers=max(1, args.workers)))
    return 0


def _setup() -> None:
    logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="%(asctime)s %(levelname)s %(message)s")
    logging.getLogger("aiohttp.access").setLevel(logging.WARNING)
    try:  # libuv's event loop: about a third less CPU per relayed request than asyncio's own
        import uvloop

        uvloop.install()
    except ImportError:
        pass


if __name__ == "__main__":
    sys.exit(main())
