"""The live services: one process, one HTTP listener per service, every call audited.

    python -m mock.app --config config.json --fixtures DIR --audit-dir DIR

config.json (the task's service config): {"services": [...], "error_rate": 0.0, "error_seed": 0,
"search_budget": null, "host": "127.0.0.1", "ports": {...}}. Fixtures: DIR/<service>.json|yaml|yml,
the search corpus in DIR/search/, and optionally "audit_max_calls" and "audit_max_mb" (the task's audit limits,
auditview.MAX_CALLS and MAX_MB by default). The audit goes to DIR/<service>.jsonl and DIR/limits.json
(see auditview)."""
from __future__ import annotations

import argparse
import asyncio
import json
import signal
import time
from datetime import UTC, datetime
from pathlib import Path

import yaml
from aiohttp import web

from . import PORTS
from .auditview import MAX_CALLS, MAX_MB, AuditBudget, AuditLog, log_path, view
from .faults import FaultPlan
from .services import ApiError, Calendar, Contacts, Gmail, Slack

SERVICE_CLASSES = {"gmail": Gmail, "calendar": Calendar, "contacts": Contacts, "slack": Slack}
MAX_BODY = 4 * 2**20  # per call
# A fixture that is a bare list (as a released task's inbox.json may be) is this service's main list.
MAIN_LIST = {"gmail": "messages", "slack": "messages", "calendar": "events", "contacts": "contacts"}


def load_fixture(folder: Path, name: str) -> dict | None:
    for suffix in (".json", ".yaml", ".yml"):
        path = folder / f"{name}{suffix}"
        if path.is_file():
            text = path.read_text(encoding="utf-8")
            data = json.loads(text) if suffix == ".json" else yaml.safe_load(text)
            if isinstance(data, list):
                data = {MAIN_LIST.get(name, "items"): data}
            return data or {}
    return None


class Runtime:
    """One service: its state, audit log, fault plan, and a lock that puts its calls in one order; the budget
    is the task's, shared by its services."""

    def __init__(self, service, log: AuditLog, faults: FaultPlan, budget: AuditBudget, extra: dict | None = None):
        self.service, self.log, self.faults, self.extra = service, log, faults, extra or {}
        self.budget = budget
        self.lock = asyncio.Lock()
        self.seq = 0

    @property
    def name(self) -> str:
        return self.service.name


def build_runtimes(config: dict, fixtures: Path, audit_dir: Path) -> dict[str, Runtime]:
    fixtures, audit_dir = Path(fixtures), Path(audit_dir)
    wanted = config.get("services") or [n for n in SERVICE_CLASSES if load_fixture(fixtures, n) is not None] + (
        ["search"] if (fixtures / "search").is_dir() else [])
    rate, seed = float(config.get("error_rate") or 0.0), config.get("error_seed", 0)
    audit_dir.mkdir(parents=True, exist_ok=True)
    limits = AuditBudget(audit_dir, config.get("audit_max_calls") or MAX_CALLS, config.get("audit_max_mb") or MAX_MB)
    runtimes = {}
    for name in wanted:
        extra = {}
        if name == "search":
            from .search import Search, load_corpus

            budget = config.get("search_budget")
            service = Search({}, load_corpus(fixtures / "search"), None if budget is None else int(budget))
            extra = {"budget": service.budget}
        elif name in SERVICE_CLASSES:
            service = SERVICE_CLASSES[name](load_fixture(fixtures, name) or {})
        else:
            raise ValueError(f"unknown service {name!r}; known: {', '.join([*SERVICE_CLASSES, 'search'])}")
        runtimes[name] = Runtime(service, AuditLog(log_path(audit_dir, name)), FaultPlan(rate, seed, name), limits,
                                 extra)
    (audit_dir / "meta.json").write_text(json.dumps(
        {"services": list(runtimes), "error_rate": rate, "error_seed": seed,
         "extra": {n: rt.extra for n, rt in runtimes.items()}}, indent=1))
    return runtimes


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds")


