"""The model gateway under load (issue 17 §4): added latency and throughput, against a provider stub.

    python benchmarks/bench_gateway.py [--seconds 3] [--concurrency 1,3,30,300] [--no-litellm]

Three ways to reach the same provider stub on 127.0.0.1, each measured with the same load generator:
  none     the client talks to the stub itself (the floor)
  gateway  through pytest-clawswe's gateway (a real gateway process, one token per concurrent agent)
  litellm  through LiteLLM's proxy (`litellm --config`, from the venv given by --litellm-bin)
and two stubs: `zero` answers at once (the proxies' ceiling), `real` answers like a provider (~1 s to the
last token: 20 chunks 50 ms apart when streamed, one answer after 1 s when not; the agents' starts are
spread over that second, as real agents are not in lockstep).

Each run: C agents send requests back to back for --seconds (at most --max-requests in all). Reported per
run: p50/p99 latency to the last byte, requests/s, the stub's peak number of requests in flight, and for
the gateway the tokens it counted against what the stub sent (every request's usage is fixed). Added latency
= proxy p50/p99 minus the `none` p50/p99 of the same stub, mode and concurrency. Loopback only; the load
average is written with the results, since this machine is shared.

Writes benchmarks/results/gateway_load.json and .md.
"""
from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import aiohttp

RESULTS = Path(__file__).parent / "results"
KEY_ENV = "CLAWSWE_BENCH_STUB_KEY"
USAGE = {"prompt_tokens": 1200, "completion_tokens": 20, "total_tokens": 1220,
         "prompt_tokens_details": {"cached_tokens": 1000}}
BODY = {"model": "m", "messages": [{"role": "system", "content": "You are a coding agent. " * 40},
                                   {"role": "user", "content": "Fix the failing test in app.py."}],
        "max_tokens": 256}


# ---------------------------------------------------------------------------------- the provider stub
def serve_stub(port: int, delay: float) -> None:
    from aiohttp import web

    stats = {"inflight": 0, "peak": 0, "count": 0}
    answer = json.dumps({"id": "c1", "object": "chat.completion", "created": 1, "model": "m", "usage": USAGE,
                         "choices": [{"index": 0, "finish_reason": "stop",
                                      "message": {"role": "assistant", "content": "Done: fixed app.py."}}]}).encode()
    base = ('{"id":"c1","object":"chat.completion.chunk","created":1,"model":"m",'
            '"choices":[{"index":0,"delta":%s,"finish_reason":%s}]}')
    pieces = 20

    async def chat(request):
        body = await request.json()
        stats["inflight"] += 1
        stats["peak"] = max(stats["peak"], stats["inflight"])
        stats["count"] += 1
        try:
            if not body.get("stream"):
                if delay:
                    await asyncio.sleep(delay)
                return web.Response(body=answer, content_type="application/json")
            resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
            await resp.prepare(request)
            for i in range(pieces):
                delta = json.dumps({"content": f"tok{i} "} if i else {"role": "assistant", "content": ""})
                await resp.write(b"data: " + (base % (delta, "null")).encode() + b"\n\n")
                if delay:
                    await asyncio.sleep(delay / pieces)
            await resp.write(b"data: " + (base % ("{}", '"stop"')).encode() + b"\n\n")
            if (body.get("stream_options") or {}).get("include_usage"):
                usage = {"id": "c1", "object": "chat.completion.chunk", "created": 1, "model": "m", "choices": [],
                         "usage": USAGE}
                await resp.write(b"data: " + json.dumps(usage).encode() + b"\n\n")
            await resp.write(b"data: [DONE]\n\n")
            await resp.write_eof()
            return resp
        finally:
            stats["inflight"] -= 1

    async def get_stats(request):
        return web.json_response(stats)

    async def reset(request):
        stats.update(peak=0, count=0)
        return web.json_response(stats)

    app = web.Application()
    app.add_routes([web.post("/v1/chat/completions", chat), web.post("/chat/completions", chat),
                    web.get("/stats", get_stats), web.post("/reset", reset)])
    web.run_app(app, host="127.0.0.1", port=port, access_log=None, print=None, backlog=4096)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_http(url: str, timeout: float = 60, process=None) -> None:
    import urllib.request

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process is not None and process.poll() is not None:
            raise RuntimeError(f"the process serving {url} exited ({process.returncode})")
        try:
            urllib.request.urlopen(url, timeout=2).read()
            return
        except Exception as exc:  # refused, 404, 401: it is up once it answers at all
            if getattr(exc, "code", None):
                return
            time.sleep(0.2)
    raise RuntimeError(f"{url} did not come up")


