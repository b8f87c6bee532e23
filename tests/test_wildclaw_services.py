"""The WildClawBench mock services as real HTTP processes (in a thread here; in a sidecar in the docker tests)."""
import json
import time
import urllib.error
import urllib.request
from collections import Counter
from pathlib import Path

import pytest

from pytest_clawswe.wildclaw.services import FIXTURES_DIR
from pytest_clawswe.wildclaw.services.mock import replay
from pytest_clawswe.wildclaw.services.mock.auditview import log_path, read_log
from pytest_clawswe.wildclaw.services.mock.faults import FaultPlan
from pytest_clawswe.wildclaw.services.mock.participants import Participants
from pytest_clawswe.wildclaw.services.mock.app import ServicesThread
from service_calls import free_ports

SOCIAL = FIXTURES_DIR / "social_meeting_tz"
SEARCH = FIXTURES_DIR / "search_lighthouse"


def http(url: str, body=None, method=None):
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(url, data=data, method=method or ("GET" if body is None else "POST"),
                                 headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=10) as resp:
            return resp.status, json.loads(resp.read()), dict(resp.headers)
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read() or b"null"), dict(exc.headers)


class Client:
    def __init__(self, services: ServicesThread):
        self.services = services

    def post(self, endpoint: str, body: dict):
        return http(self.services.url(endpoint.split("/")[1]) + endpoint, body)

    def audit(self, service: str) -> dict:
        return http(self.services.url(service) + f"/{service}/audit")[1]


@pytest.fixture
def start(tmp_path):
    started = []

    def _start(fixtures: Path, **config):
        base = json.loads((fixtures / "config.json").read_text()) if (fixtures / "config.json").is_file() else {}
        audit = tmp_path / f"audit{len(started)}"
        services = ServicesThread({**base, **config, "ports": free_ports()}, fixtures, audit)
        started.append(services)
        return Client(services), audit

    yield _start
    for s in started:
        s.stop()


def gold(fixtures: Path):
    return [tuple(c) for c in json.loads((fixtures / "gold_calls.json").read_text())]


def test_the_audit_of_a_call_sequence_equals_the_calls(start):
    client, audit_dir = start(SOCIAL)
    calls = gold(SOCIAL)
    for endpoint, body in calls:
        assert client.post(endpoint, body)[0] == 200, endpoint
    for service in ("gmail", "calendar", "contacts"):
        view = client.audit(service)
        expected = [(e, b) for e, b in calls if e.startswith(f"/{service}/")]
        assert [(c["endpoint"], c["request_body"]) for c in view["calls"]] == expected
        assert all(c["status"] == 200 and c["fault"] is None for c in view["calls"])
        # the log on disk holds the same calls, with status, time and fault of each
        logged = read_log(log_path(audit_dir, service))
        assert [(r["endpoint"], r["request"]) for r in logged] == expected
        assert all({"status", "time", "fault", "response"} <= set(r) for r in logged)


def test_scripted_participants_answer_the_gold_negotiation(start):
    client, _ = start(SOCIAL)
    for endpoint, body in gold(SOCIAL):
        answer = client.post(endpoint, body)[1]
        if endpoint == "/gmail/messages/get":
            assert answer["message_id"] == body["message_id"]  # every reply the gold run reads exists
    gmail, calendar = client.audit("gmail"), client.audit("calendar")
    assert [t["reply_id"] for t in gmail["triggered_replies"]] == [
        "reply_kenji_r1", "reply_lena_r1", "reply_kenji_confirm", "reply_lena_confirm"]
    assert [m["to"] for m in gmail["sent_messages"]][-1] == "dana.okafor@northwind.example"
    [event] = calendar["created_events"]
    assert (event["start_time"], event["end_time"]) == ("2026-03-11T08:30:00Z", "2026-03-11T09:30:00Z")
    assert calendar["deleted"] == []


def test_a_wrong_proposal_is_declined_and_a_later_right_one_confirmed(start):
    client, _ = start(SOCIAL)
    kenji = "kenji.sato@northwind.example"
    client.post("/gmail/send", {"to": kenji, "subject": "Atlas", "body": "When are you free?"})
    client.post("/gmail/send", {"to": kenji, "subject": "Atlas", "body": "How about Tuesday 14:00 London?"})
    client.post("/gmail/send", {"to": kenji, "subject": "Atlas", "body": "Wednesday 17:30 Tokyo then?"})
    fired = [t["reply_id"] for t in client.audit("gmail")["triggered_replies"]]
    assert fired == ["reply_kenji_r1", "reply_kenji_decline", "reply_kenji_confirm"]
    inbox = client.post("/gmail/messages", {"max_results": 50})[1]["messages"]
    assert {"reply_kenji_r1", "reply_kenji_decline", "reply_kenji_confirm"} <= {m["message_id"] for m in inbox}


