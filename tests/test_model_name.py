"""The run's model, parsed once (pytest_clawswe/model.py): providers, scripted modes, bad names; and no scripted
prefix spelled anywhere else in the package (everything downstream reads the parsed Model's fields)."""
from __future__ import annotations

import ast
import dataclasses
import re
from pathlib import Path

import pytest

from pytest_clawswe.gateway.upstream.providers import Upstream, check_upstream, parse_model, resolve
from pytest_clawswe.model import OPENROUTER, SCRIPTED_MODES, Model
from pytest_clawswe.run.config import RunConfig
from pytest_clawswe.wildclaw.options import WildOptions

PACKAGE = Path(__file__).resolve().parents[1] / "pytest_clawswe"


@pytest.mark.parametrize("spec, provider, upstream_name", [
    ("openrouter/z-ai/glm-5.1", "openrouter", "z-ai/glm-5.1"),
    ("z-ai/glm-5.1", "openrouter", "z-ai/glm-5.1"),  # no known prefix: OpenRouter, the name unchanged
    ("anthropic/claude-sonnet-4", "anthropic", "claude-sonnet-4"),
    ("openai/gpt-4o", "openai", "gpt-4o"),
    ("dashscope/qwen3-coder-plus", "dashscope", "qwen3-coder-plus"),
    ("deepseek/deepseek-chat", "deepseek", "deepseek-chat"),
    ("gpt-4o", "openrouter", "gpt-4o"),
    ("openai/", "openrouter", "openai/"),  # a prefix with nothing after it names no model of that provider
    ("  openai/gpt-4o ", "openai", "gpt-4o"),
])
def test_a_real_model_names_its_provider_and_the_name_forwarded(spec, provider, upstream_name):
    model = Model.parse(spec)
    assert (model.spec, model.provider, model.upstream_name) == (spec.strip(), provider, upstream_name)
    assert not model.is_scripted and model.scripted_mode == ""


@pytest.mark.parametrize("mode", SCRIPTED_MODES)
def test_a_scripted_model_names_its_mode(mode):
    model = Model.parse(f"scripted/{mode}")
    assert model.is_scripted and model.scripted_mode == mode and model.spec == f"scripted/{mode}"
    assert Model.scripted(mode) == model


@pytest.mark.parametrize("spec, says", [
    ("", "No model was given"), ("   ", "No model was given"),
    ("scripted/bogus", "Unknown scripted model 'scripted/bogus'"), ("scripted/", "Unknown scripted model"),
    ("scripted", "Unknown scripted model"),
])
def test_a_bad_name_is_one_sentence(spec, says):
    with pytest.raises(ValueError, match=re.escape(says)) as caught:
        Model.parse(spec)
    assert "\n" not in str(caught.value) and str(caught.value).endswith(".")


def test_the_model_is_frozen_and_none_is_falsy():
    model = Model.parse("openai/gpt-4o")
    with pytest.raises(dataclasses.FrozenInstanceError):
        model.spec = "x"  # type: ignore[misc]
    assert model and not Model.none() and Model.none().spec == ""


def test_a_configured_upstream_is_a_provider_in_the_gateway(monkeypatch):
    local = Upstream("local", "http://127.0.0.1:9/v1", "LOCAL_KEY")
    model = parse_model("local/llama-3", [local])
    assert (model.provider, model.upstream_name) == ("local", "llama-3")
    assert resolve(model, [local]) is local
    assert Model.parse("local/llama-3").provider == OPENROUTER  # without it: an OpenRouter name
    monkeypatch.delenv("LOCAL_KEY", raising=False)
    with pytest.raises(ValueError, match="LOCAL_KEY is not set"):
        check_upstream(model, [local])
    check_upstream(Model.parse("scripted/hang"))  # the scripted model needs no key


def test_the_judge_goes_to_openrouter_as_released():
    def judge(name: str) -> str:
        return WildOptions(Path("."), judge_model=name).judge_gateway_model.spec

    assert judge("scripted") == judge("scripted/gold") == judge("scripted/other") == "scripted/judge"
    assert judge("openrouter/openai/gpt-4o") == "openrouter/openai/gpt-4o"
    assert judge("openai/gpt-4o") == "openrouter/openai/gpt-4o"
    assert judge("z-ai/glm-5.1") == "openrouter/z-ai/glm-5.1"


def test_run_config_holds_the_parsed_model(tmp_path):
    cfg = RunConfig("r", tmp_path, "claude-code", "anthropic/claude-x")  # a str (run.json, by hand) is parsed
    assert cfg.model == Model.parse("anthropic/claude-x") and cfg.model_label == "claude-code/anthropic/claude-x"
    assert RunConfig("r", tmp_path, "oracle", "").model == Model.none()
    with pytest.raises(ValueError, match="Unknown scripted model"):
        RunConfig("r", tmp_path, "oracle", "scripted/nope")


SCRIPTED_NAME = re.compile(r"scripted/\w*")  # the bare word is also a registration's JSON key


def scripted_literals(root: Path) -> list[str]:
    """Every string constant of the package's code that is the scripted prefix or a scripted model's name (a whole
    constant, or a piece of an f-string), outside pytest_clawswe/model.py; messages that mention one are prose."""
    found = []
    for path in sorted(root.rglob("*.py")):
        if path == root / "model.py" or "data" in path.relative_to(root).parts:
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and SCRIPTED_NAME.fullmatch(node.value):
                found.append(f"{path.relative_to(root)}:{node.lineno}: {node.value!r}")
    return found


def test_no_scripted_name_is_spelled_outside_the_model_module(tmp_path):
    assert scripted_literals(PACKAGE) == []
    (tmp_path / "model.py").write_text('SCRIPTED = "scripted"\n')  # the home may spell it
    (tmp_path / "elsewhere.py").write_text('a = "scripted/gold"\nb = f"scripted/{a}"\nc = "scripted/gold is slow"\n')
    assert [line.split(": ")[1] for line in scripted_literals(tmp_path)] == ["'scripted/gold'", "'scripted/'"]
