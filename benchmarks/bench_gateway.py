"""The model gateway under load (issue 17 §4): added latency and throughput, against a provider stub.

    python benchmarks/bench_gateway.py [--seconds 3] [--concurrency 1,3,30,300] [--workers N] [--litellm-bin B]

Needs `wrk` (the load generator) and `nginx` with the echo module (the provider stub): on Debian
`apt-get install wrk nginx-light`. Both are C and cost a small fraction of the proxy's CPU per request, so
what saturates is the proxy under test, not the harness around it (a Python load generator and stub
saturated at ~1,000-2,000 req/s on this machine, below the gateway's ceiling).

Three ways to reach the same provider stub on 127.0.0.1, each driven by the same wrk:
  none     wrk talks to the stub itself (the floor)
  gateway  through pytest-clawswe's gateway (a real gateway process with --workers worker processes)
  litellm  through LiteLLM's proxy (`litellm --config`, from the venv given by --litellm-bin)
and two stubs (one nginx, one location each): `zero` answers at once with a fixed body (the proxies'
ceiling), `real` answers like a provider: the JSON after 1 s, or 20 chunks 50 ms apart when streamed
(nginx's echo_sleep paces them; connections are spread over that second after their first answer).

Each run: C connections (one agent each) send requests back to back for --seconds. Reported per run: p50/p99
latency to the last byte (wrk), requests/s, the CPU time per request of the proxy (all its processes), of
wrk and of the stub, the stub's peak number of requests in flight (nginx's stub_status, sampled), and for
the gateway: tokens counted (admin API, summed over the agents' tokens, and the fsynced ledger files)
against the requests the stub answered × the stub's fixed usage. Added latency = proxy p50/p99 minus the
`none` p50/p99 of the same stub, mode and concurrency. Loopback only; the load average is written with
the results, since this machine is shared.

Writes benchmarks/results/gateway_load.json and .md. `--recording-ab` instead measures what recording every
call (gateway/record/calls.py) adds, recording on against off: benchmarks/results/gateway_recording.json and .md.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

RESULTS = Path(__file__).parent / "results"
KEY_ENV = "CLAWSWE_BENCH_STUB_KEY"
USAGE = {"prompt_tokens": 1200, "completion_tokens": 20, "total_tokens": 1220,
         "prompt_tokens_details": {"cached_tokens": 1000}}
PER_REQUEST = {"input_tokens": 200, "output_tokens": 20, "cache_read_tokens": 1000}  # USAGE as the gateway counts
MESSAGES = [{"role": "system", "content": "You are a coding agent. " * 40},
            {"role": "user", "content": "Fix the failing test in app.py."}]
PIECES = 20
STUBS = {"zero": "answers at once (nginx, fixed body)",
         "real": "1 s to the last token: 20 chunks 50 ms apart (nginx echo_sleep), or the JSON after 1 s"}


def body(model: str, stream: bool) -> dict:
    extra = {"stream": True, "stream_options": {"include_usage": True}} if stream else {}
    return {"model": model, "messages": MESSAGES, "max_tokens": 256, **extra}


# ---------------------------------------------------------------------------------- the provider stub (nginx)
def _answer() -> str:
    return json.dumps({"id": "c1", "object": "chat.completion", "created": 1, "model": "m", "usage": USAGE,
                       "choices": [{"index": 0, "finish_reason": "stop",
                                    "message": {"role": "assistant", "content": "Done: fixed app.py."}}]},
                      separators=(",", ":"))


def _events() -> list[str]:
    def chunk(delta, finish):
        return json.dumps({"id": "c1", "object": "chat.completion.chunk", "created": 1, "model": "m",
                           "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}, separators=(",", ":"))

    events = [chunk({"content": f"tok{i} "} if i else {"role": "assistant", "content": ""}, None)
              for i in range(PIECES)]
    events.append(chunk({}, "stop"))
    events.append(json.dumps({"id": "c1", "object": "chat.completion.chunk", "created": 1, "model": "m",
                              "choices": [], "usage": USAGE}, separators=(",", ":")))
    events.append("[DONE]")
    return [f"data: {e}\\n\\n" for e in events]  # nginx turns \n in a quoted string into a newline


def nginx_conf(workdir: Path, port: int, status_port: int) -> str:
    events = _events()
    zero_sse = "".join(events)
    paced = []
    for i, event in enumerate(events):
        if i < PIECES:
            paced.append(f"echo_sleep {1.0 / PIECES:.3f}; echo -n '{event}'; echo_flush;")
        else:
            paced.append(f"echo -n '{event}';")
    log = f"access_log {workdir}/stub-access.log counted;"
    # keep-alive without limit: the proxies keep their upstream connections, as they would to a provider
    modules = "".join(f"load_module {m};\n" for m in sorted(Path("/usr/lib/nginx/modules").glob("*echo*.so")))
    return f"""{modules}
