"""The gateway with several worker processes on one port (gateway/service/leader.py): tokens, revocation, usage
and the ledger stay exact whichever worker a connection lands on, a killed worker loses no answered
request, and no worker outlives the gateway or the run that started it."""
from __future__ import annotations

import http.client
import json
import os
import signal
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from polling import alive, wait_until

from pytest_clawswe.gateway import GatewayProcess, read_usage
from pytest_clawswe.gateway.record.ledger import read_records, usage_paths

WORKERS = 3
BODY = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}


def _children(pid: int, writers: bool = False) -> list[int]:
    """The gateway's worker processes (with `writers`: also each process's call-record writer, record/writer.py)."""
    found = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            found += [int(c) for c in (task / "children").read_text().split()]
        except OSError:
            pass
    return found if writers else [p for p in found if not _is_writer(p)]


def _is_writer(pid: int) -> bool:
    try:
        return b"gateway.record.writer" in Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False


def _wait_workers(gw, count: int = WORKERS) -> None:
    wait_until(lambda: gw.client().workers() >= count, 60, f"the gateway's {count} workers came up", interval=0.1)


def _post(url: str, token: str, stream: bool = False) -> tuple[int, dict | None]:
    """One request on a new connection (so the kernel picks a worker for it): (status, usage)."""
    host = url.split("//", 1)[1]
    conn = http.client.HTTPConnection(host, timeout=30)
    try:
        body = {**BODY, "stream": True, "stream_options": {"include_usage": True}} if stream else BODY
        conn.request("POST", "/v1/chat/completions", json.dumps(body),
                     {"Authorization": f"Bearer {token}", "Content-Type": "application/json"})
        resp = conn.getresponse()
        data = resp.read()
    finally:
        conn.close()
    if resp.status != 200:
        return resp.status, None
    if not stream:
        return 200, json.loads(data)["usage"]
    usage = None
    for line in data.decode().splitlines():
        if line.startswith("data: {"):
            usage = json.loads(line[6:]).get("usage") or usage
    return 200, usage


def _counted(usage: dict) -> tuple[int, int]:
    """(input incl. cache, output) of an OpenAI usage object as the gateway counts it."""
    return usage["prompt_tokens"], usage["completion_tokens"]


def _files_with_records(state_dir: Path, instance_id: str) -> list[Path]:
    return [p for p in usage_paths(state_dir, instance_id) if p.is_file() and p.stat().st_size]


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    gw = GatewayProcess.start(tmp_path_factory.mktemp("gateway-workers"), workers=WORKERS)
    try:
        _wait_workers(gw)
        yield gw
    finally:
        gw.stop()


def test_a_token_registered_once_works_on_every_worker_and_revocation_everywhere(cluster):
    client = cluster.client()
    token = client.register("workers__auth", "scripted/noop")
    with ThreadPoolExecutor(8) as pool:
        answers = list(pool.map(lambda _: _post(cluster.url, token), range(60)))
    assert [status for status, _ in answers] == [200] * 60
    # the 60 connections were spread: more than one worker wrote this instance's ledger
    assert len(_files_with_records(cluster.state_dir, "workers__auth")) >= 2
    client.unregister(token)  # returns once every worker has revoked it
    with ThreadPoolExecutor(8) as pool:
        after = list(pool.map(lambda _: _post(cluster.url, token), range(60)))
    assert [status for status, _ in after] == [401] * 60
    assert client.usage(token).requests == 60


