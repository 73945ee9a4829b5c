"""What a model costs and how much it can hold.

Published list prices in USD per million tokens (platform.claude.com pricing, November 2026).
Cache writes cost 1.25x (5-minute TTL) or 2x (1-hour TTL) the input price, cache reads 0.1x,
unless a model states otherwise. ``Settings.prices`` and ``Settings.context_windows`` override
or extend these tables, e.g. for models behind a compatible endpoint.
"""

from __future__ import annotations

from acp_hermes.config import Price, Settings
from acp_hermes.model.types import Usage

_PRICES: dict[str, Price] = {
    "claude-fable-5-2": Price(input=10, output=50, cache_read=0.25),
    "claude-fable-5-1": Price(input=10, output=50, cache_read=0.25),
    "claude-fable-5": Price(input=10, output=50),
    "claude-mythos-5-2": Price(input=10, output=50, cache_read=0.25),
    "claude-mythos-5-1": Price(input=10, output=50, cache_read=0.25),
    "claude-mythos-5": Price(input=10, output=50),
    "claude-opus-5-5": Price(input=4, output=20),
    "claude-opus-5": Price(input=5, output=25),
    "claude-opus-4-8": Price(input=5, output=25),
    "claude-opus-4-7": Price(input=5, output=25),
    "claude-opus-4-6": Price(input=5, output=25),
    "claude-opus-4-5": Price(input=5, output=25),
    "claude-sonnet-5-5": Price(input=2, output=10),
    "claude-sonnet-5": Price(input=2, output=10),
    "claude-sonnet-4-6": Price(input=3, output=15),
    "claude-sonnet-4-5": Price(input=3, output=15),
    "claude-haiku-5-5": Price(input=0.10, output=0.50),
    "claude-haiku-4-5": Price(input=1, output=5),
}

_WINDOWS: dict[str, int] = {
    "claude-opus-4-5": 200_000,
    "claude-sonnet-4-5": 200_000,
    "claude-haiku-4-5": 200_000,
}
DEFAULT_CONTEXT_WINDOW = 1_000_000
LEGACY_CONTEXT_WINDOW = 200_000


def _base_name(model: str) -> str:
    """``claude-haiku-4-5-20251001`` → ``claude-haiku-4-5``: dated snapshots share a price."""
    head, _, tail = model.rpartition("-")
    return head if tail.isdigit() and len(tail) == 8 else model


def price_of(model: str, settings: Settings) -> Price | None:
    if model in settings.prices:
        return settings.prices[model]
    return _PRICES.get(_base_name(model))


def context_window(model: str, settings: Settings) -> int:
    if model in settings.context_windows:
        return settings.context_windows[model]
    base = _base_name(model)
    if base in _WINDOWS:
        return _WINDOWS[base]
    return DEFAULT_CONTEXT_WINDOW if base in _PRICES else LEGACY_CONTEXT_WINDOW


WEB_SEARCH_USD = 0.01  # the API's price of one web search ($10 per 1,000); a fetch costs only its tokens


def cost_usd(usage: Usage, price: Price, cache_ttl: str = "5m") -> float:
    write_factor = 2.0 if cache_ttl == "1h" else 1.25
    if cache_ttl == "1h" and price.cache_write_1h is not None:
        write_price = price.cache_write_1h
    elif cache_ttl != "1h" and price.cache_write_5m is not None:
        write_price = price.cache_write_5m
    else:
        write_price = price.input * write_factor
    read_price = price.cache_read if price.cache_read is not None else price.input * 0.1
    total = (
        usage.input_tokens * price.input
        + usage.output_tokens * price.output
        + usage.cache_write_tokens * write_price
        + usage.cache_read_tokens * read_price
    )
    return total / 1_000_000 + usage.web_searches * WEB_SEARCH_USD