def make_app(rt: Runtime) -> web.Application:
    routes = rt.service.routes()

    async def health(request):
        return web.json_response({"status": "ok", "service": rt.name})

    async def audit(request):
        return web.json_response(view(rt.name, rt.log.records, rt.extra, limits=rt.budget.state()))

    def refuse(endpoint: str, used_up: str, size: int) -> web.Response:
        what = (f"{rt.budget.max_calls} calls" if used_up == "calls"
                else f"{rt.budget.max_bytes / 2**20:g} MiB of calls")
        error = (f"this task's services take at most {what}, and they were made; this call was refused and "
                 f"recorded: finish with what you have")
        if rt.budget.refuse():
            rt.log.append({"seq": rt.seq, "time": _now(), "service": rt.name, "method": "POST",
                           "endpoint": endpoint[:200], "status": 429, "refused": used_up, "request_bytes": size})
        return web.json_response({"error": error}, status=429)

    async def call(request: web.Request):
        endpoint = request.path
        async with rt.lock:  # one call at a time per service: the audit order is the fault order
            rt.seq += 1
            used_up = rt.budget.take()
            if used_up:  # before the fault draw and the handler: the service's state stays as audited
                return refuse(endpoint, used_up, request.content_length or 0)
            fault = rt.faults.next()
            try:
                raw = await request.read()
            except web.HTTPRequestEntityTooLarge:  # over MAX_BODY: refused, and in the audit as such
                rt.log.append({"seq": rt.seq, "time": _now(), "service": rt.name, "method": "POST",
                               "endpoint": endpoint[:200], "status": 413, "refused": "size",
                               "request_bytes": request.content_length})
                return web.json_response({"error": f"a call's body may hold at most {MAX_BODY >> 20} MiB"},
                                         status=413)
            headers, effects = {}, {}
            try:
                body = json.loads(raw or b"{}")
            except ValueError:
                body = raw.decode("utf-8", "replace")
            if fault and fault.kind == "429":
                status, response = 429, {"error": "rate limited; retry after 2 seconds"}
                headers["Retry-After"] = "2"
            elif fault and fault.kind == "500":
                status, response = 500, {"error": "internal server error; try again"}
            else:
                if fault:
                    await asyncio.sleep(fault.delay)
                handler = routes.get(endpoint)
                try:
                    if handler is None:
                        raise ApiError(404, f"no endpoint POST {endpoint}; see the skill's API table")
                    if not isinstance(body, dict):
                        raise ApiError(400, "the request body must be a JSON object")
                    status, response, effects = handler(body)
                except ApiError as exc:
                    status, response, effects = exc.status, {"error": str(exc)}, exc.effects
                except (ValueError, TypeError, KeyError) as exc:
                    status, response = 400, {"error": f"bad request: {exc}"}
            rt.budget.wrote(rt.log.append({
                "seq": rt.seq, "time": _now(), "service": rt.name, "method": "POST", "endpoint": endpoint,
                "request": body, "response": response, "status": status, "fault": fault.kind if fault else None,
                "delay": fault.delay if fault else 0.0, "effects": {k: v for k, v in effects.items() if v}}))
        return web.json_response(response, status=status, headers=headers)

    app = web.Application(client_max_size=MAX_BODY)
    app.router.add_get("/health", health)
    app.router.add_get(f"/{rt.name}/health", health)
    app.router.add_get(f"/{rt.name}/audit", audit)
    app.router.add_post("/{tail:.*}", call)
    return app


async def serve(config: dict, fixtures: Path, audit_dir: Path, ready=None) -> None:
    runtimes = build_runtimes(config, fixtures, audit_dir)
    host, ports = config.get("host", "127.0.0.1"), {**PORTS, **(config.get("ports") or {})}
    runners = []
    for name, rt in runtimes.items():
        runner = web.AppRunner(make_app(rt), access_log=None)
        await runner.setup()
        await web.TCPSite(runner, host, int(ports[name])).start()
        runners.append(runner)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        try:
            loop.add_signal_handler(sig, stop.set)
        except (NotImplementedError, RuntimeError):
            pass
    print(json.dumps({"ready": {n: int(ports[n]) for n in runtimes}, "at": time.time()}), flush=True)
    if ready is not None:
        ready(stop)
    try:
        await stop.wait()
    finally:
        for runner in runners:
            await runner.cleanup()
        for rt in runtimes.values():
            rt.log.close()


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description="WildClawBench mock services with audit logs")
    p.add_argument("--config", required=True)
    p.add_argument("--fixtures", required=True)
    p.add_argument("--audit-dir", required=True)
    args = p.parse_args(argv)
    config = json.loads(Path(args.config).read_text())
    asyncio.run(serve(config, Path(args.fixtures), Path(args.audit_dir)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())


class ServicesThread:
    """The services in a thread of this process (tests, and runs without Docker); `stop()` ends them."""

    def __init__(self, config: dict, fixtures: Path, audit_dir: Path, timeout: float = 30):
        import threading

        self._stop = None
        self._loop = None
        self._error: BaseException | None = None
        started = threading.Event()

        def ready(stop):
            self._stop, self._loop = stop, asyncio.get_running_loop()
            started.set()

        def run():
            try:
                asyncio.run(serve(config, Path(fixtures), Path(audit_dir), ready))
            except Exception as exc:  # noqa: BLE001 -- reported to the caller below
                self._error = exc
                started.set()

        self.ports = {**PORTS, **(config.get("ports") or {})}
        self.host = config.get("host", "127.0.0.1")
        self._thread = threading.Thread(target=run, name="wildclaw-services", daemon=True)
        self._thread.start()
        if not started.wait(timeout) or self._error:
            raise RuntimeError(f"the services did not start: {self._error!r}")

    def url(self, service: str) -> str:
        return f"http://{self.host}:{self.ports[service]}"

    def stop(self) -> None:
        if self._loop is not None and self._thread.is_alive():
            self._loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(10)
