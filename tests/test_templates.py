"""Templates fail loudly: a prompt placeholder we do not fill, or a report variable nobody passed, is an error,
never text left in a prompt or a blank in a page."""
import jinja2
import pytest

from pytest_clawswe.errors import HarnessError
from pytest_clawswe.report import html
from pytest_clawswe.swe.paths import PROMPTS_DIR
from pytest_clawswe.swe.instance.prompt import PLACEHOLDERS, render_prompt, unknown_placeholders

ROW = {"problem_statement": "Fix {it}.", "base_commit": "abc123"}


@pytest.mark.parametrize("template", sorted(PROMPTS_DIR.glob("*.txt")), ids=lambda p: p.name)
def test_every_placeholder_of_a_shipped_prompt_is_known(template):
    text = template.read_text()
    assert unknown_placeholders(text) == []
    assert all("{%s}" % name in text for name in PLACEHOLDERS), "both placeholders are filled in every template"
    prompt = render_prompt(text, ROW)
    assert "Fix {it}." in prompt and "abc123" in prompt and "{base_commit}" not in prompt


def test_a_misspelled_placeholder_is_an_error_not_text_in_the_prompt():
    with pytest.raises(HarnessError, match=r"unknown placeholder\(s\) \{problem_statment\}"):
        render_prompt("Task: {problem_statment}\nBase: {base_commit}\n", ROW)
    # braces that are not a placeholder (code in a template) stay text
    assert render_prompt('Run `python -c "print({1: 2})"` on {base_commit}', ROW).endswith("on abc123")


def test_the_report_templates_refuse_an_undefined_variable():
    with pytest.raises(jinja2.UndefinedError):
        html._ENV.from_string("<p>{{ run.label }}</p>").render()
    with pytest.raises(jinja2.UndefinedError):
        html._ENV.from_string("<p>{{ missing }}</p>").render()
    assert html._ENV.from_string("<p>{{ x }}</p>").render(x="<b>") == "<p>&lt;b&gt;</p>"  # and escape
