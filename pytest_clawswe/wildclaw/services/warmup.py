"""Released tasks whose Warmup starts a mock service from the task's workspace: those lines go to the sidecar.

A released Warmup line such as
    export GMAIL_FIXTURES=/tmp_workspace/fixtures/gmail/inbox.json && python3 /tmp_workspace/mock_services/gmail/server.py &
starts the service inside the agent's container, from source the agent can read. `split_warmup` takes such
lines out (the runner runs the rest as before), names the service and the fixture file it was given, and
says which lines moved, so the task's results can report them. Services we do not implement stay where
they were and are listed as such: the task still runs, with the released weakness, and says so."""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from pytest_clawswe.wildclaw.services.mock import PORTS

_START = re.compile(
    r"""^\s*(?:export\s+(?P<var>\w+)=(?P<fixture>\S+)\s*(?:&&|;)\s*)?   # optional fixture variable
        (?:\w+=\S+\s+)*                                               # inline VAR=value prefixes
        python3?\s+(?P<script>\S*/mock_services/(?P<name>[\w-]+)/\S+\.py)\b[^&]*&?\s*$""", re.VERBOSE)
ALIASES = {"gmail": "gmail", "email": "gmail", "calendar": "calendar", "contacts": "contacts", "slack": "slack",
           "chat": "slack"}
WORKSPACE = PurePosixPath("/tmp_workspace")


@dataclass
class Moved:
    line: str
    service: str
    fixture: str | None  # the path the line gave the service, in the agent's container


@dataclass
class WarmupSplit:
    keep: list[str] = field(default_factory=list)  # run in the agent's container as before
    moved: list[Moved] = field(default_factory=list)  # now served by the sidecar
    unsupported: list[str] = field(default_factory=list)  # mock services we have no equivalent for (kept)


def split_warmup(lines: list[str]) -> WarmupSplit:
    out = WarmupSplit()
    for line in lines:
        found = _START.match(line)
        if not found:
            out.keep.append(line)
            continue
        service = ALIASES.get(found["name"].lower())
        if service is None or service not in PORTS:
            out.keep.append(line)
            out.unsupported.append(line)
            continue
        out.moved.append(Moved(line, service, found["fixture"]))
    return out


def host_fixture(container_path: str, workspace_dir: str | Path) -> Path:
    """Where a /tmp_workspace path of the agent's container comes from in the task's workspace folder:
    /tmp_workspace/tmp/... from tmp/, anything else under /tmp_workspace from exec/."""
    path = PurePosixPath(container_path)
    try:
        rel = path.relative_to(WORKSPACE)
    except ValueError:
        raise ValueError(f"the warmup gives the service {container_path}, which is not under {WORKSPACE}; "
                         f"put the fixture in the task's workspace") from None
    if rel.parts and rel.parts[0] == "tmp":
        return Path(workspace_dir, "tmp", *rel.parts[1:])
    return Path(workspace_dir, "exec", *rel.parts)
