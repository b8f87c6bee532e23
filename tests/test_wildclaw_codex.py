"""Codex's WildClawBench prompt, as the released Codex runner builds it (`CodexRunner._build_task_prompt`): the
structure, headings, order and separators are the released ones; the intro sentences are ours."""
from __future__ import annotations

from pathlib import Path

from pytest_clawswe.harness.adapters.codex import CodexHarness
from pytest_clawswe.wildclaw.task.container import inline_skills
from pytest_clawswe.wildclaw.task.file import parse_task

from tests.test_wildclaw import task_text, write

ROOT = CodexHarness.skill_dirs[0]


def skilled_task(tmp_path: Path, *skills: str, body: str = "Do {baseDir} things.\n"):
    for rel in skills:
        (tmp_path / "skills" / rel).mkdir(parents=True, exist_ok=True)
        (tmp_path / "skills" / rel / "SKILL.md").write_text(f"\n# {rel}\n\n{body}\n")
    lines = "\n".join(skills)
    return parse_task(write(tmp_path, task_text() + (f"## Skills\n\n```\n{lines}\n```\n" if skills else "")))


def test_the_skills_are_one_local_skill_references_section_with_a_subsection_each(tmp_path):
    task = skilled_task(tmp_path, "office/docx", "pdf")
    prompt = inline_skills(task, tmp_path, "  The task.\n\n", ROOT)
    sections = prompt.split("\n\n## ")
    assert [s.split("\n", 1)[0] for s in sections] == ["## Local Skill References", "Task"]
    refs = sections[0].split("\n\n### Skill: ")
    intro = refs[0].removeprefix("## Local Skill References\n\n")
    assert intro and "\n" not in intro and not intro.startswith("#")  # one paragraph of ours
    assert refs[1:] == [f"office/docx\n\n# office/docx\n\nDo {ROOT}/docx things.",
                        f"pdf\n\n# pdf\n\nDo {ROOT}/pdf things."]
    assert sections[1] == "Task\n\nThe task.\n"  # the prompt stripped, the whole ending in one newline
    assert "## Skill:" not in prompt.replace("### Skill:", "")  # not the dead code's (build_codex_prompt) headings


def test_a_task_without_skills_still_gets_the_task_section(tmp_path):
    task = skilled_task(tmp_path)
    assert inline_skills(task, tmp_path, "Do it.\n", ROOT) == "## Task\n\nDo it.\n"


def test_a_skill_without_its_skill_md_gets_no_section(tmp_path):
    task = skilled_task(tmp_path, "pdf")
    (tmp_path / "skills" / "pdf" / "SKILL.md").unlink()
    assert inline_skills(task, tmp_path, "Do it.", ROOT) == "## Task\n\nDo it.\n"


def test_no_skills_leaves_out_the_skill_section_but_keeps_the_task_section(tmp_path):
    task = skilled_task(tmp_path, "pdf")
    assert inline_skills(task, tmp_path, "Do it.", ROOT, skills=False) == "## Task\n\nDo it.\n"