def test_usage_is_exact_across_workers_under_concurrent_load(cluster):
    client = cluster.client()
    tokens = {f"workers__load{i}": client.register(f"workers__load{i}", "scripted/noop") for i in range(6)}
    jobs = [(name, token, n % 2 == 0) for n in range(40) for name, token in tokens.items()]
    with ThreadPoolExecutor(24) as pool:
        answers = list(pool.map(lambda job: (job[0], *_post(cluster.url, job[1], job[2])), jobs))
    assert all(status == 200 and usage for _, status, usage in answers)
    for name, token in tokens.items():
        sent = [_counted(u) for n, _, u in answers if n == name]
        usage = client.usage(token)
        assert usage.requests == len(sent) == 40
        assert usage.input_tokens + usage.cache_read_tokens + usage.cache_write_tokens == sum(i for i, _ in sent)
        assert usage.output_tokens == sum(o for _, o in sent)
        assert read_usage(cluster.state_dir, name) == usage  # the fsynced files say the same
        assert len(client.requests(token)) == 40
    assert sum(len(_files_with_records(cluster.state_dir, n)) for n in tokens) > len(tokens)


def test_attempt_numbers_come_from_one_place(cluster):
    client = cluster.client()
    first = client.register("workers__attempts", "scripted/noop")
    second = client.register("workers__attempts", "scripted/noop")
    with ThreadPoolExecutor(8) as pool:
        list(pool.map(lambda t: _post(cluster.url, t), [first] * 10 + [second] * 20))
    attempts = [r["attempt"] for r in read_records(cluster.state_dir, "workers__attempts")]
    assert sorted(attempts) == [1] * 10 + [2] * 20
    assert client.usage(second).requests == 20 and client.usage(first).requests == 10


def test_a_killed_worker_loses_no_answered_request_and_is_restarted(tmp_path):
    with GatewayProcess.start(tmp_path / "gw", workers=WORKERS) as gw:
        _wait_workers(gw)
        client = gw.client()
        token = client.register("workers__kill", "scripted/noop")
        victims = _children(gw.pid)
        assert len(victims) == WORKERS - 1

        answered = []

        def one(i: int) -> None:
            if i == 150:
                os.kill(victims[0], signal.SIGKILL)
            try:
                status, usage = _post(gw.url, token, stream=i % 2 == 1)
            except (ConnectionError, http.client.HTTPException, OSError):
                return  # cut by the kill: never answered
            if status == 200 and usage:
                answered.append(usage)

        with ThreadPoolExecutor(12) as pool:
            list(pool.map(one, range(400)))
        assert len(answered) >= 300, len(answered)
        usage = client.usage(token)
        # a cut request may be counted too (the model answered it); an answered one is never missing
        assert usage.requests >= len(answered), (usage, len(answered))
        assert usage.output_tokens >= sum(u["completion_tokens"] for u in answered), (usage, answered)
        assert read_usage(gw.state_dir, "workers__kill") == usage
        wait_until(lambda: len(_children(gw.pid)) >= WORKERS - 1 and client.workers() >= WORKERS, 30,
                   "the leader started the killed worker again", interval=0.1)
        assert victims[0] not in _children(gw.pid)
        status, _ = _post(gw.url, token)
        assert status == 200
        workers = _children(gw.pid)
    assert not any(alive(p) for p in [gw.pid, *workers])  # stop() stops every worker


def test_no_worker_outlives_the_run_that_started_the_gateway(tmp_path):
    code = ("import json, os, sys, time; from pathlib import Path; from pytest_clawswe.gateway import GatewayProcess\n"
            "g = GatewayProcess.start(sys.argv[1], workers=3)\n"
            "while g.client().workers() < 3: time.sleep(0.1)\n"
            "kids = [int(c) for t in Path(f'/proc/{g.pid}/task').iterdir() for c in (t / 'children').read_text().split()]\n"
            "print(json.dumps([g.pid, kids]), flush=True); os._exit(0)")
    out = subprocess.run([sys.executable, "-c", code, str(tmp_path / "gw")], capture_output=True, text=True,
                         timeout=90)
    leader, children = json.loads(out.stdout.strip())
    workers = [p for p in children if not _is_writer(p)]  # the others: the leader's call-record writer
    assert len(workers) == 2
    wait_until(lambda: not any(alive(p) for p in [leader, *children]), 20, "the leader and its workers stopped",
               interval=0.1)


