"""What following the key across a streamed answer's events costs (issue 32 §3; gateway/upstream/stream_redact.py).

    python benchmarks/bench_stream_redact.py [--rounds 7] [--before A.json,...] [--after B.json,...]
                                             [--gateway-ab MAIN_SRC]

In-process, no network: the CPU time the guard adds to one streamed answer (the events of bench_gateway.py's stub,
and a longer realistic one: 400 text deltas of English prose and a tool call's arguments in 60 pieces), per
protocol, the best of --rounds; and how much text it held back (events that waited, the most bytes held at once):
the latency it adds is the wait of those few bytes for the next delta. The CPU time is measured with the key
present (a forwarded answer); the scripted model's answers have no key and no guard.

--before/--after: bench_gateway.py result files (streamed scenario) of main's gateway and of this one, measured in
alternating rounds; their gateway rows are summarised (median per stub, mode and concurrency) beside the figures.
--gateway-ab MAIN_SRC: the gateway's CPU time per streamed request (bench_gateway's zero-delay stub, 23 events, one
client, 300 requests a round, --ab-rounds rounds alternating), a gateway process of the code in MAIN_SRC (e.g. `git archive
main pytest_clawswe | tar -x -C MAIN_SRC`, put first on its PYTHONPATH) against one of this checkout. Needs nginx
with its echo module, as bench_gateway.py. Run it from outside the checkout (its folder would come first on
sys.path). Writes benchmarks/results/gateway_stream_redact.json.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from pathlib import Path

from pytest_clawswe.gateway.protocols import sse
from pytest_clawswe.gateway.upstream.redact import for_key
from pytest_clawswe.gateway.upstream.stream_redact import guard_for

RESULTS = Path(__file__).parent / "results"
KEY = "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"
PROSE = ("The failing test shows that the parser stops at the first escaped quote, so the tokenizer sees the rest "
         "of the string as code. I will read the decoder, add a case for escaped quotes and surrogate pairs, and "
         "run the tests again to see whether anything else depends on the old behaviour. ")


def _words(text: str, n: int) -> list[str]:
    """Deltas as tokenizers cut prose: a word with the space before it."""
    words = (text * (n // 40 + 1)).split()
    return [" " + w for w in words[:n]]


def chat_events(pieces: list[str], args: list[str]) -> list[bytes]:
    def chunk(delta, finish=None):
        return sse.encode({"id": "c1", "object": "chat.completion.chunk", "created": 1, "model": "m",
                           "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})

    head = {"index": 0, "id": "call_1", "type": "function", "function": {"name": "bash", "arguments": ""}}
    return [chunk({"role": "assistant", "content": ""}), *[chunk({"content": p}) for p in pieces],
            *([chunk({"tool_calls": [head]})] if args else []),
            *[chunk({"tool_calls": [{"index": 0, "function": {"arguments": a}}]}) for a in args],
            chunk({}, "stop"), sse.encode({"id": "c1", "object": "chat.completion.chunk", "created": 1, "model": "m",
                                           "choices": [], "usage": {"prompt_tokens": 1200, "completion_tokens": 20}}),
            sse.encode("[DONE]")]


def messages_events(pieces: list[str], args: list[str]) -> list[bytes]:
    def emit(kind, **fields):
        return sse.encode({"type": kind, **fields}, event=kind)

    out = [emit("message_start", message={"id": "m", "type": "message", "role": "assistant", "content": [],
                                          "usage": {"input_tokens": 1200, "output_tokens": 1}}),
           emit("content_block_start", index=0, content_block={"type": "text", "text": ""}),
           *[emit("content_block_delta", index=0, delta={"type": "text_delta", "text": p}) for p in pieces],
           emit("content_block_stop", index=0)]
    if args:
        out += [emit("content_block_start", index=1, content_block={"type": "tool_use", "id": "t", "name": "bash",
                                                                    "input": {}}),
                *[emit("content_block_delta", index=1, delta={"type": "input_json_delta", "partial_json": a})
                  for a in args],
                emit("content_block_stop", index=1)]
    return out + [emit("message_delta", delta={"stop_reason": "end_turn"}, usage={"output_tokens": 20}),
                  emit("message_stop")]


def responses_events(pieces: list[str], args: list[str]) -> list[bytes]:
    seq = iter(range(100_000))

    def emit(kind, **fields):
        return sse.encode({"type": kind, "sequence_number": next(seq), **fields}, event=kind)

    where = {"item_id": "msg", "output_index": 0, "content_index": 0}
    out = [emit("response.created", response={"id": "r", "status": "in_progress"}),
           *[emit("response.output_text.delta", **where, delta=p) for p in pieces],
           emit("response.output_text.done", **where, text="".join(pieces)),
           emit("response.output_item.done", output_index=0, item={"type": "message"})]
    if args:
        out += [*[emit("response.function_call_arguments.delta", item_id="fc", output_index=1, delta=a) for a in args],
                emit("response.function_call_arguments.done", item_id="fc", output_index=1, arguments="".join(args))]
    return out + [emit("response.completed", response={"id": "r", "status": "completed"})]


STREAMS = {"chat": chat_events, "messages": messages_events, "responses": responses_events}


def answers() -> dict[str, tuple[list[str], list[str]]]:
    args = json.dumps({"command": "cd /testbed && python -m pytest tests/test_decoder.py -x -q 2>&1 | tail -n 30"})
    return {"bench stub (20 deltas)": ([f"tok{i} " for i in range(1, 20)], []),
            "realistic (400 text deltas, 60 argument pieces)": (
                _words(PROSE, 400), [args[i:i + len(args) // 60 + 1] for i in range(0, len(args), len(args) // 60 + 1)])}


def measure(rounds: int) -> list[dict]:
    redactor = for_key(KEY)
    rows = []
    for name, (pieces, args) in answers().items():
        for protocol, build in STREAMS.items():
            events = build(pieces, args)
            best, held_events, most = float("inf"), 0, 0
            for _ in range(rounds):
                start = time.process_time()
                for _ in range(20):
                    guard = guard_for(protocol, redactor)
                    out = guard.events(events) + guard.finish()  # type: ignore[union-attr]
                best = min(best, (time.process_time() - start) / 20)
            guard = guard_for(protocol, redactor)
            for raw in events:  # how much waited for the next delta
                guard.events([raw])  # type: ignore[union-attr]
                waiting = sum(len(c.held) for c in guard.channels.values())  # type: ignore[union-attr]
                held_events += bool(waiting)
                most = max(most, waiting)
            rows.append({"answer": name, "protocol": protocol, "events": len(events), "events_out": len(out),
                         "guard_cpu_ms_per_answer": round(best * 1000, 3),
                         "guard_cpu_us_per_event": round(best * 1e6 / len(events), 2),
                         "events_that_held_text": held_events, "most_bytes_held": most})
            print(json.dumps(rows[-1]), flush=True)
    return rows


def gateway_rows(files: list[str]) -> dict:
    """Median, over the given bench_gateway.py runs, of the gateway's added latency and CPU per request."""
    groups: dict[tuple, list[dict]] = {}
    loads = []
    for path in files:
        data = json.loads(Path(path).read_text())
        for row in data["rows"]:
            if row["target"] == "gateway":
                groups.setdefault((row["stub"], row["stream"], row["concurrency"]), []).append(row)
                loads.append(row["load_avg_1m"])
    out = {}
    for (stub, stream, c), rows in sorted(groups.items()):
        out[f"{stub} {'stream' if stream else 'plain'} C={c}"] = {
            "added_p50_ms": round(statistics.median(r["added_p50_ms"] for r in rows), 2),
            "added_p99_ms": round(statistics.median(r["added_p99_ms"] for r in rows), 2),
            "gateway_cpu_ms_per_req": round(statistics.median(r["proxy_cpu_ms_per_req"] for r in rows), 3),
            "req_per_s": round(statistics.median(r["req_per_s"] for r in rows), 1), "runs": len(rows),
            "tokens_exact": all(r.get("tokens_exact") for r in rows)}
    return {"files": files, "load_avg_1m_range": [min(loads, default=0), max(loads, default=0)], "rows": out}


