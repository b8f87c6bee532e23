"""What recording every call (gateway/record/calls.py) costs the gateway at its ceiling and at 300 realistic streams.

    python benchmarks/bench_recording.py [--before REF] [--rounds 5] [--real-rounds 3] [--workers 2]

The issue-33 scenarios of benchmarks/bench_gateway.py (its nginx stub, wrk and the same gateway target), run with
recording off and on (CLAWSWE_RECORD_CALLS), and with `--before REF` also for the package as it was at git REF
(extracted into a temporary folder and put first on the gateway's PYTHONPATH): every variant's gateway runs at
once and the variants take turns within each round, their order rotated, so a shared machine's other load falls
on all of them alike.

- ceiling: the zero-delay stub, C agents (default 300) sending back to back, plain and streamed: requests/s and
  CPU time per request of every process of the gateway (its workers and their record writers);
- realistic: the 1-s stub (20 events 50 ms apart when streamed), C agents: p50 and p99 to the last byte, added
  over no proxy measured in the same round.

Reported per variant and scenario: the median over the rounds, and each round's figure. CPU per request is the
figure least moved by the neighbours' load; requests/s on a shared 2-core machine follows what they leave. Each
run's steal (the share of the machine's CPU time a VM's host took meanwhile) is written beside it.
Writes benchmarks/results/gateway_recording_ceiling.json and .md (needs wrk and nginx with its echo module).
"""
from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
import bench_gateway as bg  # noqa: E402  (the stub, wrk and the gateway target are that script's)

ROOT = Path(__file__).resolve().parents[1]
OUT = bg.RESULTS / "gateway_recording_ceiling.json"


class Variant(bg.Gateway):
    """The gateway of one code (None: this checkout) with recording on or off."""

    def __init__(self, stub: bg.Stub, state_dir: Path, workers: int, code: str, code_path: Path | None,
                 record: bool) -> None:
        saved = {k: os.environ.get(k) for k in ("CLAWSWE_RECORD_CALLS", "PYTHONPATH")}
        os.environ["CLAWSWE_RECORD_CALLS"] = "1" if record else "0"
        # `python -m` puts its working folder first on sys.path, ahead of PYTHONPATH: the gateway (and the writers
        # it starts) run in the folder of their code, which then comes first either way
        here = os.getcwd()
        os.chdir(code_path or ROOT)
        if code_path is not None:
            os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(code_path), saved["PYTHONPATH"]]))
        try:
            check_code(Path.cwd(), dict(os.environ))
            super().__init__(stub, state_dir, workers)
        finally:
            os.chdir(here)
            for key, value in saved.items():
                os.environ.pop(key, None) if value is None else os.environ.update({key: value})
        self.name = f"{code}-{'on' if record else 'off'}"
        self.writer_readings: list[float] = []  # the record writers' CPU seconds at each cpu_s() reading

    def drained(self, row: dict) -> dict:
        """Once the record writers have written what the run handed them (a writer behind finishes after the run):
        the calls recorded, those without their request body, and the writers' CPU for them, added to the row's
        proxy CPU (measure() read the CPU before and after the run)."""
        from pytest_clawswe.gateway.record.calls import read_calls

        seen, still = -1, time.monotonic()
        deadline = still + 120
        while time.monotonic() - still < 1.0 and time.monotonic() < deadline:
            lines = sum(p.read_bytes().count(b"\n") for p in (self.process.state_dir / "calls").glob("bench*.jsonl"))
            if lines != seen:
                seen, still = lines, time.monotonic()
            time.sleep(0.2)
        calls = [c for name in self.names for c in read_calls(self.process.state_dir, name)]
        before_run, after_run = self.writer_readings[-2], self.writer_readings[-1]
        self.cpu_s()  # the writers' CPU now, drained
        late = self.writer_readings[-1] - after_run
        per = 1000 / max(1, row["requests"])
        out = {"calls_recorded": len(calls), "calls_cut": sum(1 for c in calls if c.get("cut")),
               "writer_cpu_ms_per_req": round((self.writer_readings[-1] - before_run) * per, 3)}
        if self.name.endswith("-on"):
            out["proxy_cpu_ms_per_req"] = round(row["proxy_cpu_ms_per_req"] + late * per, 3)
            out["writer_late_cpu_ms_per_req"] = round(late * per, 3)
        return out

    def cpu_s(self) -> float:
        """CPU seconds of every process of the gateway; the record writers' part is kept in writer_readings."""
        total = writers = 0.0
        todo, tick = [self.pid], os.sysconf("SC_CLK_TCK")
        while todo:
            pid = todo.pop()
            try:
                fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
                own = (int(fields[11]) + int(fields[12])) / tick
                # gateway.record.writer, or gateway.record_writer in a --before ref older than issue 33
                if re.search(rb"gateway\.record(_|\.)writer", Path(f"/proc/{pid}/cmdline").read_bytes()):
                    writers += own
                total += own
                for task in Path(f"/proc/{pid}/task").iterdir():
                    todo += [int(c) for c in (task / "children").read_text().split()]
            except OSError:
                continue
        self.writer_readings.append(writers)
        return total