def test_a_participant_rule_without_a_reply_is_rejected():
    with pytest.raises(ValueError, match="rule 0 is malformed"):
        Participants.from_fixture([{"id": "x", "to": "a@b"}])


def run_calls(client, calls):
    return [client.post(endpoint, body)[0] for endpoint, body in calls]


def test_same_seed_same_calls_inject_identical_faults(start):
    calls = [("/contacts/search", {"query": q}) for q in "abcdefghijklmnopqrstuvwxyz"]
    runs = []
    for _ in range(2):
        # seeds 1002 and 1008 inject no 2-4 s delay in the first 10 calls: the test stays fast
        client, _ = start(SOCIAL, error_rate=0.5, error_seed=1002)
        statuses = run_calls(client, calls[:10])
        view = client.audit("contacts")
        runs.append((statuses, [(f["seq"], f["fault"]) for f in view["injected_faults"]]))
    assert runs[0] == runs[1]
    assert runs[0][1] == [(7, "429"), (8, "500")]
    assert {s for s in runs[0][0]} <= {200, 429, 500}
    # another seed gives another sequence
    client, _ = start(SOCIAL, error_rate=0.5, error_seed=1008)
    run_calls(client, calls[:10])
    assert [(f["seq"], f["fault"]) for f in client.audit("contacts")["injected_faults"]] != runs[0][1]


def test_fault_plan_follows_the_released_weights():
    plan = FaultPlan(0.5, 7, "gmail")
    kinds = Counter((f.kind if f else None) for f in (plan.next() for _ in range(20000)))
    faults = sum(v for k, v in kinds.items() if k)
    assert abs(faults / 20000 - 0.5) < 0.02
    assert abs(kinds["429"] / faults - 0.35) < 0.03 and abs(kinds["500"] / faults - 0.35) < 0.03
    assert abs(kinds["delay"] / faults - 0.30) < 0.03
    always = FaultPlan(1.0, 3, "slack")
    delays = [f.delay for f in (always.next() for _ in range(500)) if f.kind == "delay"]
    assert delays and min(delays) >= 2.0 and max(delays) <= 4.0
    # per service and per seed: one service's calls do not shift another's faults
    assert [FaultPlan(0.3, 1, "gmail").next() for _ in range(50)] == [FaultPlan(0.3, 1, "gmail").next() for _ in range(50)]
    with pytest.raises(ValueError):
        FaultPlan(1.5, 0, "gmail")


def test_injected_faults_answer_and_are_audited_and_gets_are_exempt(start):
    client, audit_dir = start(SOCIAL, error_rate=1.0, error_seed=5)
    seen = {}
    for _n in range(12):
        for _ in range(3):  # audit and health never draw a fault, so they do not move the sequence
            assert http(client.services.url("contacts") + "/contacts/audit")[0] == 200
            assert http(client.services.url("contacts") + "/health")[0] == 200
        began = time.monotonic()
        status, body, headers = client.post("/contacts/search", {"query": "Lena"})
        seen.setdefault(status, []).append((headers, time.monotonic() - began, body))
        if 200 in seen:
            break
    if 429 in seen:
        headers = seen[429][0][0]
        assert headers.get("Retry-After") == "2"
    if 200 in seen:  # a delay fault: answered after 2-4 s, counted as a call
        assert 2.0 <= seen[200][0][1] < 5.0
    view = client.audit("contacts")
    faults = [f["fault"] for f in view["injected_faults"]]
    assert len(faults) == sum(len(v) for v in seen.values())  # every POST drew a fault at rate 1.0
    assert [c["fault"] for c in view["calls"]] == ["delay"] * len(seen.get(200, []))
    logged = read_log(log_path(audit_dir, "contacts"))
    assert [r["fault"] for r in logged] == faults


def test_search_counts_every_query_and_refuses_past_the_budget(start):
    client, _ = start(SEARCH)
    status, first, _ = client.post("/search/query", {"query": "Kestrel Point automatic operation", "top_k": 3})
    assert status == 200 and "kp-board-1988" in [r["doc_id"] for r in first["results"]]
    assert first["queries_remaining"] == 3
    assert client.post("/search/get", {"doc_id": "kp-board-1988"})[0] == 200  # reading is not a query
    for q in ("last resident keeper", "Agnes Thorvald", "Tom Ellery"):
        assert client.post("/search/query", {"query": q})[0] == 200
    status, refused, _ = client.post("/search/query", {"query": "one more"})
    assert status == 403 and "budget" in refused["error"] and "4 queries" in refused["error"]
    view = client.audit("search")
    assert view["query_count"] == 4 and view["budget"] == 4
    assert view["refused_queries"] == [{"query": "one more"}]


