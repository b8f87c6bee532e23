"""The mock services' endpoints and state: email, calendar, contacts, chat (search is in search.py).

A handler takes the JSON body and returns (status, response, effects); effects are what graders read
besides the calls (sent messages, created events, ...) and go into the audit record, so the audit view
can be rebuilt from the log alone."""
from __future__ import annotations

import copy
from datetime import datetime, timedelta

from .participants import Participants, split_recipients


class ApiError(Exception):
    def __init__(self, status: int, message: str, effects: dict | None = None):
        super().__init__(message)
        self.status = status
        self.effects = effects or {}


def need(body: dict, *keys: str) -> None:
    missing = [k for k in keys if body.get(k) in (None, "", [])]
    if missing:
        raise ApiError(400, f"missing required field(s): {', '.join(missing)}")


def parse_time(value: str, field: str = "time") -> datetime:
    try:
        return datetime.fromisoformat(str(value))  # 3.11 reads a trailing Z
    except ValueError:
        raise ApiError(400, f"{field} {value!r} is not an ISO 8601 date-time") from None


def preview(text: str, n: int = 120) -> str:
    text = " ".join(str(text or "").split())
    return text if len(text) <= n else text[: n - 3] + "..."


class Clock:
    """The fixture's 'now', moved on a minute per message sent, so replies have stable timestamps."""

    def __init__(self, now: str | None):
        self.now = parse_time(now or "2026-03-02T09:00:00+00:00", "now")

    def tick(self) -> str:
        self.now += timedelta(minutes=1)
        return self.now.isoformat()


def _within_days(ts: str, now: datetime, days_back) -> bool:
    if days_back in (None, ""):
        return True
    try:
        return parse_time(ts) >= now - timedelta(days=float(days_back))
    except (ApiError, ValueError, TypeError):  # no or naive timestamp: listed rather than hidden
        return True


class Service:
    name = ""

    def __init__(self, fixture: dict):
        self.fixture = fixture or {}

    def routes(self) -> dict:
        raise NotImplementedError


class Gmail(Service):
    name = "gmail"

    def __init__(self, fixture: dict):
        super().__init__(fixture)
        self.clock = Clock(self.fixture.get("now"))
        self.owner = self.fixture.get("owner", "me@example.com")
        self.inbox = [dict(m, is_read=m.get("is_read", False)) for m in self.fixture.get("messages", [])]
        self.participants = Participants.from_fixture(self.fixture.get("participants"))
        self.sent = self.drafts = 0

    def routes(self):
        return {"/gmail/messages": self.list, "/gmail/messages/get": self.get, "/gmail/send": self.send,
                "/gmail/drafts/save": self.draft}

    def list(self, body):
        max_results = int(body.get("max_results") or 20)
        found = [m for m in self.inbox if _within_days(m.get("timestamp", ""), self.clock.now, body.get("days_back"))]
        found.sort(key=lambda m: m.get("timestamp", ""), reverse=True)
        items = [{"message_id": m["message_id"], "from": m.get("from"), "subject": m.get("subject"),
                  "preview": preview(m.get("body")), "timestamp": m.get("timestamp"), "is_read": m["is_read"]}
                 for m in found[:max_results]]
        return 200, {"messages": items, "total": len(items)}, {}

    def get(self, body):
        need(body, "message_id")
        for m in self.inbox:
            if m["message_id"] == body["message_id"]:
                m["is_read"] = True
                return 200, copy.deepcopy(m), {}
        raise ApiError(404, f"message {body['message_id']} not found")

    def send(self, body):
        need(body, "to", "subject", "body")
        self.sent += 1
        msg = {"message_id": f"sent_{self.sent:03d}", "from": self.owner, "to": body["to"],
               "cc": body.get("cc", ""), "subject": body["subject"], "body": body["body"],
               "timestamp": self.clock.tick()}
        recipients = split_recipients(body["to"]) + split_recipients(body.get("cc"))
        triggered = []
        for rule in self.participants.on_send(recipients, f"{body['subject']}\n{body['body']}"):
            reply = {"message_id": rule.id, "from": rule.reply.get("from", rule.to), "to": self.owner,
                     "subject": rule.reply.get("subject", "Re: " + str(body["subject"])),
                     "body": rule.reply.get("body", ""), "timestamp": self.clock.tick(), "is_read": False,
                     "in_reply_to": msg["message_id"]}
            self.inbox.append(reply)
            triggered.append({"reply_id": rule.id, "from": reply["from"], "in_reply_to": msg["message_id"]})
        return 200, {"status": "sent", "message_id": msg["message_id"]}, {
            "sent_messages": [msg], "triggered_replies": triggered}

    def draft(self, body):
        need(body, "to", "subject", "body")
        self.drafts += 1
        item = {k: body.get(k) for k in ("to", "subject", "body", "reply_to_message_id")}
        item["draft_id"] = f"draft_{self.drafts:03d}"
        return 200, {"status": "saved", "draft_id": item["draft_id"]}, {"drafts": [item]}


