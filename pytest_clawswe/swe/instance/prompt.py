"""The instance prompt: the released template of the harness, its two placeholders filled from the row.

A template names its placeholders as {name}; other braces are text (the released templates have code in them).
A placeholder we do not know (a misspelled {problem_statment}) is an error, never left in the prompt.
"""
from __future__ import annotations

import re

from pytest_clawswe.errors import HarnessError
from pytest_clawswe.swe.paths import PROMPTS_DIR

PLACEHOLDERS = ("problem_statement", "base_commit")
_PLACEHOLDER = re.compile(r"\{(problem_statement|base_commit)\}")
_ANY_PLACEHOLDER = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")


def unknown_placeholders(template: str) -> list[str]:
    """The {name}s of a template that are not PLACEHOLDERS (a typo would stay in the prompt)."""
    return sorted({m.group(1) for m in _ANY_PLACEHOLDER.finditer(template)} - set(PLACEHOLDERS))


def render_prompt(template: str, row: dict) -> str:
    """Substitute both placeholders in ONE pass over the template, like the released str.format: text that
    arrives with the problem statement (even a literal `{base_commit}`) is never substituted again. Not
    str.format itself: it would need every other brace of a template doubled."""
    unknown = unknown_placeholders(template)
    if unknown:
        raise HarnessError(f"the prompt template has unknown placeholder(s) {', '.join('{%s}' % u for u in unknown)}; "
                           f"a template may use {', '.join('{%s}' % p for p in PLACEHOLDERS)}")
    values = {"problem_statement": row["problem_statement"], "base_commit": row.get("base_commit", "")}
    return _PLACEHOLDER.sub(lambda m: values[m.group(1)], template)


def instance_prompt(harness, row: dict) -> str:
    """The prompt `harness` gets for an instance: its template (Harness.prompt_template) filled from `row`."""
    return render_prompt((PROMPTS_DIR / harness.prompt_template).read_text(), row)
