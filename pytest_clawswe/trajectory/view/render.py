"""Writing viewer pages: Jinja2 (autoescape, StrictUndefined), our CSS and script inlined, nothing fetched."""
from __future__ import annotations

import argparse
import base64
import hashlib
import json
import math
import re
from functools import cache
from pathlib import Path
from typing import Any

from jinja2 import Environment, FileSystemLoader, StrictUndefined
from markupsafe import Markup

from pytest_clawswe.errors import UserError
from pytest_clawswe.files import write_atomic
from pytest_clawswe.trajectory.view import page_data

TEMPLATES = Path(__file__).with_name("templates")
# where the recorder's files may sit in a run folder; each is checked to be ATIF before it gets a page
PATTERNS = ("**/trajectories/*.json", "**/*.atif.json", "**/trajectory*.json")
INDEX = "trajectories.html"


def _num(value: Any) -> str:
    return f"{int(value):,}" if isinstance(value, (int, float)) else "—"


def _usd(value: Any) -> str:
    if not isinstance(value, (int, float)) or not math.isfinite(value):
        return "—"
    return f"${value:.4f}" if abs(value) < 1 else f"${value:,.2f}"


def _secs(value: Any) -> str:
    if not isinstance(value, (int, float)):
        return "—"
    return f"{value:.1f} s" if value < 120 else f"{value / 60:.1f} min"


@cache
def _env() -> Environment:
    env = Environment(loader=FileSystemLoader(TEMPLATES), autoescape=True, undefined=StrictUndefined,
                      trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=True)
    env.filters.update(num=_num, usd=_usd, secs=_secs)
    return env


@cache
def _assets() -> tuple[Markup, Markup, str]:
    """Our own CSS and script (trusted, inlined raw) and the script's CSP hash."""
    css = (TEMPLATES / "viewer.css").read_text()
    script = (TEMPLATES / "viewer.js").read_text()
    # an end tag inside either would end the element early; they are ours, so this is a check on us
    assert "</style" not in css.lower() and "</script" not in script.lower()
    digest = base64.b64encode(hashlib.sha256(script.encode()).digest()).decode()
    return Markup(css), Markup(script), f"sha256-{digest}"


def _outcome_class(view: dict) -> str:
    outcome = view["outcome"].lower()
    if outcome in ("resolved", "passed", "pass", "success"):
        return "good"
    if outcome in ("error", "apply_failed", "unresolved", "failed", "fail"):
        return "bad"
    return "mid" if outcome else ""


def render(trajectory: dict) -> str:
    """The self-contained HTML page of one ATIF trajectory."""
    view = page_data.build(trajectory)
    css, script, script_hash = _assets()
    return _env().get_template("trajectory.html.j2").render(
        v=view, css=css, script=script, script_hash=script_hash, outcome_class=_outcome_class(view))


def _load(path: Path) -> dict | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if isinstance(data, dict) and str(data.get("schema_version", "")).startswith("ATIF") \
            and isinstance(data.get("steps"), list):
        return data
    return None


def find_trajectories(run_dir: str | Path) -> list[Path]:
    """Every ATIF trajectory file in a run folder (not in a hidden folder: an item still running)."""
    root = Path(run_dir)
    found = set()
    for pattern in PATTERNS:
        for path in root.glob(pattern):
            rel = path.relative_to(root).parts
            if path.is_file() and not any(part.startswith(".") for part in rel):
                found.add(path)
    return sorted(found)


def viewer_path(trajectory_file: Path) -> Path:
    """The page beside its trajectory: x.json / x.atif.json -> x.html."""
    name = trajectory_file.name
    for suffix in (".atif.json", ".json"):
        if name.endswith(suffix):
            name = name[: -len(suffix)]
            break
    return trajectory_file.with_name(name + ".html")


def _row(path: Path, page: Path, data: dict, root: Path) -> dict:
    own = (data.get("extra") or {}).get("clawswe") or {}
    view = page_data.build(data)
    attempt = own.get("attempt")
    return {"item_id": str(own.get("item_id") or path.stem), "attempt": attempt if isinstance(attempt, int) else 1,
            "outcome": str(own.get("outcome") or ""), "score": view["score"], "steps": view["totals"]["steps"],
            "tokens": view["totals"]["prompt_tokens"] + view["totals"]["completion_tokens"],
            "cost": view["totals"]["cost"], "page": page.relative_to(root).as_posix(),
            "harness": view["harness"], "model": view["model"]}