class Slack(Service):
    name = "slack"

    def __init__(self, fixture: dict):
        super().__init__(fixture)
        self.clock = Clock(self.fixture.get("now"))
        self.owner = self.fixture.get("owner", "@me")
        self.messages = [dict(m) for m in self.fixture.get("messages", [])]
        self.participants = Participants.from_fixture(self.fixture.get("participants"))
        self.sent = self.drafts = 0

    def routes(self):
        return {"/slack/messages": self.list, "/slack/messages/get": self.get, "/slack/send": self.send,
                "/slack/drafts/save": self.draft}

    def list(self, body):
        max_results = int(body.get("max_results") or 20)
        found = [m for m in self.messages if (not body.get("channel") or m.get("channel") == body["channel"])
                 and _within_days(m.get("timestamp", ""), self.clock.now, body.get("days_back"))]
        found.sort(key=lambda m: m.get("timestamp", ""), reverse=True)
        items = [{"message_id": m["message_id"], "sender": m.get("sender"), "channel": m.get("channel", "DM"),
                  "preview": preview(m.get("content")), "timestamp": m.get("timestamp")} for m in found[:max_results]]
        return 200, {"messages": items, "total": len(items)}, {}

    def get(self, body):
        need(body, "message_id")
        for m in self.messages:
            if m["message_id"] == body["message_id"]:
                return 200, copy.deepcopy(m), {}
        raise ApiError(404, f"message {body['message_id']} not found")

    def send(self, body):
        need(body, "to", "content")
        self.sent += 1
        msg = {"message_id": f"sent_{self.sent:03d}", "sender": self.owner, "to": body["to"],
               "content": body["content"], "timestamp": self.clock.tick()}
        triggered = []
        for rule in self.participants.on_send(split_recipients(body["to"]), str(body["content"])):
            reply = {"message_id": rule.id, "sender": rule.reply.get("sender", rule.to),
                     "channel": rule.reply.get("channel", "DM"), "content": rule.reply.get("content", ""),
                     "timestamp": self.clock.tick(), "in_reply_to": msg["message_id"]}
            self.messages.append(reply)
            triggered.append({"reply_id": rule.id, "from": reply["sender"], "in_reply_to": msg["message_id"]})
        return 200, {"status": "sent", "message_id": msg["message_id"]}, {
            "sent_messages": [msg], "triggered_replies": triggered}

    def draft(self, body):
        need(body, "to", "content")
        self.drafts += 1
        item = {"draft_id": f"draft_{self.drafts:03d}", "to": body["to"], "content": body["content"],
                "reply_to_message_id": body.get("reply_to_message_id")}
        return 200, {"status": "saved", "draft_id": item["draft_id"]}, {"drafts": [item]}


