"""Audit replay: serves `GET /<service>/audit` (and health) from a saved audit folder only, for the grader
container, so a task can be re-graded offline. Standard library only; every POST answers 410.

    python3 -m mock.replay --audit-dir DIR [--host 127.0.0.1]
"""
from __future__ import annotations

import argparse
import json
import threading
from functools import partial
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from . import PORTS
from .auditview import log_path, read_audit, read_limits, view


class _Handler(BaseHTTPRequestHandler):
    def __init__(self, service, payload, *args, **kwargs):
        self.service, self.payload = service, payload
        super().__init__(*args, **kwargs)

    def _send(self, status, obj):
        data = json.dumps(obj, ensure_ascii=False).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        if self.path in (f"/{self.service}/audit", f"/{self.service}/audit/"):
            self._send(200, self.payload)
        elif self.path in ("/health", f"/{self.service}/health"):
            self._send(200, {"status": "ok", "service": self.service, "mode": "replay"})
        else:
            self._send(404, {"error": f"replay serves only /{self.service}/audit"})

    def do_POST(self):
        self._send(410, {"error": "this is an audit replay: the services are gone, only their audit is served"})

    def log_message(self, *args):
        pass


def audit_views(audit_dir: str | Path) -> dict[str, dict]:
    audit_dir = Path(audit_dir)
    meta_path = audit_dir / "meta.json"
    meta = json.loads(meta_path.read_text()) if meta_path.is_file() else {}
    names = meta.get("services") or sorted(p.stem for p in audit_dir.glob("*.jsonl"))
    limits = read_limits(audit_dir)
    views = {}
    for name in names:
        records, unreadable = read_audit(log_path(audit_dir, name))
        views[name] = view(name, records, (meta.get("extra") or {}).get(name), limits=limits, unreadable=unreadable)
    return views


def start(audit_dir: str | Path, host: str = "127.0.0.1", ports: dict | None = None) -> list[ThreadingHTTPServer]:
    servers = []
    for name, payload in audit_views(audit_dir).items():
        port = int({**PORTS, **(ports or {})}[name])
        server = ThreadingHTTPServer((host, port), partial(_Handler, name, payload))
        threading.Thread(target=server.serve_forever, daemon=True).start()
        servers.append(server)
    return servers


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description="serve saved WildClawBench audit logs read-only")
    p.add_argument("--audit-dir", required=True)
    p.add_argument("--host", default="127.0.0.1")
    args = p.parse_args(argv)
    servers = start(args.audit_dir, args.host)
    print(json.dumps({"replaying": [s.server_address[1] for s in servers]}), flush=True)
    threading.Event().wait()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