def write_viewers(run_dir: str | Path) -> list[dict]:
    """A page beside every trajectory file of the run, and trajectories.html listing them; the rows listed."""
    root = Path(run_dir)
    rows = []
    for path in find_trajectories(root):
        data = _load(path)
        if data is None:
            continue
        page = viewer_path(path)
        write_atomic(page, render(data))
        rows.append(_row(path, page, data, root))
    rows.sort(key=lambda r: (r["item_id"], r["attempt"]))
    if rows:
        html = _env().get_template("index.html.j2").render(rows=rows, run=root.resolve().name,
                                                           css=_assets()[0])
        write_atomic(root / INDEX, html)
    return rows


def write_viewer(trajectory_file: Path) -> Path | None:
    """The page of one trajectory file, written beside it (None: not an ATIF trajectory)."""
    data = _load(Path(trajectory_file))
    if data is None:
        return None
    page = viewer_path(Path(trajectory_file))
    write_atomic(page, render(data))
    return page


def item_page(item_folder: Path) -> Path:
    """The page of an item's last attempt (<item>/trajectory/attempt-<n>.html); a path that does not exist when
    the item has none (a report's link helper leaves it out)."""
    pages = sorted(Path(item_folder).glob("trajectory/attempt-*.html"),
                   key=lambda p: int(re.sub(r"\D", "", p.stem) or 0))
    return pages[-1] if pages else Path(item_folder) / "trajectory" / "none.html"


def viewer_links(run_dir: str | Path) -> dict[str, list[tuple[int, str]]]:
    """item id -> [(attempt, page path relative to the run folder)] for the pages that exist, by attempt."""
    root = Path(run_dir)
    links: dict[str, list[tuple[int, str]]] = {}
    for path in find_trajectories(root):
        page = viewer_path(path)
        data = _load(path) if page.is_file() else None
        if data is None:
            continue
        row = _row(path, page, data, root)
        links.setdefault(row["item_id"], []).append((row["attempt"], row["page"]))
    return {k: sorted(v) for k, v in links.items()}


def viewer_link(run_dir: str | Path, item_id: str, attempt: int | None = None) -> str | None:
    """The page of one instance or task (its last attempt unless `attempt`), relative to the run folder,
    or None when it has none. A report linking many items calls viewer_links() once instead."""
    pages = viewer_links(run_dir).get(item_id, [])
    if attempt is not None:
        pages = [p for p in pages if p[0] == attempt]
    return pages[-1][1] if pages else None


def _view(args: argparse.Namespace) -> int:
    target = Path(args.path)
    if target.is_file():
        data = _load(target)
        if data is None:
            raise UserError(f"{target} is not an ATIF trajectory (no schema_version ATIF-... and steps); "
                            "give a trajectory file or a run folder")
        page = Path(args.out) if args.out else viewer_path(target)
        write_atomic(page, render(data))
        print(page)
        return 0
    if not target.is_dir():
        raise UserError(f"{target}: no such file or folder; give a run folder or a trajectory file")
    rows = write_viewers(target)
    if not rows:
        raise UserError(f"{target} holds no trajectory files (run with a recording gateway first, or give one "
                        "trajectory file)")
    print(f"{len(rows)} trajectory pages; the list: {target / INDEX}")
    return 0


def add_cli(sub) -> None:
    p = sub.add_parser("view", help="write the HTML viewer of a trajectory file, or of every trajectory of a run",
                       description="Write self-contained HTML pages (no server, no network) for ATIF trajectories: "
                                   "for a file, its page beside it (or --out); for a run folder, a page beside "
                                   "each trajectory file and trajectories.html listing them.")
    p.add_argument("path", help="a run folder or one trajectory file")
    p.add_argument("--out", help="where to write the page of a single file (default: beside it, .html)")
    p.set_defaults(func=_view)
