import json
import warnings

import genai_prices
import pytest

from pytest_clawswe.prices import Price, PriceBook, PriceFileError, UnknownPriceWarning, load_price_file
from pytest_clawswe.swe.paths import PUBLISHED_RESULTS
from pytest_clawswe.usage import Usage


def library_price(model_ref: str, provider_id: str):
    """The genai-prices entry itself, to check our arithmetic against the library's data."""
    return genai_prices.calc_price(genai_prices.Usage(input_tokens=1), model_ref, provider_id=provider_id).model_price


def test_cache_reads_and_writes_are_billed_at_their_own_price():
    book = PriceBook()
    price = library_price("claude-opus-4-7", "anthropic")
    usage = Usage(requests=1, input_tokens=1_000_000, output_tokens=1_000_000,
                  cache_read_tokens=1_000_000, cache_write_tokens=1_000_000)
    expected = price.input_mtok + price.output_mtok + price.cache_read_mtok + price.cache_write_mtok
    assert book.cost_usd(usage, "anthropic/claude-opus-4-7") == pytest.approx(float(expected))
    # a cache read is cheaper than the same tokens uncached
    cached = Usage(requests=1, input_tokens=0, cache_read_tokens=1_000_000)
    uncached = Usage(requests=1, input_tokens=1_000_000)
    assert book.cost_usd(cached, "anthropic/claude-opus-4-7") < book.cost_usd(uncached, "anthropic/claude-opus-4-7")


def test_a_known_provider_prefix_prices_with_that_provider():
    usage = Usage(requests=1, input_tokens=500_000, output_tokens=10_000, cache_read_tokens=200_000)
    price = library_price("z-ai/glm-5.1", "openrouter")
    expected = (500_000 * price.input_mtok + 10_000 * price.output_mtok + 200_000 * price.cache_read_mtok) / 10**6
    assert PriceBook().cost_usd(usage, "openrouter/z-ai/glm-5.1") == pytest.approx(float(expected))


def test_tiers_are_chosen_by_request_size_not_by_the_run_total():
    book = PriceBook()
    one = Usage(requests=1, input_tokens=100_000, output_tokens=1_000)
    hundred = Usage(requests=100, input_tokens=100 * 100_000, output_tokens=100 * 1_000)
    # gpt-5.5 has a higher tier above some prompt size; 10M tokens in one request would hit it
    assert book.cost_usd(hundred, "openai/gpt-5.5") == pytest.approx(100 * book.cost_usd(one, "openai/gpt-5.5"))
    as_one_request = Usage(requests=1, input_tokens=hundred.input_tokens, output_tokens=hundred.output_tokens)
    assert book.cost_usd(as_one_request, "openai/gpt-5.5") > book.cost_usd(hundred, "openai/gpt-5.5")


def test_unknown_model_costs_none_and_warns_once():
    book = PriceBook()
    usage = Usage(requests=3, input_tokens=1000, output_tokens=100)
    with pytest.warns(UnknownPriceWarning, match="no-such-model") as record:
        assert book.cost_usd(usage, "acme/no-such-model") is None
        assert book.cost_usd(usage, "acme/no-such-model") is None
    assert len(record) == 1


def test_scripted_model_is_free_and_silent():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert PriceBook().cost_usd(Usage(requests=5, input_tokens=10_000, output_tokens=500), "scripted/gold") == 0.0


def test_override_file_adds_and_overrides_models(tmp_path):
    path = tmp_path / "prices.yaml"
    path.write_text("my-model: {input: 2, output: 10, cache_read: 0.5, cache_write: 4}\n"
                    "anthropic/claude-opus-4-7: {input: 1, output: 1}\n")
    book = PriceBook.from_file(path)
    usage = Usage(requests=2, input_tokens=1_000_000, output_tokens=100_000, cache_read_tokens=2_000_000,
                  cache_write_tokens=500_000)
    assert book.cost_usd(usage, "my-model") == pytest.approx(2 + 1 + 1 + 2)
    # without cache prices, cached tokens are billed at the input price
    assert book.cost_usd(usage, "anthropic/claude-opus-4-7") == pytest.approx(3.5 + 0.1)


def test_an_entry_under_the_given_name_prices_the_model_served_through_openrouter():
    """WildClawBench's judge `openai/gpt-5.4` is served (and recorded) as openrouter/openai/gpt-5.4, as an agent's
    `--model z-ai/glm-5.1` is OpenRouter's z-ai/glm-5.1: a --prices entry under the name the user gave prices it, for
    any model, in the lookup itself; the full name's own entry wins."""
    usage = Usage(requests=1, input_tokens=1_000_000, output_tokens=100_000)
    book = PriceBook({"openai/gpt-5.4": Price(input=2, output=10), "z-ai/glm-5.1": Price(input=1, output=1)})
    assert book.cost_usd(usage, "openrouter/openai/gpt-5.4") == pytest.approx(2 + 1)
    assert book.cost_usd(usage, "openai/gpt-5.4") == pytest.approx(2 + 1)
    assert book.cost_usd(usage, "openrouter/z-ai/glm-5.1") == pytest.approx(1 + 0.1)
    both = PriceBook({"openai/gpt-5.4": Price(input=2, output=10), "openrouter/openai/gpt-5.4": Price(input=1, output=1)})
    assert both.cost_usd(usage, "openrouter/openai/gpt-5.4") == pytest.approx(1 + 0.1)
    # the other way round is another provider's bill: OpenRouter's entry does not price OpenAI's own API
    other = PriceBook({"openrouter/openai/gpt-5.4": Price(input=0, output=0)})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UnknownPriceWarning)
        assert other.cost_usd(usage, "openai/gpt-5.4") != 0.0


def test_json_override_file(tmp_path):
    path = tmp_path / "prices.json"
    path.write_text(json.dumps({"m": {"input": 1.5, "output": 3}}))
    assert load_price_file(path) == {"m": Price(1.5, 3.0)}


@pytest.mark.parametrize("text, message", [
    ("m: {input: 1}", "at least `input` and `output`"),
    ("m: {input: 1, output: 2, cached: 3}", "unknown keys"),
    ("m: {input: one, output: 2}", "must be numbers"),
    ("m: {input: -1, output: 2}", "negative"),
    ("- m", "map model names"),
])
def test_bad_override_file_says_what_to_fix(tmp_path, text, message):
    path = tmp_path / "prices.yaml"
    path.write_text(text)
    with pytest.raises(PriceFileError, match=message):
        load_price_file(path)


def test_missing_override_file(tmp_path):
    with pytest.raises(PriceFileError, match="cannot read"):
        PriceBook.from_file(tmp_path / "nope.yaml")


def test_matches_zeroclaw_static_pricing_formula():
    """zeroclaw bills (input - cache_read) at the input price, where its input includes cache reads;
    our input_tokens is the uncached part, so the two must agree on the same per-token prices."""
    table = json.loads(PUBLISHED_RESULTS.read_text())["zeroclaw_static_pricing_usd_per_token"]
    per_token = table["z-ai/glm-5.1"]
    book = PriceBook({"glm": Price(**{k: v * 1e6 for k, v in per_token.items()})})
    total_input, cache_read, output = 2_000_000, 1_500_000, 40_000
    zeroclaw = ((total_input - cache_read) * per_token["input"] + cache_read * per_token["cache_read"]
                + output * per_token["output"])
    ours = Usage(requests=10, input_tokens=total_input - cache_read, cache_read_tokens=cache_read,
                 output_tokens=output)
    assert book.cost_usd(ours, "glm") == pytest.approx(zeroclaw)