def check_code(cwd: Path, env: dict) -> None:
    """The package a process started in `cwd` with `env` imports is the one in `cwd` (not another checkout's)."""
    found = subprocess.run([sys.executable, "-c", "import pytest_clawswe; print(pytest_clawswe.__file__)"], cwd=cwd,
                           env=env, capture_output=True, text=True, check=True).stdout.strip()
    if not found.startswith(str(cwd.resolve()) + os.sep):
        raise RuntimeError(f"a process started in {cwd} imports {found}, not that folder's package")


def extract(ref: str, into: Path) -> Path:
    """The package as it was at `ref` (git archive), for the gateway's PYTHONPATH."""
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", ref, "pytest_clawswe"], check=True,
                             capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)
    return into


def run(args) -> dict:
    uptime_before = subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
    rows: list[dict] = []
    with tempfile.TemporaryDirectory(prefix="bench-recording-") as tmp_name:
        tmp = Path(tmp_name)
        codes: list[tuple[str, Path | None]] = [("now", None)]
        if args.before:
            (tmp / "before").mkdir()
            codes.insert(0, ("before", extract(args.before, (tmp / "before").resolve())))
        stub = bg.Stub(tmp)
        variants: list[bg.Target] = []
        try:
            for code, path in codes:
                for record in (False, True):
                    name = f"{code}-{'on' if record else 'off'}"
                    variants.append(Variant(stub, tmp / name, args.workers, code, path, record))
            none = bg.NoProxy(stub)
            plan = [("zero", stream, r) for r in range(args.rounds) for stream in (False, True)]
            plan += [("real", stream, r) for r in range(args.real_rounds) for stream in (False, True)]
            for stub_kind, stream, r in plan:
                seconds = args.seconds if stub_kind == "zero" else args.seconds_real
                turn = variants[r % len(variants):] + variants[:r % len(variants)]  # rotated each round
                if stub_kind == "real":
                    turn = [none, *turn]
                for target in turn:
                    row = bg.measure(target, stub, stub_kind, stream, args.concurrency, seconds, tmp)
                    row["round"] = r
                    if isinstance(target, Variant):
                        row.update(target.drained(row))
                    rows.append(row)
                    print(json.dumps(row), flush=True)
        finally:
            for target in variants:
                target.stop()
            stub.stop()
    uptime_after = subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
    return {"machine": {"cores": os.cpu_count(), "uptime_before": uptime_before, "uptime_after": uptime_after,
                        "note": args.note},
            "settings": {"before": args.before, "rounds": args.rounds, "real_rounds": args.real_rounds,
                         "seconds": args.seconds, "seconds_real_stub": args.seconds_real,
                         "concurrency": args.concurrency, "gateway_workers": args.workers,
                         "load_generator": "wrk -t1", "stubs": bg.STUBS},
            "rows": rows, "summary": summarize(rows)}


