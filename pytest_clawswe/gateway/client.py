"""Starting the gateway process and talking to its admin API (controller and xdist workers)."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

from pytest_clawswe.errors import ClawsweError
from pytest_clawswe.gateway.contract import LOG_FILE, STATE_FILE, default_workers
from pytest_clawswe.gateway.record.ledger import read_records, usage_of
from pytest_clawswe.gateway.upstream.providers import Upstream, upstreams_to_json
from pytest_clawswe.usage import Usage

class GatewayError(ClawsweError, RuntimeError):
    """The gateway is not running or not answering (an infrastructure error)."""


def openai_base_url(url: str) -> str:
    """Base URL for OpenAI-style clients (chat completions, responses)."""
    return url.rstrip("/") + "/v1"


def anthropic_base_url(url: str) -> str:
    """Base URL for Anthropic clients (they add /v1/messages themselves)."""
    return url.rstrip("/")


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
        `relay`: the engine whose relay the token is used through (gateway/relay.py; "": directly).
        `ceiling`: {"usd": limit, "prices": USD per token of input, output, cache read, cache write}: past it
        the gateway refuses the instance's calls (--max-instance-cost).
        Raises ValueError for a model the gateway can't serve (e.g. its key is not set)."""
        body = {"instance_id": instance_id, "model": model, "scripted": scripted, "address": address,
                "harness": harness, "shaping": shaping, "relay": relay, "ceiling": ceiling}
        return self._call("/_admin/register", body)["token"]

    def add_relay(self, engine: str) -> str:
        """A new relay secret for an engine's relay (gateway/relay.py): requests carrying it speak for that engine."""
        return self._call("/_admin/relay", {"engine": engine})["secret"]

    def usage(self, token: str) -> Usage:
        return Usage(**self._call("/_admin/usage", {"token": token})["usage"])

    def requests(self, token: str) -> list[dict]:
        return self._call("/_admin/requests", {"token": token})["requests"]

    def unregister(self, token: str) -> None:
        """Revoke the token (its usage stays readable)."""
        self._call("/_admin/unregister", {"token": token})


class GatewayProcess:
    """The gateway as a child process of the pytest controller."""

    def __init__(self, process: subprocess.Popen, state_dir: Path, info: dict) -> None:
        self.process = process
        self.state_dir = state_dir
        self.url: str = info["url"]
        self.admin_token: str = info["admin_token"]
        self.pid: int = info["pid"]
        self.relay_urls: dict[str, str] = info.get("relay_urls") or {}  # listen address -> URL, for relays

    @classmethod
    def start(cls, state_dir: str | Path, upstreams: list[Upstream] | tuple = (), host: str = "127.0.0.1",
              port: int = 0, timeout: float = 30.0, relay_hosts: list[str] | tuple = (),
              workers: int | None = None) -> "GatewayProcess":
        """`workers`: processes serving the port (None: default_workers(); 1: one process, as before);
        `relay_hosts`: one more listener on each, for other engines' relays (gateway/relay.py)."""
        state_dir = Path(state_dir)
        state_dir.mkdir(parents=True, exist_ok=True)
        (state_dir / STATE_FILE).unlink(missing_ok=True)  # a stale one from a crashed run
        cmd = [sys.executable, "-m", "pytest_clawswe.gateway", "serve", "--state-dir", str(state_dir),
               "--host", host, "--port", str(port), "--parent-pid", str(os.getpid()),
               "--workers", str(default_workers() if workers is None else workers)]
        if upstreams:
            cmd += ["--upstreams-json", upstreams_to_json(upstreams)]
        for relay_host in relay_hosts:  # a listener for other engines' relays (gateway/relay.py)
            cmd += ["--relay-host", relay_host]
        with open(state_dir / LOG_FILE, "ab") as log:
            # its own session: a Ctrl-C of the run must not kill it before the run has read the usage
            process = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                       start_new_session=True)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            info = _read_state(state_dir)
            if info and info.get("pid") == process.pid:
                return cls(process, state_dir, info)
            if process.poll() is not None:
                break
            time.sleep(0.05)
        _terminate(process)
        raise GatewayError(f"the model gateway did not start (see {state_dir / LOG_FILE}): {_tail(state_dir)}")

    def client(self) -> GatewayClient:
        return GatewayClient(self.url, self.admin_token)

    def stop(self, timeout: float = 10.0) -> None:
        _terminate(self.process, timeout)

    def __enter__(self) -> "GatewayProcess":
        return self

    def __exit__(self, *exc) -> None:
        self.stop()


def _read_state(state_dir: Path) -> dict | None:
    try:
        return json.loads((state_dir / STATE_FILE).read_text())
    except (OSError, ValueError):
        return None


def _terminate(process: subprocess.Popen, timeout: float = 10.0) -> None:
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(5)


def _tail(state_dir: Path, lines: int = 5) -> str:
    try:
        text = (state_dir / LOG_FILE).read_text(errors="replace")
    except OSError:
        return "no log"
    return " | ".join(text.strip().splitlines()[-lines:]) or "empty log"