def test_bm25_ranks_the_matching_document_first(start):
    client, _ = start(SEARCH, search_budget=None)
    results = client.post("/search/query", {"query": "attendant keeper Tom Ellery"})[1]["results"]
    assert results[0]["doc_id"] == "kp-attendant"
    assert client.post("/search/query", {"query": "zzzz qqqq"})[1]["results"] == []


def test_replay_serves_the_same_audit_from_the_saved_log(start):
    client, audit_dir = start(SOCIAL, error_rate=0.3, error_seed=17)  # faults, none of them a delay
    for endpoint, body in gold(SOCIAL)[:8]:
        client.post(endpoint, body)
    live = {s: client.audit(s) for s in ("gmail", "calendar", "contacts")}
    assert any(v["injected_faults"] for v in live.values())  # the replay carries the faults too
    client.services.stop()
    ports = free_ports()
    servers = replay.start(audit_dir, ports=ports)
    try:
        for service, view in live.items():
            assert http(f"http://127.0.0.1:{ports[service]}/{service}/audit")[1] == view
        status, body, _ = http(f"http://127.0.0.1:{ports['gmail']}/gmail/send", {"to": "x"})
        assert status == 410  # nothing can be done through a replay
    finally:
        for s in servers:
            s.shutdown()


def test_unknown_endpoints_and_bad_bodies_are_answered_and_audited(start):
    client, _ = start(SOCIAL)
    assert client.post("/gmail/reset", {})[0] == 404  # there is no way to reset a service
    assert client.post("/gmail/send", {"to": "a@b"})[0] == 400
    assert client.post("/calendar/events/create", {"title": "x", "start_time": "2026-03-11T10:00:00Z",
                                                   "end_time": "2026-03-11T09:00:00Z", "attendees": ["a"]})[0] == 400
    statuses = [c["status"] for c in client.audit("gmail")["calls"]]
    assert statuses == [404, 400]


CHAT = """
now: "2026-03-09T09:00:00+00:00"
owner: "@priya"
messages:
  - {message_id: m1, sender: "@ops-bot", channel: "#ops", content: "Deploy window moved to 14:00", timestamp: "2026-03-09T08:00:00+00:00"}
  - {message_id: m0, sender: "@ops-bot", channel: "#ops", content: "Old news", timestamp: "2026-02-01T08:00:00+00:00"}
participants:
  - id: chat_nina_r1
    to: "@nina"
    match: "(?i)rollback"
    reply: {sender: "@nina", content: "Rollback plan is in the runbook, section 4."}
"""


def test_chat_lists_reads_sends_and_a_participant_answers(start, tmp_path):
    fixtures = tmp_path / "chat"
    fixtures.mkdir()
    (fixtures / "slack.yaml").write_text(CHAT)
    client, _ = start(fixtures, services=["slack"])
    listed = client.post("/slack/messages", {"days_back": 7})[1]["messages"]
    assert [m["message_id"] for m in listed] == ["m1"]  # older than 7 days: not listed
    assert client.post("/slack/messages/get", {"message_id": "m1"})[1]["content"].startswith("Deploy")
    client.post("/slack/send", {"to": "@nina", "content": "hi"})  # no match: no reply
    client.post("/slack/send", {"to": "@nina", "content": "Where is the rollback plan?"})
    client.post("/slack/drafts/save", {"to": "#ops", "content": "draft"})
    audit = client.audit("slack")
    assert [t["reply_id"] for t in audit["triggered_replies"]] == ["chat_nina_r1"]
    assert [m["to"] for m in audit["sent_messages"]] == ["@nina", "@nina"] and len(audit["drafts"]) == 1
    assert client.post("/slack/messages/get", {"message_id": "chat_nina_r1"})[1]["sender"] == "@nina"


