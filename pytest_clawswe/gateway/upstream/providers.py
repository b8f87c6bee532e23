"""Where a model's requests go: provider routes by model-name prefix, and the real API keys.

    openrouter/<model>   https://openrouter.ai/api/v1   OPENROUTER_API_KEY  (also: a name with no known prefix)
    openai/<model>       $OPENAI_BASE_URL or https://api.openai.com/v1   OPENAI_API_KEY
    anthropic/<model>    $ANTHROPIC_BASE_URL or https://api.anthropic.com, + /v1   ANTHROPIC_API_KEY (x-api-key)
    dashscope/<model>    $DASHSCOPE_BASE_URL or DashScope's international compatible-mode URL   DASHSCOPE_API_KEY
    deepseek/<model>     $DEEPSEEK_BASE_URL or https://api.deepseek.com/v1   DEEPSEEK_API_KEY
    <name>/<model>       any upstream configured with Upstream(name, base_url, key_env, auth)
    scripted/gold|noop|hang   the scripted model, served by the gateway itself

The name is parsed once into a Model (pytest_clawswe/model.py); here a parsed Model finds its Upstream.

Keys are read from the gateway process's environment when a request is forwarded; they never
leave the host: not in the container, not in the gateway's files or logs. The harness's wire
protocol is forwarded as is (base_url + /chat/completions, /responses or /messages), so the
upstream must speak the protocol the harness speaks.
"""
from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass

from pytest_clawswe.model import Model

OPENROUTER_URL = "https://openrouter.ai/api/v1"
DASHSCOPE_URL = "https://dashscope-intl.aliyuncs.com/compatible-mode/v1"


@dataclass(frozen=True)
class Upstream:
    name: str  # the model prefix that selects it
    base_url: str  # including the version segment, e.g. https://host/v1
    key_env: str  # environment variable holding the key
    auth: str = "bearer"  # "bearer" (Authorization header) or "x-api-key" (Anthropic)

    def __post_init__(self) -> None:
        if self.auth not in ("bearer", "x-api-key"):
            raise ValueError(f"upstream {self.name!r}: auth must be 'bearer' or 'x-api-key', not {self.auth!r}")

    @classmethod
    def from_spec(cls, spec: str) -> "Upstream":
        """Parse NAME=BASE_URL,KEY_ENV[,x-api-key] (the form a command-line option can take)."""
        name, _, rest = spec.partition("=")
        parts = [p.strip() for p in rest.split(",")]
        if not name.strip() or len(parts) not in (2, 3) or not all(parts):
            raise ValueError(f"bad upstream {spec!r}: expected NAME=BASE_URL,KEY_ENV[,x-api-key]")
        return cls(name.strip(), parts[0].rstrip("/"), parts[1], *parts[2:])

    def key(self) -> str:
        return os.environ.get(self.key_env, "").strip()

    def auth_headers(self) -> dict[str, str]:
        if self.auth == "x-api-key":
            return {"x-api-key": self.key()}
        return {"Authorization": f"Bearer {self.key()}"}


def builtin_upstreams() -> list[Upstream]:
    anthropic = os.environ.get("ANTHROPIC_BASE_URL", "https://api.anthropic.com").rstrip("/")
    return [
        Upstream("openrouter", os.environ.get("OPENROUTER_BASE_URL", OPENROUTER_URL).rstrip("/"),
                 "OPENROUTER_API_KEY"),
        Upstream("openai", os.environ.get("OPENAI_BASE_URL", "https://api.openai.com/v1").rstrip("/"),
                 "OPENAI_API_KEY"),
        Upstream("anthropic", anthropic if anthropic.endswith("/v1") else anthropic + "/v1",
                 "ANTHROPIC_API_KEY", "x-api-key"),
        # the paper's other providers (their OpenAI-compatible endpoints; see gateway/upstream/shaping.py)
        Upstream("dashscope", os.environ.get("DASHSCOPE_BASE_URL", DASHSCOPE_URL).rstrip("/"), "DASHSCOPE_API_KEY"),
        Upstream("deepseek", os.environ.get("DEEPSEEK_BASE_URL", "https://api.deepseek.com/v1").rstrip("/"),
                 "DEEPSEEK_API_KEY"),
    ]


def parse_model(spec: str, upstreams: list[Upstream] | tuple = ()) -> Model:
    """The Model a registration names (the gateway's boundary: its spec comes from outside the process), with
    the configured upstreams' names known as providers beside the built-in ones."""
    return Model.parse(spec, [u.name for u in upstreams])


def resolve(model: Model, upstreams: list[Upstream] | tuple = ()) -> Upstream:
    """The upstream serving a real model (configured ones win over the built-ins of the same name)."""
    for up in [*upstreams, *builtin_upstreams()]:
        if up.name == model.provider:
            return up
    raise ValueError(f"no upstream is configured for {model.spec}: give one named {model.provider!r}")


KEYLESS = "run with --model scripted/gold to check the harness without a key"


def check_upstream(model: Model, upstreams: list[Upstream] | tuple = (), keyless: str = "") -> None:
    """Raise ValueError (one sentence) when the provider's key is missing: the runner calls this before
    starting anything (the name itself was checked when it was parsed). `keyless` says how to go without one
    (default: the scripted agent model)."""
    if model.is_scripted:
        return
    up = resolve(model, upstreams)
    if not up.key():
        raise ValueError(
            f"{up.key_env} is not set, and the model gateway needs it to forward {model.spec} to {up.name} "
            f"({up.base_url}); export it, or {keyless or KEYLESS}."
        )


def upstreams_to_json(upstreams) -> str:
    return json.dumps([asdict(u) for u in upstreams])


def upstreams_from_json(text: str) -> list[Upstream]:
    return [Upstream(**u) for u in json.loads(text or "[]")]