daemon off;
worker_processes 1;
pid {workdir}/nginx.pid;
error_log {workdir}/nginx-error.log warn;
events {{ worker_connections 8192; }}
http {{
  log_format counted '$status';
  access_log off;
  keepalive_requests 100000000;
  keepalive_timeout 300s;
  client_body_temp_path {workdir}/nginx-body;
  proxy_temp_path {workdir}/nginx-proxy;
  fastcgi_temp_path {workdir}/nginx-fastcgi;
  uwsgi_temp_path {workdir}/nginx-uwsgi;
  scgi_temp_path {workdir}/nginx-scgi;
  server {{
    listen 127.0.0.1:{port} backlog=4096;
    location = /zero-plain/v1/chat/completions {{ {log} default_type application/json; return 200 '{_answer()}'; }}
    location = /zero-sse/v1/chat/completions {{ {log} default_type text/event-stream; return 200 '{zero_sse}'; }}
    location = /real-plain/v1/chat/completions {{
      {log} default_type application/json; echo_read_request_body; echo_sleep 1.0; echo -n '{_answer()}'; }}
    location = /real-sse/v1/chat/completions {{
      {log} default_type text/event-stream; echo_read_request_body; {" ".join(paced)} }}
  }}
  server {{ listen 127.0.0.1:{status_port}; location = /status {{ stub_status; }} }}
}}
"""


class Stub:
    """nginx in the foreground, its own process group; counts answers (access log) and samples in-flight."""

    def __init__(self, workdir: Path) -> None:
        self.workdir = workdir
        self.port, self.status_port = free_port(), free_port()
        conf = workdir / "nginx.conf"
        conf.write_text(nginx_conf(workdir, self.port, self.status_port))
        self.process = subprocess.Popen(["nginx", "-c", str(conf), "-p", str(workdir), "-e", str(workdir / "nginx.err")],
                                        start_new_session=True, stdout=subprocess.DEVNULL,
                                        stderr=open(workdir / "nginx.out", "wb"))
        self.url = f"http://127.0.0.1:{self.port}"
        try:
            wait_http(f"http://127.0.0.1:{self.status_port}/status", process=self.process)
        except RuntimeError:
            raise RuntimeError("nginx did not start: " + (workdir / "nginx.out").read_text()[-500:]) from None
        self.peak = 0
        self._sampling = False

    def answered(self) -> tuple[int, int]:
        """(requests answered in full, requests its client left before the end: nginx's 499)."""
        try:
            with open(self.workdir / "stub-access.log", "rb") as fh:
                statuses = [line.strip() for line in fh]
        except FileNotFoundError:
            return 0, 0
        return statuses.count(b"200"), statuses.count(b"499")

    def in_flight(self) -> int:
        text = urllib.request.urlopen(f"http://127.0.0.1:{self.status_port}/status", timeout=5).read().decode()
        writing = int(text.split("Writing:")[1].split()[0])
        return writing - 1  # the status request itself

    def sample(self) -> None:
        self.peak, self._sampling = 0, True

        def loop():
            while self._sampling:
                self.peak = max(self.peak, self.in_flight())
                time.sleep(0.05)

        self._thread = threading.Thread(target=loop, daemon=True)
        self._thread.start()

    def stop_sampling(self) -> int:
        self._sampling = False
        self._thread.join(5)
        return self.peak

    def cpu_s(self) -> float:
        return process_tree_cpu(self.process.pid)

    def stop(self) -> None:
        os.killpg(self.process.pid, signal.SIGTERM)
        self.process.wait(10)


# ---------------------------------------------------------------------------------- helpers
def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_http(url: str, timeout: float = 60, process=None) -> None:
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


def process_tree_cpu(pid: int) -> float:
    """CPU seconds (user + system) of a process and its living descendants."""
    total, todo = 0.0, [pid]
    tick = os.sysconf("SC_CLK_TCK")
    while todo:
        p = todo.pop()
        try:
            fields = Path(f"/proc/{p}/stat").read_text().rsplit(")", 1)[1].split()
            total += (int(fields[11]) + int(fields[12])) / tick
            for task in Path(f"/proc/{p}/task").iterdir():
                todo += [int(c) for c in (task / "children").read_text().split()]
        except OSError:
            continue
    return total


# ---------------------------------------------------------------------------------- the load generator (wrk)
WRK_LUA = """
local requests, n, spread, C, ramp_ms = {}, 0, 0, %(c)d, %(ramp_ms)d
local body = %(body)s
local tokens = {%(tokens)s}
init = function(args)
  for i, t in ipairs(tokens) do
    requests[i] = wrk.format("POST", nil, {["Authorization"] = "Bearer " .. t,
                                           ["Content-Type"] = "application/json"}, body)
  end
end
request = function()
  n = n + 1
  return requests[(n %% #requests) + 1]
end
%(delay)s
done = function(summary, latency, _)
  local e = summary.errors
  io.write(string.format('WRKJSON {"requests":%%d,"connect":%%d,"read":%%d,"write":%%d,"status":%%d,' ..
    '"timeout":%%d,"p50_us":%%d,"p99_us":%%d,"duration_us":%%d}\\n', summary.requests, e.connect, e.read, e.write,
    e.status, e.timeout, latency:percentile(50), latency:percentile(99), summary.duration))
end
"""
# real agents are not in lockstep: after its first answer, connection i waits i/C of the stub's delay once
DELAY_LUA = """
delay = function()
  spread = spread + 1
  if spread <= C then return math.floor(ramp_ms * (spread - 1) / C) end
  return 0
end
"""


def lua_string(text: str) -> str:
    return "[==[" + text + "]==]"


def run_wrk(url: str, tokens: list[str], model: str, stream: bool, concurrency: int, seconds: float,
            ramp_ms: int, workdir: Path) -> dict:
    script = workdir / "wrk.lua"
    script.write_text(WRK_LUA % {"c": concurrency, "ramp_ms": ramp_ms,
                                 "body": lua_string(json.dumps(body(model, stream))),
                                 "tokens": ", ".join(lua_string(t) for t in tokens),
                                 "delay": DELAY_LUA if ramp_ms else ""})
    cmd = ["wrk", "-t1", f"-c{concurrency}", f"-d{max(1, round(seconds))}s", "--timeout", "60s", "-s", str(script), url]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    out = proc.stdout.read().decode(errors="replace")
    _, status, rusage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    line = next((x for x in out.splitlines() if x.startswith("WRKJSON ")), None)
    if line is None:
        raise RuntimeError(f"wrk failed: {out.strip()[-500:]}")
    result = json.loads(line[len("WRKJSON "):])
    result["cpu_s"] = rusage.ru_utime + rusage.ru_stime
    return result


# ---------------------------------------------------------------------------------- the three targets
class Target:
    name = ""
    pid = 0  # the proxy's process (with its children), whose CPU time per request is measured

    def url(self, stub_kind: str, stream: bool) -> str:
        raise NotImplementedError

    def model(self, stub_kind: str, stream: bool) -> str:
        return f"{stub_kind}-{'sse' if stream else 'plain'}"

    def cpu_s(self) -> float:
        return process_tree_cpu(self.pid) if self.pid else 0.0

    def tokens(self, stub_kind: str, stream: bool, concurrency: int) -> list[str]:
        return ["sk-none"]

    def check(self, answered: int, cut: int) -> dict:
        return {}

    def stop(self) -> None:
        pass


class NoProxy(Target):
    name = "none"

    def __init__(self, stub: Stub) -> None:
        self.stub = stub

    def url(self, stub_kind, stream):
        return f"{self.stub.url}/{self.model(stub_kind, stream)}/v1/chat/completions"


class Gateway(Target):
    name = "gateway"

    def __init__(self, stub: Stub, state_dir: Path, workers: int | None) -> None:
        from pytest_clawswe.gateway import GatewayProcess, Upstream

        os.environ[KEY_ENV] = "sk-bench-stub-key"
        upstreams = [Upstream(f"{k}-{m}", f"{stub.url}/{k}-{m}/v1", KEY_ENV)
                     for k in ("zero", "real") for m in ("plain", "sse")]
        self.process = GatewayProcess.start(state_dir, upstreams, workers=workers)
        self.client = self.process.client()
        self.pid = self.process.pid
        self.base = self.process.url
        self.run = 0
        self.names: list[str] = []
        self.registered: list[str] = []

    def url(self, stub_kind, stream):
        return self.base + "/v1/chat/completions"

    def tokens(self, stub_kind, stream, concurrency):
        self.run += 1  # fresh tokens (and ledger files) for every run, one per agent
        model = self.model(stub_kind, stream)
        self.names = [f"bench{self.run}__agent{i}" for i in range(concurrency)]
        self.registered = [self.client.register(name, f"{model}/m") for name in self.names]
        return self.registered

    def check(self, answered: int, cut: int) -> dict:
        """The gateway's counts against the stub's: one counted request per request the stub saw (answered in
        full, or left by the gateway when wrk hung up at the end), each answered one with exactly the stub's
        usage, a cut one with it or (cut before the usage event) none; the admin API's totals (summed over
        the workers' fsynced files) equal to the files read here."""
        from pytest_clawswe.gateway.record.ledger import read_records, usage_of
        from pytest_clawswe.usage import Usage

        deadline = time.monotonic() + 15  # requests wrk left in flight finish after it stops
        while True:
            total = Usage()
            for token in self.registered:
                total += self.client.usage(token)
            if total.requests >= answered + cut or time.monotonic() > deadline:
                break
            time.sleep(0.2)
        records = [r for name in self.names for r in read_records(self.process.state_dir, name)]
        full = dict(PER_REQUEST)

        def tokens(r):
            return {k: r[k] for k in PER_REQUEST}

        zero = dict.fromkeys(PER_REQUEST, 0)
        exact = (total.requests == answered + cut == len(records) and usage_of(records) == total
                 and all(tokens(r) == full for r in records if r["status"] == 200)
                 and all(tokens(r) in (full, zero) for r in records if r["status"] != 200))
        return {"tokens_exact": exact, "requests_counted": total.requests, "requests_on_disk": len(records),
                "requests_cut": sum(r["status"] != 200 for r in records)}

    def stop(self) -> None:
        self.process.stop()


class LiteLLM(Target):
    name = "litellm"

    def __init__(self, stub: Stub, litellm_bin: str, workdir: Path) -> None:
        config = workdir / "litellm.yaml"
        entries = "".join(
            f"  - model_name: {k}-{m}\n    litellm_params:\n      model: openai/m\n"
            f"      api_base: {stub.url}/{k}-{m}/v1\n      api_key: sk-bench-stub-key\n"
            for k in ("zero", "real") for m in ("plain", "sse"))
        config.write_text("model_list:\n" + entries)
        port = free_port()
        self.log = open(workdir / "litellm.log", "wb")
        master = "sk-bench-litellm-master-key-0123456789abcdef"  # it refuses to start without one
        env = {**os.environ, "LITELLM_LOG": "ERROR", "LITELLM_MASTER_KEY": master}
        self.master = master
        self.process = subprocess.Popen([litellm_bin, "--config", str(config), "--host", "127.0.0.1",
                                         "--port", str(port)], stdout=self.log, stderr=subprocess.STDOUT, env=env,
                                        start_new_session=True)
        self.base = f"http://127.0.0.1:{port}"
        self.pid = self.process.pid
        wait_http(f"{self.base}/health/liveliness", timeout=180, process=self.process)

    def url(self, stub_kind, stream):
        return self.base + "/v1/chat/completions"

    def tokens(self, stub_kind, stream, concurrency):
        return [self.master]

    def stop(self) -> None:
        os.killpg(self.process.pid, signal.SIGTERM)
        try:
            self.process.wait(20)
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, signal.SIGKILL)


