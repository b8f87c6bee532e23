"""WildClawBench task files: Markdown with YAML front matter and `## ` sections, read as released.

The released parser's rules are kept so released files load unchanged: sections are split on every line
that starts with `##` and whitespace (fenced or not), `id` defaults to the file stem and `timeout_seconds`
to 120, the category is the task file's `NN_Category` folder (the front matter's only when the file is not
in one). Where upstream silently mis-reads a
file (a `## ` line inside the prompt ends it there), we refuse the file with one sentence instead.
"""
from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from pytest_clawswe.errors import UserError

DEFAULT_TIMEOUT_S = 120  # the released runner's default when timeout_seconds is missing
PROMPT_PREFIX = (  # the released runner puts this, then " \n", before every prompt (a protocol constant)
    "You are an expert in a restricted, non-interactive environment. Solve the task efficiently before the "
    "timeout ({timeout_seconds}s). Run all processes in the foreground without user input or background "
    "services. Provide a complete, functional solution in a single pass with no placeholders."
)
KNOWN_SECTIONS = ("Prompt", "Expected Behavior", "Grading Criteria", "Automated Checks", "Workspace Path",
                  "Skills", "Env", "Warmup")
MODALITIES = ("multimodal", "pure-text")
PROMPT_JOIN = " \n"  # released: prefix + " \n" + prompt
_SECTION = re.compile(r"^##\s+(.+?)\s*$")
_CATEGORY_FOLDER = re.compile(r"^\d+_")
_FENCE = re.compile(r"^\s*(```|~~~)")
_Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml when present: collection stays fast
# not tasks: the released suite's template for new tasks (tasks/task0_template.md), and READMEs
_NOT_A_TASK = re.compile(r"(?i)(task\d*[_-]?template|readme)")


class TaskFileError(UserError, ValueError):
    """A task file that cannot be run; the message names the file and the problem in one sentence."""


@dataclass
class Task:
    path: Path
    id: str
    name: str
    category: str  # as written (front matter) or from the folder, e.g. "Safety Alignment"
    timeout_seconds: float
    modality: str  # multimodal | pure-text
    prompt: str
    grader_code: str
    workspace_path: str  # relative to the suite root
    skills: list[str] = field(default_factory=list)
    env: list[str] = field(default_factory=list)
    warmup: list[str] = field(default_factory=list)
    sections: dict[str, str] = field(default_factory=dict)
    front_matter: dict = field(default_factory=dict)

    @property
    def category_marker(self) -> str:
        return category_marker(self.category)

    @property
    def modality_marker(self) -> str:
        return self.modality.replace("-", "_")

    def full_prompt(self, budget_s: float | None = None) -> str:
        """The prompt the agent gets: the released prefix with the agent's budget (`budget_s`, e.g. scaled by
        --budget-factor; this task's own timeout_seconds by default), then the task."""
        seconds = self.timeout_seconds if budget_s is None else budget_s
        budget = int(seconds) if float(seconds).is_integer() else seconds
        return PROMPT_PREFIX.format(timeout_seconds=budget) + PROMPT_JOIN + self.prompt


def category_marker(category: str) -> str:
    """'Safety Alignment', '06_Safety_Alignment', 'safety' -> 'safety' (the first word: -m safety)."""
    words = [w for w in re.split(r"[^A-Za-z0-9]+", category) if w and not w.isdigit()]
    return words[0].lower() if words else "uncategorised"


def _category_from_folder(path: Path) -> str:
    # released layout: tasks/<NN_Category>/<file>.md
    return " ".join(w for w in path.parent.name.split("_") if not w.isdigit()) or "uncategorised"


def _category(path: Path, meta: dict) -> str:
    """The released runner groups by the task's folder; the front matter counts only outside one."""
    if _CATEGORY_FOLDER.match(path.parent.name):
        return _category_from_folder(path)
    return str(meta.get("category") or _category_from_folder(path))


def _unfence(text: str) -> str:
    """The section without its opening and closing fence lines, as released (a fence inside stays)."""
    lines = text.strip().splitlines()
    if lines and _FENCE.match(lines[0]):
        lines = lines[1:]
    if lines and _FENCE.match(lines[-1]):
        lines = lines[:-1]
    return "\n".join(lines).strip("\n")


def _lines(text: str) -> list[str]:
    return [ln.strip() for ln in _unfence(text).splitlines() if ln.strip() and not ln.strip().startswith("#")]


