"""Model prices: what a run's token usage cost in USD.

Prices come from genai-prices, a maintained library that ships its price data (per provider, with
cache-read/write prices, tiers and price changes over time); nothing is fetched at run time.
A `--prices FILE` (YAML or JSON) overrides or adds models, in USD per million tokens::

    openrouter/z-ai/glm-5.1: {input: 0.98, output: 3.08, cache_read: 0.182}
    my-local-model: {input: 0, output: 0}

A model found nowhere costs None ("unknown") and gives one warning per model: never a silent 0.
Model names are the run's `--model` (`provider/model`, e.g. `openrouter/z-ai/glm-5.1`); a model at OpenRouter is
also found under the name OpenRouter knows it by (`z-ai/glm-5.1`; a judge sent to OpenRouter: the name given).
"""
from __future__ import annotations

import json
import warnings
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import genai_prices
import yaml
from genai_prices.data_snapshot import find_provider_by_id, get_snapshot

from pytest_clawswe.errors import UserError
from pytest_clawswe.model import OPENROUTER, SCRIPTED
from pytest_clawswe.usage import Usage

PER = 1_000_000  # override prices are per million tokens, as providers publish them
# providers that are stand-ins served by the gateway itself: known to cost nothing
FREE_PROVIDERS = (SCRIPTED,)
PRICE_KEYS = ("input", "output", "cache_read", "cache_write")


class UnknownPriceWarning(UserWarning):
    """A model has no price: its cost is reported as unknown."""


class PriceFileError(UserError, ValueError):
    """A `--prices` file that cannot be used; the message says what to fix."""


@dataclass(frozen=True)
class Price:
    """USD per million tokens. A missing cache price bills those tokens at the input price."""

    input: float
    output: float
    cache_read: float | None = None
    cache_write: float | None = None

    def cost(self, usage: Usage) -> float:
        cache_read = self.input if self.cache_read is None else self.cache_read
        cache_write = self.input if self.cache_write is None else self.cache_write
        return (
            usage.input_tokens * self.input
            + usage.output_tokens * self.output
            + usage.cache_read_tokens * cache_read
            + usage.cache_write_tokens * cache_write
        ) / PER


def load_price_file(path: str | Path) -> dict[str, Price]:
    """Read a `--prices` file: a mapping model -> {input, output[, cache_read, cache_write]}."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise PriceFileError(f"cannot read the prices file {path}: {exc.strerror}") from exc
    try:
        data = json.loads(text) if path.suffix == ".json" else yaml.safe_load(text)
    except (json.JSONDecodeError, yaml.YAMLError) as exc:
        raise PriceFileError(f"the prices file {path} is not valid {path.suffix[1:] or 'YAML'}: {exc}") from exc
    if not isinstance(data, dict):
        raise PriceFileError(f"the prices file {path} must map model names to prices")
    prices = {}
    for model, entry in data.items():
        if not isinstance(entry, dict) or not {"input", "output"} <= entry.keys():
            raise PriceFileError(f"give {model!r} in {path} at least `input` and `output` (USD per million tokens)")
        unknown = entry.keys() - set(PRICE_KEYS)
        if unknown:
            raise PriceFileError(
                f"{model!r} in {path} has unknown keys {sorted(unknown)}; use {', '.join(PRICE_KEYS)}"
            )
        try:
            values = {k: None if entry.get(k) is None else float(entry[k]) for k in PRICE_KEYS}
        except (TypeError, ValueError) as exc:
            raise PriceFileError(f"prices of {model!r} in {path} must be numbers") from exc
        if any(v is not None and v < 0 for v in values.values()):
            raise PriceFileError(f"prices of {model!r} in {path} must not be negative")
        prices[str(model)] = Price(**values)
    return prices


class PriceBook:
    """Prices for the models of a run: the override file first, then genai-prices."""

    def __init__(self, overrides: dict[str, Price] | None = None):
        self.overrides = dict(overrides or {})
        self._warned: set[str] = set()

    @classmethod
    def from_file(cls, path: str | Path | None) -> "PriceBook":
        return cls(load_price_file(path) if path else None)

    def cost_usd(self, usage: Usage, model: str, at: datetime | None = None) -> float | None:
        """USD cost of `usage` on `model` (at time `at`, default now), or None if the price is unknown.

        Tiered prices depend on the size of one request, so give the usage of one request when you
        have it; an aggregate over N requests is priced as N requests of the mean size.
        """
        given = self._override(model)
        if given is not None:
            return given.cost(usage)
        if model.split("/", 1)[0] in FREE_PROVIDERS:
            return 0.0
        if usage == Usage():
            return 0.0
        cost = _library_cost(usage, model, at)
        if cost is None and model not in self._warned:
            self._warned.add(model)
            warnings.warn(
                f"no price known for model {model!r}: its cost is reported as unknown; "
                f"add it to a --prices file (USD per million tokens)",
                UnknownPriceWarning,
                stacklevel=2,
            )
        return cost

    def _override(self, model: str) -> Price | None:
        """The --prices entry for `model`: under its own name, else, for a model at OpenRouter, under the name
        OpenRouter knows it by (the name the user gave: a judge `openai/gpt-5.4` sent to OpenRouter is served and
        recorded as openrouter/openai/gpt-5.4). Never the other way: OpenRouter's price is not another provider's."""
        provider, _, rest = model.partition("/")
        for name in (model, rest if provider == OPENROUTER and "/" in rest else None):
            if name is not None and name in self.overrides:
                return self.overrides[name]
        return None


def _library_cost(usage: Usage, model: str, at: datetime | None) -> float | None:
    requests = max(usage.requests, 1)
    # genai-prices counts cache reads and writes inside input_tokens; our input_tokens is the uncached rest
    mean_request = genai_prices.Usage(
        input_tokens=(usage.input_tokens + usage.cache_read_tokens + usage.cache_write_tokens) / requests,
        output_tokens=usage.output_tokens / requests,
        cache_read_tokens=usage.cache_read_tokens / requests,
        cache_write_tokens=usage.cache_write_tokens / requests,
    )
    for ref, provider_id in _lookups(model):
        try:
            calc = genai_prices.calc_price(mean_request, ref, provider_id=provider_id, genai_request_timestamp=at)
        except LookupError:
            continue
        return float(calc.total_price) * requests
    return None


def _lookups(model: str) -> list[tuple[str, str | None]]:
    """(model_ref, provider_id) pairs to try: `provider/rest` within that provider only, else by name."""
    provider, _, rest = model.partition("/")
    if rest and find_provider_by_id(get_snapshot().providers, provider):
        # the provider is known: a price from another provider would be the wrong bill
        return [(rest, provider)]
    return [(model, None), (model.rsplit("/", 1)[-1], None)]


_default_book = PriceBook()


def cost_usd(usage: Usage, model: str, at: datetime | None = None) -> float | None:
    """Cost from the library prices alone (no override file); None if unknown."""
    return _default_book.cost_usd(usage, model, at)