# ---------------------------------------------------------------------------------- the grid
def missing_tools() -> str:
    missing = [t for t in ("wrk", "nginx") if not shutil.which(t)]
    if not missing and "echo" not in subprocess.run(["nginx", "-V"], capture_output=True, text=True).stderr + \
            "".join(p.name for p in Path("/usr/lib/nginx/modules").glob("*echo*")):
        missing.append("nginx's echo module")
    return ", ".join(missing)


def refuse_missing_tools(script: str) -> bool:
    """True, with one sentence on stderr, when wrk or nginx with its echo module is missing."""
    missing = missing_tools()
    if missing:
        print(f"{script} needs wrk and nginx with its echo module (Debian: apt-get install wrk nginx-light); "
              f"not found: {missing}.", file=sys.stderr)
    return bool(missing)


def write_results(result: dict, out: Path, markdown) -> None:
    """The results as JSON at `out`, and as Markdown beside it (`markdown(result, path)` writes it)."""
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=1) + "\n")
    markdown(result, out.with_suffix(".md"))


def measure(target: Target, stub: Stub, stub_kind: str, stream: bool, c: int, seconds: float, tmp: Path) -> dict:
    ramp_ms = 1000 if stub_kind == "real" else 0
    url, model = target.url(stub_kind, stream), target.model(stub_kind, stream)
    run_wrk(url, target.tokens(stub_kind, stream, min(c, 3)), model, stream, min(c, 3), 0.5, 0, tmp)  # warm up
    quiesce(stub, 1.2 if stub_kind == "real" else 0.3)  # the warm-up's last requests end before counting starts
    tokens = target.tokens(stub_kind, stream, c)
    answered0 = stub.answered()
    cpu0, stub_cpu0 = target.cpu_s(), stub.cpu_s()
    stub.sample()
    host0 = host_cpu_ticks()
    wrk = run_wrk(url, tokens, model, stream, c, seconds, ramp_ms, tmp)
    host = host_cpu_ticks()
    peak = stub.stop_sampling()
    cpu, stub_cpu = target.cpu_s() - cpu0, stub.cpu_s() - stub_cpu0
    quiesce(stub, 1.2 if stub_kind == "real" else 0.3)  # what wrk left in flight in the proxy reaches the stub
    answered, cut = (now - then for now, then in zip(stub.answered(), answered0))
    checked = target.check(answered, cut)
    done = wrk["requests"]
    elapsed = wrk["duration_us"] / 1e6
    errors = wrk["connect"] + wrk["read"] + wrk["write"] + wrk["status"] + wrk["timeout"]
    per = max(1, done)
    return {"stub": stub_kind, "target": target.name, "stream": stream, "concurrency": c,
            "requests": done, "errors": errors, "seconds": round(elapsed, 2),
            "req_per_s": round(done / elapsed, 1), "p50_ms": round(wrk["p50_us"] / 1000, 2),
            "p99_ms": round(wrk["p99_us"] / 1000, 2), "stub_answered": answered, "stub_cut": cut,
            "stub_peak_in_flight": peak,
            "proxy_cpu_ms_per_req": round(cpu * 1000 / per, 3) if target.pid else None,
            "wrk_cpu_ms_per_req": round(wrk["cpu_s"] * 1000 / per, 3),
            "stub_cpu_ms_per_req": round(stub_cpu * 1000 / per, 3),
            "load_avg_1m": round(os.getloadavg()[0], 2), "steal_pct": steal_pct(host0, host), **checked}


