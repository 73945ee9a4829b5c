"""What a model call costs and how big a model's context window is, from the built-in tables or settings."""

from __future__ import annotations

import pytest

from acp_hermes.config import Price, Settings
from acp_hermes.model.pricing import (
    DEFAULT_CONTEXT_WINDOW,
    LEGACY_CONTEXT_WINDOW,
    context_window,
    cost_usd,
    price_of,
)
from acp_hermes.model.types import Usage

MILLION = 1_000_000
PLAIN = Price(input=3, output=15)  # cache prices derived from the input price


@pytest.mark.parametrize(("usage", "ttl", "expected"), [
    (Usage(), "5m", 0.0),
    (Usage(input_tokens=MILLION), "5m", 3.0),
    (Usage(output_tokens=MILLION), "5m", 15.0),
    (Usage(cache_read_tokens=MILLION), "5m", 0.3),  # 0.1x input
    (Usage(cache_write_tokens=MILLION), "5m", 3.75),  # 1.25x input
    (Usage(cache_write_tokens=MILLION), "1h", 6.0),  # 2x input
    (Usage(cache_read_tokens=MILLION), "1h", 0.3),  # reads do not depend on the TTL
    (Usage(1000, 2000, 3000, 4000), "5m", (1000 * 3 + 2000 * 15 + 3000 * 0.3 + 4000 * 3.75) / MILLION),
])
def test_cost_adds_every_kind_of_token_at_its_price(usage: Usage, ttl: str, expected: float) -> None:
    assert cost_usd(usage, PLAIN, ttl) == pytest.approx(expected)


@pytest.mark.parametrize(("usage", "ttl", "expected"), [
    (Usage(cache_read_tokens=MILLION), "5m", 0.5),
    (Usage(cache_write_tokens=MILLION), "5m", 4.0),
    (Usage(cache_write_tokens=MILLION), "1h", 7.0),
])
def test_stated_cache_prices_win_over_the_derived_ones(usage: Usage, ttl: str, expected: float) -> None:
    price = Price(input=3, output=15, cache_read=0.5, cache_write_5m=4, cache_write_1h=7)
    assert cost_usd(usage, price, ttl) == pytest.approx(expected)


def test_a_stated_5m_write_price_does_not_apply_to_1h_writes() -> None:
    price = Price(input=3, output=15, cache_write_5m=4)
    assert cost_usd(Usage(cache_write_tokens=MILLION), price, "1h") == pytest.approx(6.0)


def test_the_default_ttl_is_five_minutes() -> None:
    assert cost_usd(Usage(cache_write_tokens=MILLION), PLAIN) == pytest.approx(3.75)


def test_the_cost_of_a_sum_of_usages_is_the_sum_of_their_costs() -> None:
    first, second = Usage(10, 20, 30, 40), Usage(1, 2, 3, 4)
    assert cost_usd(first + second, PLAIN) == pytest.approx(cost_usd(first, PLAIN) + cost_usd(second, PLAIN))


@pytest.mark.parametrize(("model", "expected"), [
    ("claude-sonnet-4-5", Price(input=3, output=15)),
    ("claude-haiku-4-5-20251001", Price(input=1, output=5)),  # dated snapshots share the price
    ("claude-fable-5-2", Price(input=10, output=50, cache_read=0.25)),
])
def test_known_models_have_list_prices(model: str, expected: Price) -> None:
    assert price_of(model, Settings()) == expected


@pytest.mark.parametrize("model", [
    "gpt-9",
    "claude-sonnet-4-5-preview",
    "claude-haiku-4-5-2025100",  # seven digits: not a snapshot date
    "my-local-model",
    "",
])
def test_unknown_models_have_no_price(model: str) -> None:
    assert price_of(model, Settings()) is None


def test_settings_override_and_extend_the_price_table() -> None:
    mine = Price(input=0.5, output=1)
    settings = Settings(prices={"claude-sonnet-4-5": mine, "my-local-model": mine})
    assert price_of("claude-sonnet-4-5", settings) == mine
    assert price_of("my-local-model", settings) == mine
    assert price_of("claude-opus-4-5", settings) == Price(input=5, output=25)


@pytest.mark.parametrize(("model", "expected"), [
    ("claude-sonnet-4-5", 200_000),
    ("claude-haiku-4-5-20251001", 200_000),
    ("claude-opus-4-6", DEFAULT_CONTEXT_WINDOW),
    ("claude-opus-4-6-20260101", DEFAULT_CONTEXT_WINDOW),
    ("some-unknown-model", LEGACY_CONTEXT_WINDOW),
])
def test_context_windows(model: str, expected: int) -> None:
    assert context_window(model, Settings()) == expected


def test_settings_override_context_windows() -> None:
    settings = Settings(context_windows={"claude-sonnet-4-5": 64_000, "mine": 32_000})
    assert context_window("claude-sonnet-4-5", settings) == 64_000
    assert context_window("mine", settings) == 32_000


@pytest.mark.parametrize("bad", [{"input": -1, "output": 1}, {"input": 1, "output": 1, "cache_read": -0.1},
                                 {"input": 1, "output": 1, "surprise": 2}])
def test_a_price_refuses_negative_or_unknown_fields(bad: dict[str, float]) -> None:
    with pytest.raises(ValueError):  # pydantic's ValidationError is a ValueError
        Price(**bad)
