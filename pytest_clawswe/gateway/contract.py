"""What the run's side (control/) and the gateway process (service/) agree on: the files the gateway writes in its
state folder, how many workers it runs, and the headers a relay on another engine sets (control/relay.py)."""
from __future__ import annotations

import os

STATE_FILE = "gateway.json"  # url, admin_token, pid: written by the gateway once it listens
LOG_FILE = "gateway.log"
RELAY_SECRET_HEADER = "X-Clawswe-Relay"  # the relay's secret: the headers below count only with it
RELAY_AGENT_HEADER = "X-Clawswe-Agent"  # the agent's address as the relay saw it


def default_workers() -> int:
    """Gateway worker processes: CLAWSWE_GATEWAY_WORKERS, else one per core up to 4 (one Python process
    uses one core at most; past 4 the model requests of a run are not that many)."""
    value = os.environ.get("CLAWSWE_GATEWAY_WORKERS", "").strip()
    if value:
        try:
            return max(1, int(value))
        except ValueError:
            raise ValueError(f"CLAWSWE_GATEWAY_WORKERS must be a whole number, not {value!r}.") from None
    return max(1, min(4, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1))
