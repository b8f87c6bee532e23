"""Scripted participants: replies a fixture declares, fired when the agent sends a matching message.

A rule (in a fixture's `participants` list):
    id: reply_amara_r1        # becomes the reply's message id (graders look for it)
    to: amara@example.org     # the recipient the agent writes to (case-insensitive)
    match: "(?i)availab"      # regex searched in subject + body (default: any message)
    round: 1                  # fires on the agent's n-th message to that recipient or a later one
    after: [reply_other_r1]   # rules that must have fired before this one
    reply: {...}              # the message that appears in the agent's inbox / channel
Rules fire once, in fixture order, at most one per recipient per message sent: deterministic offline."""
from __future__ import annotations

import re
from dataclasses import dataclass, field


@dataclass
class Rule:
    id: str
    to: str
    reply: dict
    match: re.Pattern | None = None
    round: int = 1
    after: tuple[str, ...] = ()


@dataclass
class Participants:
    rules: list[Rule]
    fired: list[str] = field(default_factory=list)
    rounds: dict[str, int] = field(default_factory=dict)  # recipient -> messages the agent sent them

    @classmethod
    def from_fixture(cls, items: list[dict] | None) -> Participants:
        rules, seen = [], set()
        for n, item in enumerate(items or []):
            try:
                rule = Rule(id=str(item["id"]), to=str(item["to"]).strip().lower(), reply=dict(item["reply"]),
                            match=re.compile(item["match"]) if item.get("match") else None,
                            round=int(item.get("round", 1)), after=tuple(item.get("after") or ()))
            except (KeyError, TypeError, re.error) as exc:
                raise ValueError(f"participant rule {n} is malformed ({exc}); it needs id, to and reply") from None
            if rule.id in seen:
                raise ValueError(f"participant rule id {rule.id} is used twice")
            seen.add(rule.id)
            rules.append(rule)
        return cls(rules)

    def on_send(self, recipients: list[str], text: str) -> list[Rule]:
        """The rules this message fires (recorded as fired)."""
        fired = []
        for recipient in (r.strip().lower() for r in recipients if r.strip()):
            self.rounds[recipient] = self.rounds.get(recipient, 0) + 1
            for rule in self.rules:
                if (rule.to == recipient and rule.id not in self.fired and self.rounds[recipient] >= rule.round
                        and all(a in self.fired for a in rule.after)
                        and (rule.match is None or rule.match.search(text))):
                    self.fired.append(rule.id)
                    fired.append(rule)
                    break
        return fired


def split_recipients(value) -> list[str]:
    if isinstance(value, (list, tuple)):
        return [str(v) for v in value]
    return [part for part in re.split(r"[,;]", str(value or "")) if part.strip()]
