"""The services' audit log and its limits (issue 32 §2), in-process: what is written is what is read back, line
for line, whatever a call holds; a broken line costs only itself; past the task's limits calls are refused and
the refusal is in the audit. (The same against the sidecar on Docker: test_wildclaw_services_audit.py.)"""
import json
import urllib.error
import urllib.request

import pytest

from pytest_clawswe.wildclaw.services import FIXTURES_DIR
from pytest_clawswe.wildclaw.services.sidecar import check_config
from pytest_clawswe.wildclaw.services.mock import auditview, replay
from pytest_clawswe.wildclaw.services.mock.auditview import AuditLog, log_path, read_audit, read_log
from pytest_clawswe.wildclaw.services.mock.app import ServicesThread
from service_calls import free_ports

SOCIAL = FIXTURES_DIR / "social_meeting_tz"
# every character str.splitlines() breaks a line at
LINE_BREAKERS = "\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"


def post(url: str, body: dict | bytes):
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    req = urllib.request.Request(url, data=data, headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=10) as resp:
            return resp.status, json.loads(resp.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read() or b"null")


@pytest.fixture
def services(tmp_path):
    started = []

    def _start(**config):
        audit = tmp_path / f"audit{len(started)}"
        svc = ServicesThread({"services": ["gmail", "contacts"], **config, "ports": free_ports()}, SOCIAL, audit)
        started.append(svc)
        return svc, audit

    yield _start
    for s in started:
        s.stop()


def test_a_record_holding_any_line_break_is_one_ascii_line_and_reads_back_whole(tmp_path):
    log = AuditLog(tmp_path / "x.jsonl")
    records = [{"seq": n, "request": {"to": f"a{c}b", c: c}} for n, c in enumerate(LINE_BREAKERS, 1)]
    for r in records:
        log.append(r)
    log.close()
    raw = (tmp_path / "x.jsonl").read_bytes()
    assert raw.isascii() and raw.count(b"\n") == len(records)
    assert len(raw.decode().splitlines()) == len(records)  # even a reader that splits at every break agrees
    assert read_audit(tmp_path / "x.jsonl") == (records, [])


def test_a_broken_line_is_reported_and_the_lines_after_it_are_read(tmp_path):
    path = tmp_path / "slack.jsonl"
    good = [{"seq": n, "endpoint": "/slack/send"} for n in (1, 2, 3)]
    path.write_bytes(auditview.audit_line(good[0]) + b'{"seq": 2, "endp\xe2\x80\xa8\n' + b"[1, 2]\n"
                     + auditview.audit_line(good[2]) + b'{"seq": 4, "cut by a ki')
    records, broken = read_audit(path)
    assert records == [good[0], good[2]]
    assert [(b["line"], b["text"][:9]) for b in broken] == [(2, '{"seq": 2'), (3, "[1, 2]\n"), (5, '{"seq": 4')]
    served = replay.audit_views(tmp_path)["slack"]
    assert [c["seq"] for c in served["calls"]] == [1, 3] and [u["line"] for u in served["unreadable_lines"]] == [2, 3, 5]


def test_calls_past_the_task_limit_are_refused_and_recorded(services):
    svc, audit = services(audit_max_calls=4)
    gmail, contacts = svc.url("gmail"), svc.url("contacts")
    statuses = [post(contacts + "/contacts/search", {"query": q})[0] for q in "abc"]
    statuses.append(post(gmail + "/gmail/send", {"to": "kenji@example.com", "subject": "s", "body": "b"})[0])
    refused = [post(gmail + "/gmail/send", {"to": "noah@example.com", "subject": "s", "body": "x"})
               for _ in range(3)] + [post(contacts + "/contacts/search", {"query": "d"})]
    assert statuses == [200] * 4 and {r[0] for r in refused} == {429}
    assert "at most 4 calls" in refused[0][1]["error"]
    live = {s: json.loads(urllib.request.urlopen(svc.url(s) + f"/{s}/audit").read()) for s in ("gmail", "contacts")}
    # the refused sends never happened: the one sent message is the accepted one
    assert [m["to"] for m in live["gmail"]["sent_messages"]] == ["kenji@example.com"]
    assert [(c["seq"], c["refused"], c["status"]) for c in live["gmail"]["refused_calls"]] == [
        (2, "calls", 429), (3, "calls", 429), (4, "calls", 429)]
    assert len(live["contacts"]["calls"]) == 3 and len(live["contacts"]["refused_calls"]) == 1
    assert live["gmail"]["audit_limit"] == {"max_calls": 4, "max_bytes": 64 * 2**20, "refused": 4, "full": True}
    svc.stop()
    assert replay.audit_views(audit) == live  # the grader's replay reads the same from the saved log


def test_the_audit_stops_growing_at_its_size_limit(services, monkeypatch):
    monkeypatch.setattr(auditview, "REFUSALS_KEPT", 5)
    svc, audit = services(audit_max_mb=0.25)
    url = svc.url("gmail") + "/gmail/send"
    body = {"to": "a@example.com", "subject": "flood", "body": "\u2028" * 20_000}  # 120 kB escaped, twice a record
    statuses = [post(url, body)[0] for _ in range(12)]
    first_refused = statuses.index(429)
    assert statuses == [200] * first_refused + [429] * (12 - first_refused) and first_refused >= 1
    lines = [len(auditview.audit_line(r)) for r in read_log(log_path(audit, "gmail")) if not r.get("refused")]
    limit = 0.25 * 2**20
    assert len(lines) == first_refused and sum(lines[:-1]) < limit <= sum(lines)  # the last call crossed it
    records = read_log(log_path(audit, "gmail"))
    assert len([r for r in records if r.get("refused") == "bytes"]) == 5  # then only counted
    assert json.loads((audit / "limits.json").read_text())["refused"] == 12 - first_refused


def test_a_wrong_audit_limit_is_one_sentence_before_anything_starts():
    for key, value in (("audit_max_calls", 0), ("audit_max_calls", 1.5), ("audit_max_calls", True),
                       ("audit_max_mb", -1), ("audit_max_mb", "64"), ("audit_max_mb", 4096)):
        with pytest.raises(ValueError, match=key):
            check_config({key: value}, SOCIAL)
    assert check_config({"audit_max_calls": 50, "audit_max_mb": 0.5}, SOCIAL)["audit_max_calls"] == 50


def test_a_body_over_the_services_limit_is_refused_and_in_the_audit(services):
    """4 MiB per call, as before; such a call now leaves its trace (it was counted and not recorded)."""
    svc, audit = services()
    data = b'{"to": "a@b", "subject": "s", "body": "' + b"x" * (4 * 2**20) + b'"}'
    status, body = post(svc.url("gmail") + "/gmail/send", data)
    assert status == 413 and "at most 4 MiB" in body["error"]
    (refused,) = read_log(log_path(audit, "gmail"))
    assert (refused["refused"], refused["status"], refused["request_bytes"]) == ("size", 413, len(data))
    assert replay.audit_views(audit)["gmail"]["refused_calls"][0]["refused"] == "size"
