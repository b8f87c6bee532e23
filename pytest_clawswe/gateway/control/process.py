"""The gateway as a child process of the pytest controller: `python -m pytest_clawswe.gateway serve` started,
waited for (its state file), and stopped."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from pytest_clawswe.gateway.contract import LOG_FILE, STATE_FILE, default_workers
from pytest_clawswe.gateway.control.admin_api import GatewayClient, GatewayError
from pytest_clawswe.gateway.upstream.providers import Upstream, upstreams_to_json


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
        `relay_hosts`: one more listener on each, for other engines' relays (gateway/control/relay.py)."""
        state_dir = Path(state_dir)
        state_dir.mkdir(parents=True, exist_ok=True)
        (state_dir / STATE_FILE).unlink(missing_ok=True)  # a stale one from a crashed run
        cmd = [sys.executable, "-m", "pytest_clawswe.gateway", "serve", "--state-dir", str(state_dir),
               "--host", host, "--port", str(port), "--parent-pid", str(os.getpid()),
               "--workers", str(default_workers() if workers is None else workers)]
        if upstreams:
            cmd += ["--upstreams-json", upstreams_to_json(upstreams)]
        for relay_host in relay_hosts:  # a listener for other engines' relays (gateway/control/relay.py)
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