def host_cpu_ticks() -> tuple[int, int]:
    """The machine's CPU ticks so far: (stolen by the hypervisor, all), from /proc/stat ((0, 0) where there is none)."""
    try:
        fields = [int(f) for f in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:9]]
    except (OSError, ValueError):
        return 0, 0
    return fields[7], sum(fields)


def steal_pct(before: tuple[int, int], after: tuple[int, int]) -> float | None:
    """The share of the machine's CPU time the hypervisor took between two readings (a VM's other tenants): on a
    shared host it moves a run's throughput by more than the change being measured, so it is written beside it."""
    total = after[1] - before[1]
    return round(100 * (after[0] - before[0]) / total, 1) if total > 0 else None


def quiesce(stub: Stub, still: float, limit: float = 90.0) -> None:
    """Wait until the stub has seen no new request for `still` seconds: a proxy that queued requests (LiteLLM
    at 300 agents) finishes them before the next run is measured."""
    deadline = time.monotonic() + limit
    last = stub.answered()
    while time.monotonic() < deadline:
        time.sleep(still)
        now = stub.answered()
        if now == last and stub.in_flight() == 0:
            return
        last = now


def run_grid(args) -> dict:
    rows = []
    uptime_before = subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
    with tempfile.TemporaryDirectory(prefix="bench-gateway-") as tmp:
        tmp = Path(tmp)
        stub = Stub(tmp)
        targets: list[Target] = []
        try:
            targets = [NoProxy(stub), Gateway(stub, tmp / "gw", args.workers)]
            if args.litellm_bin and "litellm" in args.targets:
                try:
                    targets.append(LiteLLM(stub, args.litellm_bin, tmp))
                except RuntimeError as exc:
                    print(f"litellm skipped: {exc} (see its log)", file=sys.stderr)
            targets = [t for t in targets if t.name in args.targets]
            for stub_kind in args.stubs:
                seconds = args.seconds if stub_kind == "zero" else max(args.seconds, args.seconds_real)
                for target in targets:
                    for stream in (False, True):
                        for c in args.concurrency:
                            if target.name == "litellm" and c > args.litellm_max_concurrency:
                                continue
                            row = measure(target, stub, stub_kind, stream, c, seconds, tmp)
                            rows.append(row)
                            print(json.dumps(row), flush=True)
        finally:
            for target in targets:
                target.stop()
            stub.stop()
    uptime_after = subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
    for row in rows:  # added latency against no proxy, same stub, mode and concurrency
        base = next((r for r in rows if r["target"] == "none" and r["stub"] == row["stub"]
                     and r["stream"] == row["stream"] and r["concurrency"] == row["concurrency"]), None)
        if base and row["target"] != "none":
            row["added_p50_ms"] = round(row["p50_ms"] - base["p50_ms"], 2)
            row["added_p99_ms"] = round(row["p99_ms"] - base["p99_ms"], 2)
    from pytest_clawswe.gateway.contract import default_workers

    return {"machine": {"cores": os.cpu_count(), "uptime_before": uptime_before, "uptime_after": uptime_after,
                        "load_avg_at_end": [round(x, 2) for x in os.getloadavg()], "note": args.note},
            "settings": {"seconds": args.seconds, "seconds_real_stub": max(args.seconds, args.seconds_real),
                         "gateway_workers": args.workers or default_workers(), "load_generator": "wrk -t1",
                         "stubs": STUBS},
            "rows": rows}