def gateway_ab(main_src: str, rounds: int = 8, per_round: int = 300) -> dict:
    """CPU time per streamed request of two gateway processes, main's code and this checkout's, one stub."""
    import http.client
    import sys
    import tempfile

    sys.path.insert(0, str(Path(__file__).parent))
    import bench_gateway as bg

    def run(gw, token: str, n: int) -> None:
        host, port = gw.base.split("//")[1].split(":")
        conn = http.client.HTTPConnection(host, int(port), timeout=60)
        data = json.dumps(bg.body("zero-sse/m", True)).encode()
        for _ in range(n):
            conn.request("POST", "/v1/chat/completions", body=data,
                         headers={"Content-Type": "application/json", "Authorization": f"Bearer {token}"})
            answer = conn.getresponse()
            answer.read()
            assert answer.status == 200, answer.status
        conn.close()

    cpu: dict[str, list[float]] = {"main": [], "this": []}
    with tempfile.TemporaryDirectory(prefix="bench-stream-redact-") as tmp:
        stub, gateways = bg.Stub(Path(tmp)), {}
        try:
            for side in cpu:
                if side == "main":
                    os.environ["PYTHONPATH"] = main_src
                try:
                    gateways[side] = bg.Gateway(stub, Path(tmp) / side, workers=1)
                finally:
                    os.environ.pop("PYTHONPATH", None)
            environ = Path(f"/proc/{gateways['main'].pid}/environ").read_bytes()
            assert f"PYTHONPATH={main_src}".encode() in environ, "main's gateway does not run main's code"
            tokens = {side: gw.client.register(f"ab-{side}", "zero-sse/m") for side, gw in gateways.items()}
            for side, gw in gateways.items():
                run(gw, tokens[side], 50)  # warm
            for _ in range(rounds):
                for side, gw in gateways.items():
                    before = bg.process_tree_cpu(gw.pid)
                    run(gw, tokens[side], per_round)
                    cpu[side].append((bg.process_tree_cpu(gw.pid) - before) * 1000 / per_round)
        finally:
            for gw in gateways.values():
                gw.stop()
            stub.stop()
    return {side: {"cpu_ms_per_request_median": round(statistics.median(v), 3), "min": round(min(v), 3),
                   "rounds": [round(x, 3) for x in v]} for side, v in cpu.items()}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--before", default="", help="bench_gateway.py result files of main's gateway, comma-separated")
    parser.add_argument("--after", default="", help="the same of this gateway")
    parser.add_argument("--gateway-ab", default="", metavar="MAIN_SRC", help="a checkout of main's pytest_clawswe")
    parser.add_argument("--ab-rounds", type=int, default=8)
    parser.add_argument("--note", default="")
    parser.add_argument("--out", default=str(RESULTS / "gateway_stream_redact.json"))
    args = parser.parse_args()
    result: dict = {"machine": {"cores": os.cpu_count(), "load_avg": [round(x, 2) for x in os.getloadavg()],
                                "note": args.note}, "guard": measure(args.rounds)}
    if args.gateway_ab:
        result["gateway_cpu_ab"] = gateway_ab(args.gateway_ab, args.ab_rounds)
        print(json.dumps(result["gateway_cpu_ab"]), flush=True)
    if args.before and args.after:
        result["bench_gateway"] = {"before": gateway_rows(args.before.split(",")),
                                   "after": gateway_rows(args.after.split(","))}
    Path(args.out).write_text(json.dumps(result, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