def test_workers_stop_when_the_leader_is_killed(tmp_path):
    gw = GatewayProcess.start(tmp_path / "gw", workers=3)
    try:
        _wait_workers(gw)
        workers = _children(gw.pid)
        os.kill(gw.pid, signal.SIGKILL)
        gw.process.wait(10)
        wait_until(lambda: not any(alive(p) for p in workers), 20, "the workers stopped", interval=0.1)
    finally:
        gw.stop()


def test_one_worker_is_one_process(tmp_path):
    with GatewayProcess.start(tmp_path / "gw", workers=1) as gw:
        assert gw.client().workers() == 1 and _children(gw.pid) == []
        token = gw.client().register("workers__one", "scripted/noop")
        assert _post(gw.url, token)[0] == 200
        assert [p.name for p in _files_with_records(gw.state_dir, "workers__one")] == ["workers__one.jsonl"]


def test_deepseek_reasoning_memory_reaches_every_worker(tmp_path, monkeypatch):
    """Shaping memory learnt by one worker is there for the agent's next turn on any other: each turn on a
    fresh connection (so on any worker), the next turn must carry the reasoning back."""
    from gateway_stub import Stub, chat_answer, sse

    from pytest_clawswe.gateway import Upstream

    def answer(path, body, headers):
        turn = len(body["messages"])
        call = {"id": f"call_{turn}", "type": "function", "function": {"name": "shell", "arguments": "{}"}}
        if not body.get("stream"):
            data = chat_answer(body["model"], content=None, tool_calls=[call], reasoning=f"R{turn}")
            return 200, "application/json", json.dumps(data).encode()
        base = {"id": "s", "object": "chat.completion.chunk", "created": 1, "model": body["model"]}
        deltas = [{"role": "assistant", "reasoning_content": f"R{turn}"}, {"tool_calls": [{"index": 0, **call}]}]
        events = [sse({**base, "choices": [{"index": 0, "delta": d, "finish_reason": None}]}) for d in deltas]
        events.append(sse({**base, "choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]}))
        events.append(sse({**base, "choices": [], "usage": {"prompt_tokens": 3, "completion_tokens": 1}}))
        return events + [sse("[DONE]")]

    monkeypatch.setenv("CLAWSWE_TEST_WORKERS_KEY", "sk-workers-test-key-0123456789")
    with Stub(answer) as stub, GatewayProcess.start(tmp_path / "gw", [Upstream("deepseek", stub.url + "/v1",
                                                                      "CLAWSWE_TEST_WORKERS_KEY")],
                                                     workers=WORKERS) as gw:
        _wait_workers(gw)
        token = gw.client().register("workers__ds", "deepseek/deepseek-chat", shaping="deepseek_reasoning")
        host = gw.url.split("//", 1)[1]
        messages = [{"role": "user", "content": "go"}]
        for turn in range(12):
            stream = turn % 2 == 1
            conn = http.client.HTTPConnection(host, timeout=30)  # a new connection: any worker
            conn.request("POST", "/v1/chat/completions", json.dumps({"model": "ds", "messages": messages,
                                                                     "stream": stream}),
                         {"Authorization": f"Bearer {token}", "Content-Type": "application/json"})
            resp = conn.getresponse()
            assert resp.status == 200
            resp.read()
            conn.close()
            sent = stub.seen[-1]["body"]["messages"]
            for message in sent:  # every earlier assistant turn carries its reasoning back
                if message["role"] == "assistant":
                    assert message.get("reasoning_content") == f"R{message['tool_calls'][0]['id'][5:]}", sent
            call_id = f"call_{len(messages)}"
            messages = messages + [
                {"role": "assistant", "content": None,
                 "tool_calls": [{"id": call_id, "type": "function", "function": {"name": "shell", "arguments": "{}"}}]},
                {"role": "tool", "tool_call_id": call_id, "content": "ok"}]
        assert len(_files_with_records(gw.state_dir, "workers__ds")) >= 2


def _listening(url: str) -> int:
    """How many sockets listen on the gateway's port: one per worker that serves (a new or restarted worker
    listens only once the leader's snapshot is applied, leader.py)."""
    port = f"{int(url.rsplit(':', 1)[1]):04X}"
    rows = Path("/proc/net/tcp").read_text().splitlines()[1:]
    return sum(1 for row in rows if row.split()[1].endswith(":" + port) and row.split()[3] == "0A")


def _wait_listening(url: str, count: int) -> None:
    wait_until(lambda: _listening(url) >= count, 60, f"{count} of the gateway's workers listen", interval=0.1)


def _lines(path: Path) -> int:
    return len(path.read_bytes().splitlines()) if path.is_file() else 0


def test_a_restarted_worker_still_knows_the_reasoning_remembered_before(tmp_path, monkeypatch):
    """DeepSeek's reasoning memory survives a worker's restart (CI once lost a streamed answer's reasoning on the
    next turn): the worker that learnt it is killed (as the leader kills one that acknowledges late), and its
    restart, which knows only the leader's snapshot, must still put the reasoning back into the next turn."""
    from gateway_stub import Stub, chat_answer, sse

    from pytest_clawswe.gateway import Upstream
    from pytest_clawswe.gateway.record.ledger import usage_path

    answers = iter(range(1, 10_000))

    def answer(path, body, headers):
        if not body.get("stream"):  # the next turn: a final answer
            data = chat_answer(body["model"], content="done", reasoning="R-final")
            return 200, "application/json", json.dumps(data).encode()
        n = next(answers)  # every first turn its own tool call and reasoning: which answer taught what is known
        base = {"id": f"s{n}", "object": "chat.completion.chunk", "created": 1, "model": body["model"]}
        call = {"index": 0, "id": f"call_{n}", "type": "function", "function": {"name": "shell", "arguments": "{}"}}
        deltas = [{"role": "assistant", "reasoning_content": "R-"}, {"reasoning_content": str(n)},
                  {"tool_calls": [call]}]
        events = [sse({**base, "choices": [{"index": 0, "delta": d, "finish_reason": None}]}) for d in deltas]
        events.append(sse({**base, "choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]}))
        events.append(sse({**base, "choices": [], "usage": {"prompt_tokens": 3, "completion_tokens": 1}}))
        return events + [sse("[DONE]")]

    def turn(messages: list, stream: bool) -> bytes:
        conn = http.client.HTTPConnection(gw.url.split("//", 1)[1], timeout=30)  # a new connection: any worker
        try:
            conn.request("POST", "/v1/chat/completions", json.dumps({"model": "ds", "messages": messages,
                                                                     "stream": stream}),
                         {"Authorization": f"Bearer {token}", "Content-Type": "application/json"})
            resp = conn.getresponse()
            data = resp.read()  # to its end: the answer's ledger line is on disk by then
        finally:
            conn.close()
        assert resp.status == 200, data
        return data

    monkeypatch.setenv("CLAWSWE_TEST_WORKERS_KEY", "sk-workers-test-key-0123456789")
    with Stub(answer) as stub, GatewayProcess.start(tmp_path / "gw", [Upstream("deepseek", stub.url + "/v1",
                                                                      "CLAWSWE_TEST_WORKERS_KEY")], workers=2) as gw:
        _wait_workers(gw, 2)
        _wait_listening(gw.url, 2)
        token = gw.client().register("workers__ds-restart", "deepseek/deepseek-chat", shaping="deepseek_reasoning")
        served_by_1 = usage_path(gw.state_dir, "workers__ds-restart", worker=1)  # worker 1's own ledger file
        user = [{"role": "user", "content": "go"}]
        # the streamed first turn, sent until worker 1 answers it: the leader then knows its reasoning only
        # from worker 1's "remember"
        for _ in range(200):
            before = _lines(served_by_1)
            data = turn(user, stream=True)
            if _lines(served_by_1) > before:
                break
        else:
            pytest.fail("worker 1 never answered")
        call_id = next(c["id"] for line in data.decode().splitlines() if line.startswith("data: {")
                       for choice in json.loads(line[6:])["choices"]
                       for c in (choice.get("delta") or {}).get("tool_calls") or [] if c.get("id"))
        [victim] = _children(gw.pid)
        os.kill(victim, signal.SIGKILL)  # a process the gateway started for this test
        wait_until(lambda: _children(gw.pid) not in ([], [victim]) and gw.client().workers() >= 2, 60,
                   "the leader's supervisor started worker 1 again", interval=0.1)
        _wait_listening(gw.url, 2)  # its snapshot applied
        history = user + [{"role": "assistant", "content": None, "tool_calls": [  # the harness dropped the reasoning
            {"id": call_id, "type": "function", "function": {"name": "shell", "arguments": "{}"}}]},
            {"role": "tool", "tool_call_id": call_id, "content": "ok"}]
        # the next turn, sent until the restarted worker 1 answers it: wherever it lands it carries the reasoning
        for _ in range(200):
            before = _lines(served_by_1)
            turn(history, stream=False)
            assert stub.seen[-1]["body"]["messages"][1].get("reasoning_content") == "R-" + call_id[5:], (
                "the restarted worker forgot" if _lines(served_by_1) > before else "worker 0 forgot")
            if _lines(served_by_1) > before:
                break
        else:
            pytest.fail("the restarted worker 1 never answered")


def test_the_transcript_is_the_longest_request_whichever_worker_recorded_it(cluster):
    """The calls of one attempt are recorded by whichever worker served them (calls/<id>@w<k>.jsonl): the transcript
    reads them all, in time order, and keeps the conversation of the longest request and the answer to it."""
    from pytest_clawswe.gateway.record.calls import calls_paths
    from pytest_clawswe.gateway.record.ledger import read_records
    from pytest_clawswe.wildclaw.grading.transcript import from_calls, recorded_calls

    client = cluster.client()
    client.register("workers__conv", "scripted/noop")  # attempt 1: the transcript must follow attempt 2
    token = client.register("workers__conv", "scripted/noop")
    host = cluster.url.split("//", 1)[1]
    tools = [{"type": "function", "function": {"name": "exec", "parameters": {"type": "object"}}}]

    def send(n: int) -> int:
        messages = [{"role": "user", "content": f"turn {i}"} for i in range(n)]
        conn = http.client.HTTPConnection(host, timeout=30)  # a new connection: any worker
        conn.request("POST", "/v1/chat/completions",
                     json.dumps({"model": "m", "messages": messages, "tools": tools, "stream": n % 2 == 0}),
                     {"Authorization": f"Bearer {token}", "Content-Type": "application/json"})
        answer = conn.getresponse()
        answer.read()  # to its end, as a harness does (one that hangs up first gets no answer recorded)
        conn.close()
        return answer.status

    with ThreadPoolExecutor(12) as pool:
        assert set(pool.map(send, range(1, 41))) == {200}
    records = [r for r in read_records(cluster.state_dir, "workers__conv") if r["attempt"] == 2]
    calls = recorded_calls(cluster.state_dir, "workers__conv", records, timeout=30)
    assert len(calls) == 40 and all("response" in c for c in calls)  # each ledger line has its recorded call
    written = [p for p in calls_paths(cluster.state_dir, "workers__conv") if p.is_file()]
    assert len(written) >= 2  # by several workers
    # sent at once, they ended in any order: read as a harness would have sent them, one after the other
    messages, notes = from_calls(sorted(calls, key=lambda c: len(c["request"]["messages"])))
    assert [m["content"][0]["text"] for m in messages[:40]] == [f"turn {i}" for i in range(40)]
    assert messages[-1]["role"] == "assistant" and messages[-1]["content"][0]["text"] and notes == []
