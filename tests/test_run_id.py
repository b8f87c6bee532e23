"""The default run id: two runs started in the same second on one engine get two ids (their Docker networks
and swebench's evaluation containers are named after it)."""
import re
import secrets

from pytest_clawswe.run.config import default_run_id


def test_the_random_tail_carries_32_bits(monkeypatch):
    # 16 bits (4 hex digits) let two of 20 ids drawn in one second collide 0.3% of the time; 32 bits make it
    # 4 in 100 million
    asked = []
    real = secrets.token_hex
    monkeypatch.setattr(secrets, "token_hex", lambda n=None: asked.append(n) or real(n))
    run_id = default_run_id("oracle", "scripted/gold")
    assert asked == [4]
    assert re.fullmatch(r"oracle_scripted-gold_\d{8}-\d{6}-[0-9a-f]{8}", run_id)


def test_two_runs_in_the_same_second_get_two_ids(monkeypatch):
    monkeypatch.setattr("time.strftime", lambda fmt, *a: "20261126-150000")
    ids = {default_run_id("oracle", "scripted/gold") for _ in range(200)}
    assert len(ids) == 200
    assert all(re.fullmatch(r"oracle_scripted-gold_20261126-150000-[0-9a-f]{8}", i) for i in ids)