def writer_cost(args) -> list[dict]:
    """The record writer process alone (gateway/record/writer.py; gateway/record_writer.py before issue 33), of each
    code, fed the same calls through its stdin as fast as it reads them: its CPU time per call (its interpreter's
    start taken off), for the bench's requests (plain and streamed answers) from --concurrency agents round robin,
    each with its own token and call file, new ones every --writer-run calls (as a run registers a token per
    instance and attempt)."""
    import secrets

    sys.path.insert(0, str(ROOT))
    from pytest_clawswe.gateway import fastjson

    results = []
    with tempfile.TemporaryDirectory(prefix="bench-writer-") as tmp_name:
        tmp = Path(tmp_name)
        codes: list[tuple[str, Path | None]] = [("now", None)]
        if args.before:
            (tmp / "before").mkdir()
            codes.insert(0, ("before", extract(args.before, tmp / "before")))
        # a token per agent, new ones every --writer-run calls (as each of the gateway rows registers its own)
        runs = -(-args.writer_calls // args.writer_run)
        tokens = [["clawswe-" + secrets.token_urlsafe(24) for _ in range(args.concurrency)] for _ in range(runs)]
        for stream in (False, True):
            request = json.dumps(bg.body("zero-sse/m" if stream else "zero-plain/m", stream)).encode()
            sent = ("".join(bg._events()).replace("\\n", "\n") if stream else bg._answer()).encode()
            frames = []
            for n in range(args.writer_calls):
                if args.writer_requests == "conversation":
                    request = conversation_request(n // args.concurrency, stream)
                record = {"ts": "2026-01-01T00:00:00+00:00", "instance_id": "",
                          "attempt": 1, "protocol": "chat", "stream": stream, "model": "m", "status": 200,
                          "latency_s": 0.001, "input_tokens": 200, "output_tokens": 20, "cache_read_tokens": 1000,
                          "cache_write_tokens": 0, "request_id": f"w0-{n}"}
                token = tokens[n // args.writer_run][n % args.concurrency]
                record["instance_id"] = f"bench{n // args.writer_run}__agent{n % args.concurrency}"
                head = fastjson.dumps({"instance_id": record["instance_id"], "protocol": "chat", "record": record,
                                       "secrets": [token, "sk-bench-stub-key"]})
                frames.append(struct.pack(">III", len(head), len(request), len(sent)) + head + request + sent)
            data = b"".join(frames)
            for r in range(args.writer_rounds):
                for code, path in (codes if r % 2 == 0 else codes[::-1]):
                    out = tmp / f"{code}-{stream}-{r}"
                    env = {**os.environ, "CLAWSWE_RECORDER_SECRETS": json.dumps(["admin-" + "a" * 40,
                                                                                 "sk-bench-stub-key"])}
                    if path is not None:
                        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(path), os.environ.get("PYTHONPATH")]))
                    check_code(path or ROOT, env)
                    cpu = [_children_cpu_s()]
                    for feed in (b"", data):  # the interpreter's start alone, then with the calls
                        subprocess.run([sys.executable, "-m", _writer_module(path or ROOT), str(out), "0",
                                        str(64 << 20)], input=feed, env=env, check=True, cwd=path or ROOT)
                        cpu.append(_children_cpu_s())
                    lines = sum(p.read_bytes().count(b"\n") for p in (out / "calls").glob("*.jsonl"))
                    spent = (cpu[2] - cpu[1]) - (cpu[1] - cpu[0])
                    results.append({"code": code, "stream": stream, "round": r, "calls": args.writer_calls,
                                    "requests": args.writer_requests, "lines": lines,
                                    "request_bytes": sum(len(f) for f in frames) // len(frames) - len(sent),
                                    "answer_bytes": len(sent),
                                    "writer_cpu_us_per_call": round(spent * 1e6 / args.writer_calls, 1)})
                    print(json.dumps(results[-1]), flush=True)
    return results


