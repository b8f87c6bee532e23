"""Issue 16 §3: typed adapter options validated at configure time, listed by `clawswe harness list`; issue 13
§5: the prompt's substitution order."""
import subprocess
import sys

import pytest

from pytest_clawswe.harness.adapter import Harness, HarnessError, get_harness_class
from pytest_clawswe.swe.instance.prompt import render_prompt


@pytest.mark.parametrize("name, options, message", [
    ("openclaw", {"context_window": "abc"}, "--harness-option context_window=abc: openclaw expects an integer"),
    ("hermes", {"compression": "maybe"}, "--harness-option compression=maybe: hermes expects true or false"),
    ("hermes", {"max_turn": "3"}, ("harness 'hermes' has no option 'max_turn' (its options: compression, "
                                   "context_length, grace, max_turns, model_name, reasoning_effort, "
                                   "terminal_timeout, toolsets, version; see `clawswe harness list`)")),
    ("oracle", {"x": "1"}, "harness 'oracle' has no option 'x' (its options: none; see `clawswe harness list`)"),
    ("nop", {"x": "1"}, "harness 'nop' has no option 'x' (its options: run_tests; see `clawswe harness list`)"),
])
def test_unknown_keys_and_bad_values_are_one_sentence(name, options, message):
    with pytest.raises(HarnessError) as err:
        get_harness_class(name)("scripted/gold", options)
    assert str(err.value) == message


def test_values_are_typed_and_defaults_are_the_released_ones():
    h = get_harness_class("hermes")("m", {"max_turns": "50", "compression": "yes", "context_length": "none"})
    assert (h.opts.max_turns, h.opts.compression, h.opts.context_length) == (50, True, None)
    assert h.resolved_options()["reasoning_effort"] == "high" and h.resolved_options()["version"] == "0.19.0"
    assert get_harness_class("openclaw")("m", {"context_window": 64000}).opts.context_window == 64000  # from Python


def test_a_bad_option_stops_pytest_before_anything_starts(pytester):
    r = pytester.runpytest("--harness", "openclaw", "--harness-option", "context_window=abc", "-p", "no:cacheprovider")
    assert r.ret == pytest.ExitCode.USAGE_ERROR
    r.stderr.fnmatch_lines(["ERROR: --harness-option context_window=abc: openclaw expects an integer"])
    assert not (pytester.path / "reports").exists()


def test_harness_list_shows_each_adapters_options_and_defaults():
    out = subprocess.run([sys.executable, "-m", "pytest_clawswe.cli", "harness", "list"], capture_output=True,
                         text=True, check=True).stdout
    assert "    max_turns=300  (int) agent.max_turns and --max-turns" in out
    assert "    reasoning_effort=xhigh  (str)" in out  # zeroclaw, whose adapter uses its bundle
    assert "    context_window=128000  (int)" in out


def test_a_third_party_adapter_without_options_still_works():
    class Mine(Harness):
        name = "mine"

    assert Mine("m", None).resolved_options() == {} and Mine("m").options == {}


def test_the_prompt_is_rendered_in_one_pass_like_the_released_format():
    row = {"problem_statement": "use {base_commit} and {problem_statement} literally\n", "base_commit": "abc123"}
    template = "Task:\n{problem_statement}\nBase: {base_commit}\n"
    assert render_prompt(template, row) == "Task:\nuse {base_commit} and {problem_statement} literally\n\nBase: abc123\n"
    assert render_prompt(template, row) == template.format(**row)  # what the released build_prompt produced
