"""The default run id: two runs started in the same second on one engine get two ids (their Docker networks
and swebench's evaluation containers are named after it)."""
import re

from pytest_clawswe.run.config import default_run_id


def test_two_runs_in_the_same_second_get_two_ids(monkeypatch):
    monkeypatch.setattr("time.strftime", lambda fmt, *a: "20261126-150000")
    ids = {default_run_id("oracle", "scripted/gold") for _ in range(20)}
    assert len(ids) == 20
    assert all(re.fullmatch(r"oracle_scripted-gold_20261126-150000-[0-9a-f]{4}", i) for i in ids)
