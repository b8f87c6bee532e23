"""Per-instance tokens: who may call the gateway, with which model, and what they used."""
from __future__ import annotations

import hmac
import secrets
import threading
from dataclasses import dataclass, field
from pathlib import Path

from pytest_clawswe.results import Usage

from . import ledger
from .scripted import ScriptedModel
from .scripted_wildclaw import scripted_for
from .upstream import SCRIPTED_PREFIX, Upstream, check_upstream, is_scripted, resolve

TOKEN_PREFIX = "clawswe-"


@dataclass
class Registration:
    token: str
    instance_id: str
    model: str  # the benchmark model name, e.g. openrouter/z-ai/glm-5.1 or scripted/gold
    attempt: int  # 1 + earlier registrations of this instance in the same state dir
    scripted: ScriptedModel | None = None
    upstream: Upstream | None = None
    upstream_model: str = ""
    active: bool = True
    usage: Usage = field(default_factory=Usage)
    records: list[dict] = field(default_factory=list)


class Registry:
    def __init__(self, state_dir: str | Path, upstreams: list[Upstream] | tuple = ()) -> None:
        self.state_dir = Path(state_dir)
        self.upstreams = list(upstreams)
        self._by_token: dict[str, Registration] = {}
        self._lock = threading.Lock()

    def register(self, instance_id: str, model: str, scripted: dict | None = None) -> Registration:
        """A new token for one run of one instance. Raises ValueError for a model it can't serve."""
        if not instance_id:
            raise ValueError("register needs an instance_id")
        check_upstream(model, self.upstreams)
        reg = Registration(secrets.token_urlsafe(24), instance_id, model, 0)
        if is_scripted(model):
            config = {"mode": model[len(SCRIPTED_PREFIX):], **(scripted or {})}
            reg.scripted = scripted_for(config)
        else:
            reg.upstream, reg.upstream_model = resolve(model, self.upstreams)
        reg.token = TOKEN_PREFIX + reg.token
        with self._lock:
            earlier = [r.attempt for r in self._by_token.values() if r.instance_id == instance_id]
            if not earlier:  # a resumed run: continue the numbering found on disk
                earlier = [r.get("attempt", 0) for r in ledger.read_records(self.state_dir, instance_id)]
            reg.attempt = max(earlier, default=0) + 1
            self._by_token[reg.token] = reg
        return reg

    def lookup(self, token: str | None) -> Registration | None:
        """The registration of a token, active or not (the admin API reads revoked ones too)."""
        if not token:
            return None
        with self._lock:
            for known, reg in self._by_token.items():
                if hmac.compare_digest(known.encode(), token.encode()):
                    return reg
        return None

    def authenticate(self, token: str | None) -> Registration | None:
        reg = self.lookup(token)
        return reg if reg is not None and reg.active else None

    def unregister(self, token: str) -> bool:
        reg = self.lookup(token)
        if reg is None:
            return False
        reg.active = False
        return True

    def record(self, reg: Registration, record: dict) -> None:
        """Count one model request: on disk first, then in memory."""
        ledger.append(self.state_dir, record)
        with self._lock:
            reg.records.append(record)
            reg.usage += ledger.usage_of([record])