def write_markdown(result: dict, path: Path) -> None:
    """One line per stub, mode and concurrency: the floor, then each proxy's added latency, rate and CPU."""
    m = result["machine"]
    lines = ["# Gateway under load (benchmarks/bench_gateway.py)", "",
             f"Machine: {m['cores']} cores. Before: `{m.get('uptime_before', '')}`; after: "
             f"`{m.get('uptime_after', '')}`. {m['note']}", "",
             f"Gateway workers: {result['settings'].get('gateway_workers')}. Load generator: "
             f"{result['settings'].get('load_generator')}. Latency to the last byte; added = proxy minus no proxy "
             "(same stub, mode, concurrency). CPU = CPU time per request of the proxy's processes (gw), and of the "
             "load generator + stub in the same run (wrk+stub). Stub peak in flight: nginx's stub_status sampled "
             "at 20 Hz (too coarse for the zero-delay stub: n/a).", "",
             "| stub | mode | C | none p50 / p99 ms | none req/s | gateway added p50 / p99 ms | gateway req/s "
             "| gw CPU ms/req | wrk+stub CPU ms/req (gw run) | litellm added p50 / p99 ms | litellm req/s "
             "| litellm CPU ms/req | stub peak in flight (gw) | gw tokens exact | gw errors |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    rows = result["rows"]
    keys = sorted({(r["stub"], r["stream"], r["concurrency"]) for r in rows},
                  key=lambda k: (k[0] != "zero", k[1], k[2]))

    def added(r):
        if r and not r["requests"]:
            return f"none done in {r['seconds']:.0f} s"
        return f"{r['added_p50_ms']:+.2f} / {r['added_p99_ms']:+.2f}" if r and "added_p50_ms" in r else "-"

    def field(r, name):
        if r and not r["requests"] and name.endswith("per_req"):
            return "-"
        return "-" if not r or r.get(name) is None else r[name]

    for stub, stream, c in keys:
        get = {r["target"]: r for r in rows if (r["stub"], r["stream"], r["concurrency"]) == (stub, stream, c)}
        none, gw, ll = get.get("none"), get.get("gateway"), get.get("litellm")
        floor = f"{none['p50_ms']:.2f} / {none['p99_ms']:.2f} | {none['req_per_s']:.0f}" if none else "- | -"
        harness_cpu = (f"{gw['wrk_cpu_ms_per_req'] + gw['stub_cpu_ms_per_req']:.3f}" if gw else "-")
        lines.append(f"| {stub} | {'stream' if stream else 'plain'} | {c} | {floor} | {added(gw)} | "
                     f"{field(gw, 'req_per_s')} | {field(gw, 'proxy_cpu_ms_per_req')} | {harness_cpu} | {added(ll)} | "
                     f"{field(ll, 'req_per_s')} | {field(ll, 'proxy_cpu_ms_per_req')} | "
                     f"{field(gw, 'stub_peak_in_flight') if stub == 'real' else 'n/a'} | {field(gw, 'tokens_exact')} | "
                     f"{field(gw, 'errors')} |")
    notes = result.get("reading")
    if notes:
        lines += ["", "## Reading it", "", notes]
    path.write_text("\n".join(lines) + "\n")


# ---------------------------------------------------------------------- recording on/off (issue 24)
def _one_request(conn, path: str, data: bytes, headers: dict) -> float:
    started = time.perf_counter()
    conn.request("POST", path, body=data, headers=headers)
    response = conn.getresponse()
    response.read()  # to the last byte (a stream: every event)
    assert response.status == 200, response.status
    return time.perf_counter() - started


def recording_ab(args) -> dict:
    """The cost of recording every call (gateway/record/calls.py): two gateway processes, recording on and off
    (CLAWSWE_RECORD_CALLS), the same requests through each in alternating rounds (so the machine's other load
    falls on both alike): chat completions to the scripted model, plain and streamed, with a conversation of
    --record-kb KB (real requests of the demo runs are 29-58 KB). No wrk or nginx needed: the client's own cost
    is the same on both sides and cancels out in the difference."""
    import http.client
    import statistics
    from concurrent.futures import ThreadPoolExecutor

    from pytest_clawswe.gateway import GatewayProcess

    filler = "x" * 1000
    history = [{"role": "system", "content": "You are a coding agent. " * 40}]
    while len(json.dumps(history)) < args.record_kb * 1024:
        history += [{"role": "user", "content": f"observation {len(history)}: {filler}"},
                    {"role": "assistant", "content": f"step {len(history)}"}]
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench-recording-") as tmp:
        gateways = {}
        old = os.environ.get("CLAWSWE_RECORD_CALLS")
        try:
            for mode in ("off", "on"):
                os.environ["CLAWSWE_RECORD_CALLS"] = "1" if mode == "on" else "0"
                gateways[mode] = GatewayProcess.start(Path(tmp) / mode, workers=1)
        finally:
            os.environ.pop("CLAWSWE_RECORD_CALLS", None) if old is None else os.environ.update(
                CLAWSWE_RECORD_CALLS=old)
        try:
            for stream in (False, True):
                for c in args.record_concurrency:
                    samples: dict[str, list[float]] = {"off": [], "on": []}
                    cpu = {"off": 0.0, "on": 0.0}  # the gateway process's own CPU (its writer is another process)
                    writer_cpu = 0.0
                    body_ = {"model": "m", "messages": history, "stream": stream, "max_tokens": 256}
                    data = json.dumps(body_).encode()
                    for _ in range(args.record_rounds):
                        for mode, gw in gateways.items():
                            token = gw.client().register(f"ab-{mode}-{stream}-{c}", "scripted/noop")
                            host, port = gw.url.split("//")[1].split(":")
                            headers = {"Content-Type": "application/json", "Authorization": f"Bearer {token}"}

                            def agent(_, host=host, port=port, headers=headers, data=data):
                                conn = http.client.HTTPConnection(host, int(port), timeout=60)
                                out = [_one_request(conn, "/v1/chat/completions", data, headers)
                                       for _ in range(args.record_requests)]
                                conn.close()
                                return out

                            cpu0 = process_tree_cpu(gw.pid) if mode == "off" else _own_cpu(gw.pid)
                            tree0 = process_tree_cpu(gw.pid)
                            with ThreadPoolExecutor(c) as pool:
                                for got in pool.map(agent, range(c)):
                                    samples[mode] += got[2:]  # the first requests open the connection
                            cpu[mode] += (process_tree_cpu(gw.pid) if mode == "off" else _own_cpu(gw.pid)) - cpu0
                            if mode == "on":
                                writer_cpu += process_tree_cpu(gw.pid) - tree0
                    row = {"stream": stream, "concurrency": c, "requests_per_side": len(samples["on"]),
                           "request_kb": round(len(data) / 1024, 1)}
                    for mode in ("off", "on"):
                        ordered = sorted(samples[mode])
                        row[f"{mode}_p50_ms"] = round(statistics.median(ordered) * 1000, 3)
                        row[f"{mode}_p99_ms"] = round(ordered[int(len(ordered) * 0.99) - 1] * 1000, 3)
                    per = args.record_rounds * c * args.record_requests
                    row["gateway_cpu_ms_per_req_off"] = round(cpu["off"] * 1000 / per, 3)
                    row["gateway_cpu_ms_per_req_on"] = round(cpu["on"] * 1000 / per, 3)
                    row["added_gateway_cpu_ms_per_req"] = round((cpu["on"] - cpu["off"]) * 1000 / per, 3)
                    row["writer_cpu_ms_per_req"] = round((writer_cpu - cpu["on"]) * 1000 / per, 3)
                    row["added_p50_ms"] = round(row["on_p50_ms"] - row["off_p50_ms"], 3)
                    row["added_p99_ms"] = round(row["on_p99_ms"] - row["off_p99_ms"], 3)
                    rows.append(row)
                    print(json.dumps(row), flush=True)
            recorded = sum(1 for p in (Path(tmp) / "on" / "calls").glob("*.jsonl") for _ in open(p))
        finally:
            for gw in gateways.values():
                gw.stop()
    submit = submit_cost(json.dumps({"model": "m", "messages": history, "stream": True}).encode())
    print(json.dumps({"submit_on_the_event_loop": submit}), flush=True)
    return {"machine": {"cores": os.cpu_count(), "load_avg_at_end": [round(x, 2) for x in os.getloadavg()],
                        "note": args.note},
            "submit_on_the_event_loop": submit,
            "settings": {"rounds": args.record_rounds, "requests_per_agent_per_round": args.record_requests,
                         "gateway_workers": 1, "model": "scripted/noop", "protocol": "chat"},
            "calls_recorded_on_side": recorded, "rows": rows}


def submit_cost(raw: bytes, n: int = 2000) -> dict:
    """What recording adds on the gateway's event loop per call, measured in-process: Recorder.submit (frame the
    call, one write into the pipe to the writer process) for a request of len(raw) bytes and a streamed answer,
    while the real writer process drains the pipe."""
    import asyncio
    import statistics
    from types import SimpleNamespace

    from pytest_clawswe.gateway.protocols import CHAT, Reply, ToolCall
    from pytest_clawswe.gateway.record.calls import Recorder, read_calls
    from pytest_clawswe.usage import Usage

    sent = CHAT.render_stream(Reply("done", [ToolCall("exec", {"command": "ls -la"})]), Usage(1, 10, 5), "m",
                              {"stream_options": {"include_usage": True}})
    reg = SimpleNamespace(instance_id="bench", token="clawswe-" + "t" * 32, upstream=None)
    times: list[float] = []

    async def run(state_dir: str) -> None:
        recorder = Recorder(state_dir, on=True)
        for _ in range(n):
            record = {"ts": "2026-01-01T00:00:00+00:00", "instance_id": "bench", "attempt": 1, "stream": True,
                      "status": 200, "request_id": recorder.new_id()}
            chunks = list(sent)
            started = time.perf_counter()
            recorder.submit(reg, "chat", raw, chunks, record)
            times.append(time.perf_counter() - started)
            await asyncio.sleep(0.002)  # a call every 2 ms: 500 calls/s of 40 KB, which the writer keeps up with
        for _ in range(600):  # the pipe drained before the loop ends (at most 30 s)
            if recorder._transport is None or not recorder._transport.get_write_buffer_size():
                break
            await asyncio.sleep(0.05)
        recorder.close()

    with tempfile.TemporaryDirectory(prefix="bench-submit-") as tmp:
        asyncio.run(run(tmp))
        calls = read_calls(tmp, "bench")
        recorded, cut = len(calls), sum(1 for c in calls if c.get("cut"))
    ordered = sorted(times)
    return {"calls": n, "recorded": recorded, "bodies_cut": cut, "request_kb": round(len(raw) / 1024, 1),
            "p50_us": round(statistics.median(ordered) * 1e6, 1),
            "p99_us": round(ordered[int(n * 0.99) - 1] * 1e6, 1), "mean_us": round(sum(ordered) / n * 1e6, 1)}


def _own_cpu(pid: int) -> float:
    """CPU seconds of one process alone (not its children: the recorder's writer)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def write_recording_markdown(result: dict, path: Path) -> None:
    lines = ["# Recording every call: gateway latency with recording on and off (benchmarks/bench_gateway.py "
             "--recording-ab)", "", f"Machine: {result['machine']['cores']} cores, load average at the end "
             f"{result['machine']['load_avg_at_end']}. {result['machine']['note']}", "",
             f"Settings: {json.dumps(result['settings'])}; calls recorded on the recording side: "
             f"{result['calls_recorded_on_side']}. Latency to the last byte, per request, client on the same machine.",
             "", f"On the event loop, per call (Recorder.submit, measured in-process): "
             f"{json.dumps(result.get('submit_on_the_event_loop'))}",
             "", "| mode | C | request KB | off p50 / p99 ms | on p50 / p99 ms | added p50 / p99 ms "
             "| gateway CPU ms/req off / on | added gateway CPU ms/req | writer CPU ms/req |",
             "|---|---|---|---|---|---|---|---|---|"]
    for r in result["rows"]:
        lines.append(f"| {'stream' if r['stream'] else 'plain'} | {r['concurrency']} | {r['request_kb']} | "
                     f"{r['off_p50_ms']} / {r['off_p99_ms']} | {r['on_p50_ms']} / {r['on_p99_ms']} | "
                     f"{r['added_p50_ms']:+.3f} / {r['added_p99_ms']:+.3f} | {r['gateway_cpu_ms_per_req_off']} / "
                     f"{r['gateway_cpu_ms_per_req_on']} | {r['added_gateway_cpu_ms_per_req']:+.3f} | "
                     f"{r['writer_cpu_ms_per_req']} |")
    if result.get("reading"):
        lines += ["", "## Reading it", "", result["reading"]]
    path.write_text("\n".join(lines) + "\n")


def add_load_arguments(parser: argparse.ArgumentParser, out: Path) -> None:
    """The arguments of a load run on the two stubs, shared with bench_recording.py: how long on each stub, the
    note on the machine, where the results go, and rewriting the Markdown alone."""
    parser.add_argument("--seconds", type=float, default=3.0, help="per run with the zero-delay stub")
    parser.add_argument("--seconds-real", type=float, default=6.0, help="per run with the realistic stub")
    parser.add_argument("--note", default="", help="what else ran on the machine (written with the results)")
    parser.add_argument("--out", default=str(out))
    parser.add_argument("--markdown-only", action="store_true", help="rewrite the .md from the .json, no run")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_load_arguments(parser, RESULTS / "gateway_load.json")
    parser.add_argument("--concurrency", default="1,3,30,300")
    parser.add_argument("--stubs", default="zero,real")
    parser.add_argument("--targets", default="none,gateway,litellm", help="which of none, gateway, litellm")
    parser.add_argument("--workers", type=int, default=None, help="gateway worker processes (default: its own)")
    parser.add_argument("--litellm-bin", default="", help="the litellm command (e.g. in its own venv); empty: skip")
    parser.add_argument("--litellm-max-concurrency", type=int, default=300)
    parser.add_argument("--recording-ab", action="store_true",
                        help="only compare recording on and off (gateway/record/calls.py); needs no wrk or nginx")
    parser.add_argument("--record-kb", type=int, default=40, help="--recording-ab: the conversation's size")
    parser.add_argument("--record-rounds", type=int, default=6)
    parser.add_argument("--record-requests", type=int, default=60, help="per agent and round")
    parser.add_argument("--record-concurrency", default="1,4")
    args = parser.parse_args()
    if args.recording_ab:
        args.record_concurrency = [int(c) for c in args.record_concurrency.split(",")]
        result = recording_ab(args)
        write_results(result, RESULTS / "gateway_recording.json", write_recording_markdown)
        return 0
    if args.markdown_only:
        write_markdown(json.loads(Path(args.out).read_text()), Path(args.out).with_suffix(".md"))
        return 0
    if refuse_missing_tools("bench_gateway"):
        return 2
    args.concurrency = [int(c) for c in args.concurrency.split(",")]
    args.stubs = args.stubs.split(",")
    write_results(run_grid(args), Path(args.out), write_markdown)
    return 0


if __name__ == "__main__":
    sys.exit(main())
