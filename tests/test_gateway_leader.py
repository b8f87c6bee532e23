"""The leader's snapshot for a new or restarted gateway worker (gateway/service/leader.py), as pure logic: what a
fresh worker's registry knows once it has applied one, after the snapshot crossed the websocket as JSON."""
from __future__ import annotations

import json

from pytest_clawswe.gateway.service.leader import adopt_snapshot, snapshot
from pytest_clawswe.gateway.service.tokens import TokenRegistry
from pytest_clawswe.gateway.upstream.shaping import MAX_REMEMBERED


def test_a_snapshot_carries_the_reasoning_memory_of_active_registrations(tmp_path):
    leader = TokenRegistry(tmp_path / "gw")
    worker = TokenRegistry(tmp_path / "gw", worker=1)
    try:
        kept = leader.register("leader__kept", "scripted/noop", shaping="deepseek_reasoning")
        revoked = leader.register("leader__revoked", "scripted/noop", shaping="deepseek_reasoning")
        plain = leader.register("leader__plain", "scripted/noop")
        for n in range(MAX_REMEMBERED + 5):  # past the cap: the oldest 5 are gone on the leader already
            kept.shaping.learn(f"call:c{n}", f"R{n}")
        revoked.shaping.learn("call:x", "Rx")
        leader.unregister(revoked.token)
        relays: dict[bytes, str] = {}
        message = json.loads(json.dumps(snapshot(leader, {b"\x01" * 32: "engine-a"})))
        assert [token for token, _ in message["memory"]] == [kept.token]  # nothing for revoked or plain ones
        adopt_snapshot(worker, relays, message)

        assert relays == {b"\x01" * 32: "engine-a"}
        learnt = worker.lookup(kept.token)
        assert learnt is not None and learnt.active
        assert list(learnt.shaping.reasoning.items()) == list(kept.shaping.reasoning.items())  # oldest first
        assert len(learnt.shaping.reasoning) == MAX_REMEMBERED and next(iter(learnt.shaping.reasoning)) == "call:c5"
        turn = {"role": "assistant", "content": None, "tool_calls": [{"id": f"c{MAX_REMEMBERED + 4}"}]}
        sent = learnt.shaping.chat_request({"messages": [turn]})["messages"][0]
        assert sent["reasoning_content"] == f"R{MAX_REMEMBERED + 4}"  # the next turn carries it back

        gone = worker.lookup(revoked.token)
        assert gone is not None and not gone.active and not gone.shaping.reasoning  # stays revoked, no memory
        assert worker.lookup(plain.token) is not None
        assert worker.authenticate(revoked.token) is None
    finally:
        leader.close()
        worker.close()


def test_a_worker_settling_a_flush_is_not_killed_for_it():
    """A "flush" is acknowledged once the worker's requests of the token settled, which may take SETTLE_S (a stream
    to a live agent); the leader killed a worker that took ACK_TIMEOUT (the same 10 s) to acknowledge, and every
    turn that then landed on its restart lost what only it knew. Every other op is acknowledged at once."""
    from pytest_clawswe.gateway.service.leader import ACK_TIMEOUT, ack_timeout
    from pytest_clawswe.gateway.service.tokens import GONE_S, SETTLE_S

    assert ack_timeout("flush") >= SETTLE_S + GONE_S + ACK_TIMEOUT / 2
    assert ack_timeout("revoke") == ack_timeout("add") == ACK_TIMEOUT  # a revoked token is never served long