# ---------------------------------------------------------------------------------- the load generator
async def load(url: str, tokens: list[str], concurrency: int, stream: bool, seconds: float, max_requests: int,
               ramp: float = 0.0):
    """C agents back to back, their starts spread over `ramp` seconds (real agents are not in lockstep):
    (latencies in s, errors, elapsed)."""
    latencies: list[float] = []
    errors = 0
    body = {**BODY, "stream": stream, **({"stream_options": {"include_usage": True}} if stream else {})}
    data = json.dumps(body).encode()
    stop_at = time.monotonic() + seconds
    started = 0
    conn = aiohttp.TCPConnector(limit=0, force_close=False)
    timeout = aiohttp.ClientTimeout(total=120)
    async with aiohttp.ClientSession(connector=conn, timeout=timeout) as http:
        async def agent(i: int) -> None:
            nonlocal errors, started
            await asyncio.sleep(ramp * i / concurrency)
            headers = {"Authorization": f"Bearer {tokens[i % len(tokens)]}", "Content-Type": "application/json"}
            while time.monotonic() < stop_at and started < max_requests:
                started += 1
                t = time.perf_counter()
                try:
                    async with http.post(url, data=data, headers=headers) as resp:
                        payload = await resp.read()
                        ok = resp.status == 200 and (b"[DONE]" in payload if stream else b'"usage"' in payload)
                except (aiohttp.ClientError, asyncio.TimeoutError):
                    ok = False
                if ok:
                    latencies.append(time.perf_counter() - t)
                else:
                    errors += 1

        t0 = time.perf_counter()
        await asyncio.gather(*(agent(i) for i in range(concurrency)))
        elapsed = time.perf_counter() - t0
    return latencies, errors, elapsed