def split_front_matter(text: str, path: Path) -> tuple[dict, str]:
    lines = text.lstrip("\ufeff").splitlines()
    if not lines or lines[0].strip() != "---":
        raise TaskFileError(f"{path}: no YAML front matter (the file must start with a '---' line)")
    for end in range(1, len(lines)):
        if lines[end].strip() == "---":
            break
    else:
        raise TaskFileError(f"{path}: the YAML front matter is not closed by a '---' line")
    try:
        meta = yaml.load("\n".join(lines[1:end]), Loader=_Loader) or {}
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 2}" if mark else ""
        raise TaskFileError(f"{path}: the front matter is not valid YAML{where}") from None
    if not isinstance(meta, dict):
        raise TaskFileError(f"{path}: the front matter must be a YAML mapping of keys to values")
    return meta, "\n".join(lines[end + 1:])


def split_sections(body: str) -> list[tuple[str, str]]:
    sections: list[tuple[str, list[str]]] = []
    for line in body.splitlines():
        m = _SECTION.match(line)
        if m:
            sections.append((m.group(1), []))
        elif sections:
            sections[-1][1].append(line)
    return [(title, "\n".join(body).strip("\n")) for title, body in sections]


def _defines_grade(code: str, path: Path) -> None:
    try:
        tree = ast.parse(code)
    except SyntaxError as exc:
        raise TaskFileError(f"{path}: the Automated Checks code does not parse (line {exc.lineno}: "
                            f"{exc.msg})") from None
    if not any(isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name == "grade" for n in tree.body):
        raise TaskFileError(f"{path}: the Automated Checks code does not define grade(**kwargs)")


def parse_task(path: str | Path) -> Task:
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise TaskFileError(f"{path}: cannot be read as UTF-8 text ({exc})") from None
    meta, body = split_front_matter(text, path)
    ordered = split_sections(body)
    titles = [t for t, _ in ordered]
    if "Prompt" in titles:
        after = titles.index("Prompt") + 1
        if after < len(titles) and titles[after] not in KNOWN_SECTIONS:
            raise TaskFileError(f"{path}: the prompt is cut by the line '## {titles[after]}' (a '## ' line ends "
                                "a section); write it as '### ' or indent it")
    sections = {}
    for title, content in ordered:
        sections[title] = content  # a repeated title: the last one wins, as in the released parser's dict
    prompt = sections.get("Prompt", "").strip()
    if not prompt:
        raise TaskFileError(f"{path}: no '## Prompt' section (or it is empty)")
    workspace = _lines(sections.get("Workspace Path", ""))
    if not workspace:
        raise TaskFileError(f"{path}: no '## Workspace Path' section giving the task's workspace folder")
    code = _unfence(sections.get("Automated Checks", ""))
    if not code.strip():
        raise TaskFileError(f"{path}: no '## Automated Checks' section with the grade(**kwargs) code")
    _defines_grade(code, path)
    timeout = meta.get("timeout_seconds", DEFAULT_TIMEOUT_S)
    try:
        timeout = float(timeout)
        if timeout <= 0:
            raise ValueError
    except (TypeError, ValueError):
        raise TaskFileError(f"{path}: timeout_seconds must be a positive number of seconds, "
                            f"not {meta.get('timeout_seconds')!r}") from None
    modality = str(meta.get("modality") or "pure-text")
    if modality not in MODALITIES:
        raise TaskFileError(f"{path}: modality must be one of {', '.join(MODALITIES)}, not {modality!r}")
    return Task(
        path=path, id=str(meta.get("id") or path.stem), name=str(meta.get("name") or meta.get("id") or path.stem),
        category=_category(path, meta), timeout_seconds=timeout,
        modality=modality, prompt=prompt, grader_code=code, workspace_path=workspace[0],
        skills=_lines(sections.get("Skills", "")), env=_lines(sections.get("Env", "")),
        warmup=_lines(sections.get("Warmup", "")), sections=sections, front_matter=meta,
    )


def task_files(root: str | Path) -> list[Path]:
    """The task files of a suite checkout (its tasks/<category>/*.md) or of any folder of task files."""
    root = Path(root)
    tasks = root / "tasks"
    files = sorted(tasks.glob("*/*.md")) if tasks.is_dir() else sorted(root.rglob("*.md"))
    return [f for f in files if not _NOT_A_TASK.fullmatch(f.stem)]


def suite_root(path: str | Path) -> Path:
    """Where workspace paths are relative to: the checkout holding tasks/, else the folder itself."""
    path = Path(path).resolve()
    return path if (path / "tasks").is_dir() or not (path.parent / "workspace").is_dir() else path.parent
