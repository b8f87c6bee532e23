"""The gateway's admin API as the run uses it (the controller and every xdist worker): register an instance, read
its usage and requests, revoke its token, add a relay; and an instance's usage read from the files alone."""
from __future__ import annotations

import json
import urllib.error
import urllib.request
from pathlib import Path

from pytest_clawswe.errors import ClawsweError
from pytest_clawswe.gateway.contract import STATE_FILE
from pytest_clawswe.gateway.record.ledger import read_records, usage_of
from pytest_clawswe.usage import Usage


class GatewayError(ClawsweError, RuntimeError):
    """The gateway is not running or not answering (an infrastructure error)."""


def read_usage(state_dir: str | Path, instance_id: str, attempt: int | None = None) -> Usage:
    """An instance's usage from the gateway's files: works after the gateway is gone."""
    return usage_of(read_records(state_dir, instance_id, attempt))


class GatewayClient:
    def __init__(self, url: str, admin_token: str, timeout: float = 30.0) -> None:
        self.url = url.rstrip("/")
        self.admin_token = admin_token
        self.timeout = timeout

    @classmethod
    def from_state_dir(cls, state_dir: str | Path) -> "GatewayClient":
        """The client for the gateway serving this state dir (how an xdist worker finds it)."""
        path = Path(state_dir) / STATE_FILE
        try:
            info = json.loads(path.read_text())
        except (OSError, ValueError) as exc:
            raise GatewayError(f"no running model gateway found: {path} is missing or unreadable") from exc
        return cls(info["url"], info["admin_token"])

    def _call(self, path: str, body: dict | None = None) -> dict:
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(self.url + path, data=data, method="GET" if body is None else "POST")
        request.add_header("Authorization", f"Bearer {self.admin_token}")
        request.add_header("Content-Type", "application/json")
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as resp:
                return json.loads(resp.read())
        except urllib.error.HTTPError as exc:
            try:
                message = json.loads(exc.read()).get("error", "")
            except ValueError:
                message = ""
            if exc.code == 400:
                raise ValueError(message or "the gateway refused the request") from None
            raise GatewayError(f"model gateway {path} answered {exc.code}: {message}") from None
        except (urllib.error.URLError, OSError) as exc:
            raise GatewayError(f"model gateway at {self.url} is not reachable ({exc})") from None

    def health(self) -> bool:
        return bool(self._call("/_admin/health").get("ok"))

    def workers(self) -> int:
        """How many worker processes serve the port right now (they join after the gateway is up)."""
        return int(self._call("/_admin/health").get("workers") or 1)

    def register(self, instance_id: str, model: str, scripted: dict | None = None, address: str = "",
                 harness: str = "", shaping: str | list[str] | None = None, relay: str = "",
                 ceiling: dict | None = None) -> str:
        """A token for one run of one instance. `scripted` (for scripted/* models):
        {"mode": "gold"|"noop", "gold_patch": str, "workdir": "/testbed", "finish_command": str|None}.
        `address`: the token works from this client address only (the container's, on the run network).
        `harness`, `shaping`: which model-side shaping applies (gateway/upstream/shaping.py; None: the defaults).
        `relay`: the engine whose relay the token is used through (gateway/control/relay.py; "": directly).
        `ceiling`: {"usd": limit, "prices": USD per token of input, output, cache read, cache write}: past it
        the gateway refuses the instance's calls (--max-instance-cost).
        Raises ValueError for a model the gateway can't serve (e.g. its key is not set)."""
        body = {"instance_id": instance_id, "model": model, "scripted": scripted, "address": address,
                "harness": harness, "shaping": shaping, "relay": relay, "ceiling": ceiling}
        return self._call("/_admin/register", body)["token"]

    def add_relay(self, engine: str) -> str:
        """A new relay secret for an engine's relay (gateway/control/relay.py): requests carrying it speak for that engine."""
        return self._call("/_admin/relay", {"engine": engine})["secret"]

    def usage(self, token: str) -> Usage:
        return Usage(**self._call("/_admin/usage", {"token": token})["usage"])

    def requests(self, token: str) -> list[dict]:
        return self._call("/_admin/requests", {"token": token})["requests"]

    def unregister(self, token: str) -> None:
        """Revoke the token (its usage stays readable)."""
        self._call("/_admin/unregister", {"token": token})