def conversation_request(turn: int, stream: bool) -> bytes:
    """An agent's request at `turn` of a conversation that grows as real ones do: the demo runs' requests are 29-58
    KB, each the last one plus the model's step and a tool's output (here 20 KB of system prompt, 2 KB a turn)."""
    messages = [{"role": "system", "content": "You are a coding agent. " * 800}]
    for step in range(turn + 1):
        messages += [{"role": "assistant", "content": f"step {step}: run the tests"},
                     {"role": "user", "content": f"output {step}: " + "FAILED tests/test_app.py::test_fix\n" * 55}]
    return json.dumps({**bg.body("zero-sse/m" if stream else "zero-plain/m", stream), "messages": messages}).encode()


def _writer_module(code: Path) -> str:
    """The record writer's module in that code (it moved into gateway/record/ in issue 33)."""
    if (code / "pytest_clawswe" / "gateway" / "record" / "writer.py").is_file():
        return "pytest_clawswe.gateway.record.writer"
    return "pytest_clawswe.gateway.record_writer"


def _children_cpu_s() -> float:
    import resource

    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def summarize(rows: list[dict]) -> list[dict]:
    """Per scenario and variant: medians over the rounds (added p50/p99: against no proxy in the same round)."""
    out = []
    for stub_kind in ("zero", "real"):
        for stream in (False, True):
            mine = [r for r in rows if r["stub"] == stub_kind and r["stream"] == stream]
            floor = {r["round"]: r for r in mine if r["target"] == "none"}
            for name in dict.fromkeys(r["target"] for r in mine if r["target"] != "none"):
                runs = [r for r in mine if r["target"] == name]
                entry = {"stub": stub_kind, "stream": stream, "variant": name, "rounds": len(runs),
                         "req_per_s": _median([r["req_per_s"] for r in runs]),
                         "cpu_ms_per_req": _median([r["proxy_cpu_ms_per_req"] for r in runs]),
                         "writer_cpu_ms_per_req": _median([r.get("writer_cpu_ms_per_req", 0.0) for r in runs]),
                         "p50_ms": _median([r["p50_ms"] for r in runs]),
                         "each_req_per_s": [r["req_per_s"] for r in runs],
                         "each_cpu_ms_per_req": [r["proxy_cpu_ms_per_req"] for r in runs],
                         "calls_recorded": sum(r.get("calls_recorded", 0) for r in runs),
                         "calls_cut": sum(r.get("calls_cut", 0) for r in runs),
                         "requests_counted": sum(r.get("requests_counted", 0) for r in runs),
                         "tokens_exact": all(r.get("tokens_exact") for r in runs),
                         "errors": sum(r["errors"] for r in runs)}
                if floor:
                    added = [(r["p50_ms"] - floor[r["round"]]["p50_ms"], r["p99_ms"] - floor[r["round"]]["p99_ms"])
                             for r in runs if r["round"] in floor]
                    entry["added_p50_ms"] = _median([a for a, _ in added])
                    entry["added_p99_ms"] = _median([b for _, b in added])
                    entry["each_added_p50_ms"] = [round(a, 2) for a, _ in added]
                out.append(entry)
    return out


def paired(rows: list[dict], stream: bool, code: str, key: str) -> list[float]:
    """On against off of `code` on the zero-delay stub, round by round (on/off - 1): the two ran minutes apart at
    most, so the machine's other load, which moves each figure by more than recording does, mostly cancels."""
    return [on / off - 1 for off, on in _rounds(rows, stream, code, key) if off]


def _rounds(rows: list[dict], stream: bool, code: str, key: str) -> list[tuple]:
    """`key` of `code` off and on on the zero-delay stub, (off, on) per round that has both runs."""
    mine = [r for r in rows if r["stub"] == "zero" and r["stream"] == stream]
    off = {r["round"]: r.get(key) for r in mine if r["target"] == f"{code}-off"}
    return [(off[r["round"]], r.get(key)) for r in mine if r["target"] == f"{code}-on" and r["round"] in off]