class Calendar(Service):
    name = "calendar"

    def __init__(self, fixture: dict):
        super().__init__(fixture)
        self.events = [dict(e) for e in self.fixture.get("events", [])]
        self.created = 0

    def routes(self):
        return {"/calendar/events": self.list, "/calendar/events/get": self.get,
                "/calendar/user_events": self.user_events, "/calendar/events/create": self.create,
                "/calendar/events/delete": self.delete}

    def _of(self, user: str | None = None) -> list[dict]:
        out = [copy.deepcopy(e) for e in self.events if not user or user.lower() in
               [str(a).lower() for a in e.get("attendees", [])] + [str(e.get("owner", "")).lower()]]
        return sorted(out, key=lambda e: str(e["start_time"]))

    def _range(self, body):
        if body.get("date"):
            day = parse_time(str(body["date"])[:10] + "T00:00:00", "date")
            return day, day + timedelta(days=int(body.get("days") or 1))
        start = parse_time(str(body["start_date"])[:10] + "T00:00:00", "start_date") if body.get("start_date") else None
        end = parse_time(str(body["end_date"])[:10] + "T00:00:00", "end_date") + timedelta(days=1) \
            if body.get("end_date") else None
        return start, end

    @staticmethod
    def _naive(value):
        # ranges are whole days in the event's own wall-clock time, as a person reads a calendar
        return value.replace(tzinfo=None) if value is not None else None

    def list(self, body):
        start, end = self._range(body)
        events = [e for e in self._of()
                  if (start is None or self._naive(parse_time(e["end_time"])) > start)
                  and (end is None or self._naive(parse_time(e["start_time"])) < end)]
        return 200, {"events": events, "total": len(events)}, {}

    def user_events(self, body):
        need(body, "user", "date")
        day = parse_time(str(body["date"])[:10] + "T00:00:00", "date")
        events = [e for e in self._of(body["user"])
                  if self._naive(parse_time(e["start_time"])) < day + timedelta(days=1)
                  and self._naive(parse_time(e["end_time"])) > day]
        return 200, {"user": body["user"], "date": body["date"], "events": events}, {}

    def get(self, body):
        need(body, "event_id")
        for e in self.events:
            if e["event_id"] == body["event_id"]:
                return 200, copy.deepcopy(e), {}
        raise ApiError(404, f"event {body['event_id']} not found")

    def create(self, body):
        need(body, "title", "start_time", "end_time", "attendees")
        if parse_time(body["end_time"], "end_time") <= parse_time(body["start_time"], "start_time"):
            raise ApiError(400, "end_time must be after start_time")
        attendees = body["attendees"] if isinstance(body["attendees"], list) else split_recipients(body["attendees"])
        self.created += 1
        event = {"event_id": f"evt_new_{self.created:03d}", "title": body["title"],
                 "start_time": body["start_time"], "end_time": body["end_time"],
                 "attendees": [str(a).strip() for a in attendees], "location": body.get("location", ""),
                 "description": body.get("description", "")}
        self.events.append(event)
        return 200, {"status": "created", "event": event}, {"created_events": [event]}

    def delete(self, body):
        need(body, "event_id")
        for n, e in enumerate(self.events):
            if e["event_id"] == body["event_id"]:
                del self.events[n]
                return 200, {"status": "deleted", "event_id": e["event_id"]}, {"deleted": [e]}
        raise ApiError(404, f"event {body['event_id']} not found")


class Contacts(Service):
    name = "contacts"

    def __init__(self, fixture: dict):
        super().__init__(fixture)
        self.contacts = [dict(c) for c in self.fixture.get("contacts", [])]

    def routes(self):
        return {"/contacts/search": self.search, "/contacts/get": self.get}

    def search(self, body):
        need(body, "query")
        q, dept = str(body["query"]).lower(), str(body.get("department") or "").lower()
        fields = ("name", "email", "department", "title", "location")
        found = [c for c in self.contacts if any(q in str(c.get(f, "")).lower() for f in fields)
                 and (not dept or dept == str(c.get("department", "")).lower())]
        items = [{k: c.get(k) for k in ("contact_id", "name", "email", "department", "title")} for c in found]
        return 200, {"contacts": items, "total": len(items)}, {}

    def get(self, body):
        need(body, "contact_id")
        for c in self.contacts:
            if c["contact_id"] == body["contact_id"]:
                return 200, copy.deepcopy(c), {}
        raise ApiError(404, f"contact {body['contact_id']} not found")
