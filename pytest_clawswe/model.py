"""The run's model: what `--model` names, parsed once (Model.parse) into the provider it goes to and the name that
provider knows, or the scripted model's mode.

    openrouter/z-ai/glm-5.1   provider openrouter, forwarded as z-ai/glm-5.1
    z-ai/glm-5.1              no known provider prefix: openrouter, forwarded unchanged
    anthropic/claude-x        provider anthropic, forwarded as claude-x
    scripted/gold             the scripted model (gold, noop, hang; judge and vision for WildClawBench's tools)

Everything downstream reads the fields; what crosses a process boundary (the gateway's registration, result files,
a harness's own config) carries `spec`, the text the user wrote, and the other side parses it again. The providers'
URLs and keys are the gateway's business (gateway/upstream/providers.py); only their names are here.
"""
from __future__ import annotations

from dataclasses import dataclass

SCRIPTED = "scripted"  # the provider name of the model the gateway plays itself
# the scripted model's modes: gold/noop/hang play a harness's turns (gateway/scripted/responder.py), judge and vision
# answer WildClawBench's judge and vision tool from fixtures (gateway/scripted/solutions.py)
GOLD, NOOP, HANG, JUDGE, VISION = "gold", "noop", "hang", "judge", "vision"
SCRIPTED_MODES = (GOLD, NOOP, HANG, JUDGE, VISION)
NO_MODEL = "No model was given: pass --model, e.g. --model scripted/gold or --model openrouter/<model>."
OPENROUTER = "openrouter"  # where a name with no known provider prefix goes (as the released runners did)
BUILTIN_PROVIDERS = (OPENROUTER, "openai", "anthropic", "dashscope", "deepseek")


def names_scripted(text: str) -> bool:
    """`text` is the scripted model's prefix or any name under it (checked or not: WildClawBench's --judge-model
    takes `scripted` and every scripted/ name as the scripted judge)."""
    return text.strip().partition("/")[0] == SCRIPTED


@dataclass(frozen=True)
class Model:
    spec: str  # what the user wrote, e.g. openrouter/z-ai/glm-5.1; "" for a run without a model
    provider: str  # the upstream's name (openrouter, anthropic, ... or a configured one), or "scripted"
    upstream_name: str  # the name forwarded to the provider; a scripted model's mode

    @classmethod
    def parse(cls, text: str, providers: tuple[str, ...] | list[str] = ()) -> Model:
        """The model `text` names; `providers` are configured upstreams' names beside the built-in ones. Raises
        ValueError (one sentence) for an empty name or an unknown scripted mode."""
        spec = text.strip()
        if not spec:
            raise ValueError(NO_MODEL)
        prefix, _, rest = spec.partition("/")
        if prefix == SCRIPTED:
            if rest not in SCRIPTED_MODES:
                raise ValueError(f"Unknown scripted model {spec!r}: use scripted/gold, scripted/noop or scripted/hang.")
            return cls(spec, SCRIPTED, rest)
        if rest and prefix in (*providers, *BUILTIN_PROVIDERS):
            return cls(spec, prefix, rest)
        return cls(spec, OPENROUTER, spec)  # no known prefix: OpenRouter, the name unchanged

    @classmethod
    def scripted(cls, mode: str) -> Model:
        return cls.parse(f"{SCRIPTED}/{mode}")

    @classmethod
    def none(cls) -> Model:
        """No model: a harness that needs none (oracle, nop) or a run that only collects."""
        return cls("", "", "")

    def __bool__(self) -> bool:
        return bool(self.spec)

    @property
    def is_scripted(self) -> bool:
        return self.provider == SCRIPTED

    @property
    def scripted_mode(self) -> str:
        """gold, noop, hang, judge or vision; "" for a real model."""
        return self.upstream_name if self.is_scripted else ""

    def routed_to(self, provider: str) -> Model:
        """The same model sent through `provider`: itself when its spec names that provider (or it is scripted),
        else `provider/spec` (WildClawBench's judge goes to OpenRouter whatever its name, as released)."""
        if self.is_scripted or (self.provider == provider and self.spec != self.upstream_name):
            return self
        return Model.parse(f"{provider}/{self.spec}")