def pct(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    values = sorted(values)
    return values[min(len(values) - 1, int(round(q * (len(values) - 1))))]


# ---------------------------------------------------------------------------------- the three targets
class Target:
    name = ""
    url = ""
    tokens = ["sk-none"]
    pid = 0  # the proxy's process, whose CPU time per request is measured

    def cpu_s(self) -> float:
        if not self.pid:
            return 0.0
        fields = Path(f"/proc/{self.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def prepare(self, concurrency: int) -> None:
        pass

    def check(self, completed: int) -> dict:
        return {}

    def stop(self) -> None:
        pass


class NoProxy(Target):
    name = "none"

    def __init__(self, stub_url: str) -> None:
        self.url = stub_url + "/v1/chat/completions"


class Gateway(Target):
    name = "gateway"

    def __init__(self, stub_url: str, state_dir: Path) -> None:
        from pytest_clawswe.gateway import GatewayProcess, Upstream

        os.environ[KEY_ENV] = "sk-bench-stub-key"
        self.process = GatewayProcess.start(state_dir, [Upstream("stub", stub_url + "/v1", KEY_ENV)])
        self.client = self.process.client()
        self.pid = self.process.pid
        self.url = self.process.url + "/v1/chat/completions"
        self.run = 0

    def prepare(self, concurrency: int) -> None:
        self.run += 1  # fresh tokens (and ledger files) for every run, one per agent
        self.tokens = [self.client.register(f"bench{self.run}__agent{i}", "stub/m") for i in range(concurrency)]

    def check(self, completed: int) -> dict:
        from pytest_clawswe.results import Usage

        # a streamed answer is recorded right after its last byte: the client may be quicker than that
        deadline = time.monotonic() + 10
        while True:
            total = Usage()
            for token in self.tokens:
                total += self.client.usage(token)
            if total.requests >= completed or time.monotonic() > deadline:
                break
            time.sleep(0.2)
        from pytest_clawswe.gateway import read_usage

        on_disk = Usage()
        for i in range(len(self.tokens)):
            on_disk += read_usage(self.process.state_dir, f"bench{self.run}__agent{i}")
        per = {"input_tokens": 200, "output_tokens": 20, "cache_read_tokens": 1000}
        expected = {k: v * completed for k, v in per.items()}
        counted = {"requests": total.requests, **{k: getattr(total, k) for k in per}}
        exact = all(counted[k] == expected[k] for k in per) and total.requests == completed and on_disk == total
        return {"tokens_exact": exact, "requests_counted": total.requests, "requests_on_disk": on_disk.requests}

    def stop(self) -> None:
        self.process.stop()


class LiteLLM(Target):
    name = "litellm"

    def __init__(self, stub_url: str, litellm_bin: str, workdir: Path) -> None:
        config = workdir / "litellm.yaml"
        config.write_text(
            "model_list:\n  - model_name: m\n    litellm_params:\n      model: openai/m\n"
            f"      api_base: {stub_url}/v1\n      api_key: sk-bench-stub-key\n")
        port = free_port()
        self.log = open(workdir / "litellm.log", "wb")
        master = "sk-bench-litellm-master-key-0123456789abcdef"  # it refuses to start without one
        env = {**os.environ, "LITELLM_LOG": "ERROR", "LITELLM_MASTER_KEY": master}
        self.tokens = [master]
        self.process = subprocess.Popen([litellm_bin, "--config", str(config), "--host", "127.0.0.1",
                                         "--port", str(port)], stdout=self.log, stderr=subprocess.STDOUT, env=env,
                                        start_new_session=True)
        self.url = f"http://127.0.0.1:{port}/v1/chat/completions"
        self.pid = self.process.pid
        wait_http(f"http://127.0.0.1:{port}/health/liveliness", timeout=180, process=self.process)

    def stop(self) -> None:
        os.killpg(self.process.pid, signal.SIGTERM)
        try:
            self.process.wait(20)
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, signal.SIGKILL)


def stub_stats(stub_url: str, reset: bool = False) -> dict:
    import urllib.request

    request = urllib.request.Request(stub_url + ("/reset" if reset else "/stats"), data=b"" if reset else None)
    return json.loads(urllib.request.urlopen(request, timeout=10).read())


# ---------------------------------------------------------------------------------- the grid
def run_grid(args) -> dict:
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench-gateway-") as tmp:
        tmp = Path(tmp)
        for stub_kind, delay in (("zero", 0.0), ("real", 1.0)):
            if stub_kind not in args.stubs:
                continue
            port = free_port()
            stub = subprocess.Popen([sys.executable, __file__, "--serve-stub", str(port), str(delay)],
                                    start_new_session=True)
            stub_url = f"http://127.0.0.1:{port}"
            wait_http(stub_url + "/stats")
            targets = [NoProxy(stub_url), Gateway(stub_url, tmp / f"gw-{stub_kind}")]
            if args.litellm_bin:
                try:
                    targets.append(LiteLLM(stub_url, args.litellm_bin, tmp))
                except RuntimeError as exc:
                    print(f"litellm skipped: {exc} (see its log)", file=sys.stderr)
            try:
                for target in targets:
                    for stream in (False, True):
                        for c in args.concurrency:
                            if target.name == "litellm" and c > args.litellm_max_concurrency:
                                continue
                            target.prepare(c)
                            asyncio.run(load(target.url, target.tokens, min(c, 3), stream, 0.3, 20))  # warm up
                            target.prepare(c)
                            stub_stats(stub_url, reset=True)
                            seconds = args.seconds if delay == 0 else max(args.seconds, 5.0)
                            cpu0 = target.cpu_s()
                            lat, errors, elapsed = asyncio.run(load(target.url, target.tokens, c, stream, seconds,
                                                                    args.max_requests, ramp=delay))
                            cpu = target.cpu_s() - cpu0
                            row = {"stub": stub_kind, "target": target.name, "stream": stream, "concurrency": c,
                                   "requests": len(lat), "errors": errors, "seconds": round(elapsed, 2),
                                   "req_per_s": round(len(lat) / elapsed, 1),
                                   "p50_ms": round(pct(lat, 0.5) * 1000, 2), "p99_ms": round(pct(lat, 0.99) * 1000, 2),
                                   "stub_peak_in_flight": stub_stats(stub_url)["peak"],
                                   "proxy_cpu_ms_per_req": (round(cpu * 1000 / max(1, len(lat)), 3)
                                                            if target.pid else None),
                                   "load_avg_1m": round(os.getloadavg()[0], 2), **target.check(len(lat))}
                            rows.append(row)
                            print(json.dumps(row), flush=True)
            finally:
                for target in targets:
                    target.stop()
                os.killpg(stub.pid, signal.SIGTERM)
                stub.wait(10)
    for row in rows:  # added latency against no proxy, same stub, mode and concurrency
        base = next((r for r in rows if r["target"] == "none" and r["stub"] == row["stub"]
                     and r["stream"] == row["stream"] and r["concurrency"] == row["concurrency"]), None)
        if base and row["target"] != "none":
            row["added_p50_ms"] = round(row["p50_ms"] - base["p50_ms"], 2)
            row["added_p99_ms"] = round(row["p99_ms"] - base["p99_ms"], 2)
    return {"machine": {"cores": os.cpu_count(), "load_avg_at_end": [round(x, 2) for x in os.getloadavg()],
                        "note": "2 cores shared with 5 other engineers' jobs (Docker builds, test runs): "
                                "figures are lower bounds of what an idle machine gives"},
            "settings": {"seconds": args.seconds, "seconds_real_stub": max(args.seconds, 5.0),
                         "max_requests": args.max_requests,
                         "stubs": {"zero": "answers at once", "real": "1 s to the last token (20 chunks)"}},
            "rows": rows}


def write_markdown(result: dict, path: Path) -> None:
    """One line per stub, mode and concurrency: the floor, then each proxy's added latency, rate and CPU."""
    lines = ["# Gateway under load (benchmarks/bench_gateway.py)", "",
             f"Machine: {result['machine']['cores']} cores, load average at the end "
             f"{result['machine']['load_avg_at_end']}. {result['machine']['note']}.", "",
             "Latency to the last byte; added = proxy minus no proxy (same stub, mode, concurrency). "
             "CPU = the proxy process's CPU time per request.", "",
             "| stub | mode | C | none p50 / p99 ms | none req/s | gateway added p50 / p99 ms | gateway req/s "
             "| gateway CPU ms/req | litellm added p50 / p99 ms | litellm req/s | litellm CPU ms/req "
             "| stub peak in flight (gateway) | gateway tokens exact |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    rows = result["rows"]
    keys = sorted({(r["stub"], r["stream"], r["concurrency"]) for r in rows},
                  key=lambda k: (k[0] != "zero", k[1], k[2]))

    def added(r):
        return f"{r['added_p50_ms']:+.2f} / {r['added_p99_ms']:+.2f}" if r and "added_p50_ms" in r else "-"

    def field(r, name):
        return "-" if not r or r.get(name) is None else r[name]

    for stub, stream, c in keys:
        get = {r["target"]: r for r in rows if (r["stub"], r["stream"], r["concurrency"]) == (stub, stream, c)}
        none, gw, ll = get.get("none"), get.get("gateway"), get.get("litellm")
        floor = f"{none['p50_ms']:.2f} / {none['p99_ms']:.2f} | {none['req_per_s']:.0f}" if none else "- | -"
        lines.append(f"| {stub} | {'stream' if stream else 'plain'} | {c} | {floor} | {added(gw)} | "
                     f"{field(gw, 'req_per_s')} | {field(gw, 'proxy_cpu_ms_per_req')} | {added(ll)} | "
                     f"{field(ll, 'req_per_s')} | {field(ll, 'proxy_cpu_ms_per_req')} | "
                     f"{field(gw, 'stub_peak_in_flight')} | {field(gw, 'tokens_exact')} |")
    path.write_text("\n".join(lines) + "\n")


def main() -> int:
    if len(sys.argv) == 4 and sys.argv[1] == "--serve-stub":
        serve_stub(int(sys.argv[2]), float(sys.argv[3]))
        return 0
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=3.0, help="per run (the realistic stub: at least 3)")
    parser.add_argument("--max-requests", type=int, default=30000, help="per run, whatever the time")
    parser.add_argument("--concurrency", default="1,3,30,300")
    parser.add_argument("--stubs", default="zero,real")
    parser.add_argument("--litellm-bin", default="", help="the litellm command (e.g. in its own venv); empty: skip")
    parser.add_argument("--litellm-max-concurrency", type=int, default=300)
    parser.add_argument("--out", default=str(RESULTS / "gateway_load.json"))
    parser.add_argument("--markdown-only", action="store_true", help="rewrite the .md from the .json, no run")
    args = parser.parse_args()
    if args.markdown_only:
        write_markdown(json.loads(Path(args.out).read_text()), Path(args.out).with_suffix(".md"))
        return 0
    args.concurrency = [int(c) for c in args.concurrency.split(",")]
    args.stubs = args.stubs.split(",")
    result = run_grid(args)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=1) + "\n")
    write_markdown(result, out.with_suffix(".md"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