def _steal(rows: list[dict], stream: bool, code: str) -> str:
    """The hypervisor's steal in each round's off and on runs (rows from before it was measured have none)."""
    pairs = [f"{off:.0f}/{on:.0f}" for off, on in _rounds(rows, stream, code, "steal_pct")
             if off is not None and on is not None]
    return f"; the CPU time the host took (steal, % off/on, each round): {', '.join(pairs)}" if pairs else ""


def interval(values: list[float], resamples: int = 2000) -> tuple[float, float]:
    """A 95% interval of the median of `values` (a percentile bootstrap over the rounds, seeded: the same rows give
    the same interval). With rounds that spread 25-40 points, how far the median may be from the cost is the figure
    to read beside it."""
    import random

    draw = random.Random(0)
    medians = sorted(statistics.median(draw.choices(values, k=len(values))) for _ in range(resamples))
    return medians[int(resamples * 0.025)], medians[int(resamples * 0.975) - 1]


def _median(values: list[float]) -> float:
    return round(statistics.median(values), 3) if values else 0.0


def write_markdown(result: dict, path: Path) -> None:
    s, m = result["settings"], result["machine"]
    lines = ["# What recording every call costs the gateway (benchmarks/bench_recording.py)", "",
             f"Machine: {m['cores']} cores. Before: `{m.get('uptime_before', '')}`; after: "
             f"`{m.get('uptime_after', '')}`. {m['note']}", ""]
    alone = result.get("writer_alone_summary")
    if alone:
        first = result["writer_alone"][0]
        kind = ("each agent's growing conversation" if first.get("requests") == "conversation" else
                "the bench's one request") + f" (mean {first['request_bytes'] / 1024:.1f} KB)"
        lines += ["The record writer process alone, CPU per call (median of the rounds; the calls fed through its "
                  f"stdin as fast as it reads them, a token per agent, new ones every few thousand calls; {kind}): " +
                  ", ".join(f"{k} {v:,.1f} us" for k, v in alone.items()), ""]
    if not result["summary"]:
        if result.get("reading"):
            lines += ["## Reading it", "", result["reading"]]
        path.write_text("\n".join(lines) + "\n")
        return
    lines += [f"{s['gateway_workers']} gateway workers, {s['concurrency']} agents, wrk -t1 against bench_gateway.py's "
              f"nginx stub; {s['rounds']} rounds of {s['seconds']} s on the zero-delay stub, {s['real_rounds']} of "
              f"{s['seconds_real_stub']} s on the realistic one; the variants take turns in each round. "
              f"`before` is the package at {s['before'] or '(not measured)'}, `now` this checkout; off/on is "
              "CLAWSWE_RECORD_CALLS. Medians over the rounds; CPU = every process of the gateway (workers and "
              "record writers) per request.", "",
              "| stub | mode | variant | req/s | CPU ms/req | of which writers | p50 ms | added p50 / p99 ms "
              "| each round's req/s | each round's CPU ms/req | calls recorded / cut / requests | tokens exact | errors |",
              "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for e in result["summary"]:
        added = (f"{e['added_p50_ms']:+.2f} / {e['added_p99_ms']:+.2f}" if "added_p50_ms" in e else "-")
        lines.append(f"| {e['stub']} | {'stream' if e['stream'] else 'plain'} | {e['variant']} | {e['req_per_s']:.0f} "
                     f"| {e['cpu_ms_per_req']:.3f} | {e.get('writer_cpu_ms_per_req', 0):.3f} | {e['p50_ms']:.2f} | {added} | "
                     f"{', '.join(f'{x:.0f}' for x in e['each_req_per_s'])} | "
                     f"{', '.join(f'{x:.3f}' for x in e['each_cpu_ms_per_req'])} | "
                     f"{e['calls_recorded']} / {e['calls_cut']} / {e['requests_counted']} | {e['tokens_exact']} | "
                     f"{e['errors']} |")
    lines += ["", "Recording's cost (on against off of the same code, medians):", ""]
    for stub_kind in ("zero", "real"):
        for stream in (False, True):
            got = {e["variant"]: e for e in result["summary"] if e["stub"] == stub_kind and e["stream"] == stream}
            for code in ("before", "now"):
                off, on = got.get(f"{code}-off"), got.get(f"{code}-on")
                if not off or not on:
                    continue
                mode = "streamed" if stream else "plain"
                if stub_kind == "zero":
                    rates = paired(result["rows"], stream, code, "req_per_s")
                    cpus = paired(result["rows"], stream, code, "proxy_cpu_ms_per_req")
                    low, high = interval(rates)
                    lines.append(f"- ceiling, {mode}, {code}: {off['req_per_s']:.0f} -> {on['req_per_s']:.0f} req/s "
                                 f"({(on['req_per_s'] / off['req_per_s'] - 1) * 100:+.0f}%), "
                                 f"{off['cpu_ms_per_req']:.3f} -> {on['cpu_ms_per_req']:.3f} ms CPU/req "
                                 f"({(on['cpu_ms_per_req'] / off['cpu_ms_per_req'] - 1) * 100:+.0f}%); paired "
                                 f"(on against off in the same round, median of the rounds): req/s "
                                 f"{statistics.median(rates):+.1%} (95% interval {low:+.1%} to {high:+.1%}), "
                                 f"CPU/req {statistics.median(cpus):+.1%} "
                                 f"(each round's req/s: {', '.join(f'{x:+.0%}' for x in rates)}){_steal(result['rows'], stream, code)}")
                else:
                    lines.append(f"- {s['concurrency']} realistic, {mode}, {code}: added p50 "
                                 f"{off['added_p50_ms']:+.2f} ms off, {on['added_p50_ms']:+.2f} ms on")
    if result.get("reading"):
        lines += ["", "## Reading it", "", result["reading"]]
    path.write_text("\n".join(lines) + "\n")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--before", default="", help="a git ref whose package is measured beside this checkout")
    parser.add_argument("--rounds", type=int, default=5, help="rounds on the zero-delay stub")
    parser.add_argument("--real-rounds", type=int, default=3, help="rounds on the realistic stub")
    bg.add_load_arguments(parser, OUT)
    parser.add_argument("--concurrency", type=int, default=300)
    parser.add_argument("--workers", type=int, default=2)
    # enough calls that the interpreter's start, measured apart and taken off, is noise of a few us a call (with
    # 1,500 calls its jitter moved the figure by tens of us, once below zero)
    parser.add_argument("--writer-calls", type=int, default=15000, help="calls fed to the writer process alone")
    parser.add_argument("--writer-rounds", type=int, default=1, help="0: the writer process is not measured alone")
    parser.add_argument("--writer-run", type=int, default=7500, help="calls per set of agents' tokens")
    parser.add_argument("--writer-requests", choices=("fixed", "conversation"), default="fixed",
                        help="the writer alone: the bench's one request, or each agent's growing conversation")
    parser.add_argument("--gateway", action=argparse.BooleanOptionalAction, default=True,
                        help="measure the gateways (--no-gateway: the writer process alone)")
    args = parser.parse_args()
    out = Path(args.out)
    if args.markdown_only:
        write_markdown(json.loads(out.read_text()), out.with_suffix(".md"))
        return 0
    if args.gateway and bg.refuse_missing_tools("bench_recording"):
        return 2
    started = time.monotonic()
    writer = writer_cost(args) if args.writer_rounds else []
    result = run(args) if args.gateway else {"machine": {"cores": os.cpu_count(), "note": args.note},
                                             "settings": {"before": args.before}, "rows": [], "summary": []}
    result["writer_alone"] = writer
    result["writer_alone_summary"] = {
        f"{code}-{'stream' if stream else 'plain'}": _median([w["writer_cpu_us_per_call"] for w in writer
                                                             if w["code"] == code and w["stream"] == stream])
        for code in ("before", "now") for stream in (False, True) if any(w["code"] == code for w in writer)}
    result["machine"]["wall_s"] = round(time.monotonic() - started)
    bg.write_results(result, out, write_markdown)
    return 0


if __name__ == "__main__":
    sys.exit(main())
