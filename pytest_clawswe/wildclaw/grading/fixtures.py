"""What the scripted model, the scripted judge and the scripted vision answer a task with, offline.

Per task, first found wins:
- the behaviour `scripted/gold` acts out: `<--scripted-fixtures>/<task id>/solve.sh`, else the task's own
  `solution/solve.sh` (beside exec/);
- the judge's fixtures (`--judge-model scripted`): `<dir>/<task id>/judge.json`, the task's `judge.json`,
  `<dir>/judge.json` (one file for every task), else DEFAULT_JUDGE;
- the answers to the agent's own model calls: the same with `vision.json`, else DEFAULT_VISION.
The released suite ships none of these, so its tasks get the defaults unless the user writes their own;
result.json says when a default answered (fixture formats: gateway/scripted_wildclaw.py).
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from pytest_clawswe.errors import UserError

# a judged criterion without a fixture: neither a pass nor a fail, and said so in its reason
DEFAULT_JUDGE = {"*": {"score": 0.5, "reason": "scripted judge default: this task has no judge.json, so 0.5 "
                                               "stands for 'not judged' (docs/fidelity.md)"}}
DEFAULT_VISION = {"*": {"answer": "(scripted vision default: this task has no vision.json) I cannot see "
                                  "the picture offline; no description is available."}}


class FixtureError(UserError, ValueError):
    """A fixture file that cannot be read: one sentence naming it."""


@dataclass
class Fixtures:
    solution: str  # "" when the task has no behaviour for scripted/gold
    judge: dict
    vision: dict
    judge_default: bool = False
    vision_default: bool = False


def _json(path: Path) -> dict:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise FixtureError(f"{path} is not a readable JSON file ({exc})") from None
    if not isinstance(data, dict):
        raise FixtureError(f"{path} must hold a JSON object of request text -> answer")
    return data


def _first(paths: list[Path]) -> Path | None:
    return next((p for p in paths if p.is_file()), None)


def for_task(task_id: str, ws_dir: Path, fixtures_dir: Path | None) -> Fixtures:
    own = [fixtures_dir / task_id] if fixtures_dir else []
    shared = [fixtures_dir] if fixtures_dir else []
    script = _first([d / "solve.sh" for d in own] + [ws_dir / "solution" / "solve.sh"])
    judge = _first([d / "judge.json" for d in own] + [ws_dir / "judge.json"] + [d / "judge.json" for d in shared])
    vision = _first([d / "vision.json" for d in own] + [ws_dir / "vision.json"] +
                    [d / "vision.json" for d in shared])
    return Fixtures(solution=script.read_text() if script else "",
                    judge=_json(judge) if judge else DEFAULT_JUDGE, vision=_json(vision) if vision else DEFAULT_VISION,
                    judge_default=judge is None, vision_default=vision is None)