def test_calendar_and_contacts_endpoints(start):
    client, _ = start(SOCIAL)
    wed = client.post("/calendar/events", {"date": "2026-03-11", "days": 1})[1]["events"]
    assert [e["event_id"] for e in wed] == ["evt_standup_wed", "evt_vendor_wed"]
    mine = client.post("/calendar/user_events", {"user": "priya.shah@northwind.example", "date": "2026-03-10"})[1]
    assert [e["event_id"] for e in mine["events"]] == ["evt_standup_tue"]
    assert client.post("/calendar/events/delete", {"event_id": "evt_vendor_wed"})[0] == 200
    assert client.post("/calendar/events/get", {"event_id": "evt_vendor_wed"})[0] == 404
    assert [d["event_id"] for d in client.audit("calendar")["deleted"]] == ["evt_vendor_wed"]
    found = client.post("/contacts/search", {"query": "kenji"})[1]["contacts"]
    assert [c["contact_id"] for c in found] == ["CT-101", "CT-102"]
    assert client.post("/contacts/get", {"contact_id": "CT-103"})[1]["location"] == "Berlin"
    assert client.post("/contacts/search", {"query": "kenji", "department": "Sales"})[1]["total"] == 1


def test_a_retrying_gold_run_copes_with_faults(start):
    client, _ = start(SOCIAL, **json.loads((SOCIAL / "config.faults.json").read_text()))
    retries = 0
    for endpoint, body in gold(SOCIAL):
        for _ in range(10):  # a real solution waits Retry-After; the service does not check that
            status = client.post(endpoint, body)[0]
            if status not in (429, 500):
                break
            retries += 1
        assert status == 200, endpoint
    gmail, calendar = client.audit("gmail"), client.audit("calendar")
    assert retries == len(gmail["injected_faults"]) + len(calendar["injected_faults"]) + len(
        client.audit("contacts")["injected_faults"]) > 0
    assert {"reply_kenji_confirm", "reply_lena_confirm"} <= {t["reply_id"] for t in gmail["triggered_replies"]}
    assert [e["start_time"] for e in calendar["created_events"]] == ["2026-03-11T08:30:00Z"]


def test_a_wrong_service_config_is_one_clear_sentence_before_anything_starts(tmp_path):
    from pytest_clawswe.wildclaw.services.sidecar import check_config

    assert check_config(None, SEARCH)["search_budget"] == 4  # the folder's own config.json
    assert check_config({}, SOCIAL)["services"] == ["calendar", "contacts", "gmail"]  # from the fixture files
    for config, message in [({"services": ["gmial"]}, "unknown service"), ({"error_rate": 2}, "between 0 and 1"),
                            ({"search_budget": "five"}, "whole number"), (["gmail"], "must be a mapping")]:
        with pytest.raises(ValueError, match=message):
            check_config(config, SOCIAL)
    with pytest.raises(ValueError, match="does not exist"):
        check_config({}, tmp_path / "missing")
    with pytest.raises(ValueError, match="no service to start"):
        check_config({}, tmp_path)


def test_released_warmup_lines_that_start_mock_services_move_to_the_sidecar(tmp_path):
    from pytest_clawswe.wildclaw.services.warmup import host_fixture, split_warmup

    lines = ["pip install -q fastapi uvicorn 2>/dev/null",
             "export GMAIL_FIXTURES=/tmp_workspace/fixtures/gmail/inbox.json && python3 /tmp_workspace/mock_services/gmail/server.py &",
             "export CALENDAR_FIXTURES=/tmp_workspace/tmp/cal.json && python /tmp_workspace/mock_services/calendar/server.py &",
             "python3 /tmp_workspace/mock_services/smart_home/server.py &",
             "sleep 3", "rm -rf /tmp_workspace/fixtures"]
    split = split_warmup(lines)
    assert [(m.service, m.fixture) for m in split.moved] == [
        ("gmail", "/tmp_workspace/fixtures/gmail/inbox.json"), ("calendar", "/tmp_workspace/tmp/cal.json")]
    assert split.keep == [lines[0], lines[3], lines[4], lines[5]] and split.unsupported == [lines[3]]
    assert host_fixture("/tmp_workspace/fixtures/gmail/inbox.json", tmp_path) == tmp_path / "exec/fixtures/gmail/inbox.json"
    assert host_fixture("/tmp_workspace/tmp/cal.json", tmp_path) == tmp_path / "tmp/cal.json"
    with pytest.raises(ValueError, match="not under /tmp_workspace"):
        host_fixture("/etc/passwd", tmp_path)


def test_a_bare_list_fixture_is_the_services_main_list(start, tmp_path):
    fixtures = tmp_path / "released"
    fixtures.mkdir()
    (fixtures / "gmail.json").write_text(json.dumps([{"message_id": "m1", "from": "a@b", "subject": "s",
                                                      "body": "b", "timestamp": "2026-03-02T08:00:00+00:00"}]))
    client, _ = start(fixtures, services=["gmail"])
    assert client.post("/gmail/messages/get", {"message_id": "m1"})[1]["subject"] == "s"
