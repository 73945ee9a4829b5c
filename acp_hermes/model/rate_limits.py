"""The API's rate limits as its response headers state them (``anthropic-ratelimit-*``).

Anthropic answers every Messages request, and its 429s, with the limits of the organisation that
sent it: for requests, tokens, input tokens and output tokens, a ``-limit``, what ``-remaining``
and when the window ``-reset``s (RFC 3339). They are the only word the agent has on how close it is
to being refused, so the core passes them on to an editor that shows quotas. Plain header reading:
nothing here imports the SDK.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from acp_hermes_memory.values import value

PREFIX = "anthropic-ratelimit-"
# The limits Anthropic states, by the name in its headers, with the unit they count.
KINDS: dict[str, str] = {"requests": "requests", "tokens": "tokens", "input-tokens": "tokens",
                         "output-tokens": "tokens"}


@value
class RateLimit:
    """One limit of the API as the last response stated it: ``remaining`` of ``limit`` until ``resets_at``."""

    name: str  # "requests", "tokens", "input-tokens" or "output-tokens"
    unit: str
    limit: int
    remaining: int
    resets_at: str | None  # RFC 3339, as sent; None when the header was missing


def rate_limits(headers: Mapping[str, str] | Any) -> tuple[RateLimit, ...]:
    """The limits stated in ``headers`` (a mapping with ``get``; names case-insensitive as httpx's are);
    a limit whose ``-limit`` or ``-remaining`` is missing or not a whole number is left out."""
    if headers is None:
        return ()
    found = []
    for name, unit in KINDS.items():
        limit, remaining = _count(headers, f"{PREFIX}{name}-limit"), _count(headers, f"{PREFIX}{name}-remaining")
        if limit is None or remaining is None or limit <= 0:
            continue
        reset = headers.get(f"{PREFIX}{name}-reset")
        found.append(RateLimit(name, unit, limit, min(max(remaining, 0), limit),
                               reset if isinstance(reset, str) and reset else None))
    return tuple(found)


def _count(headers: Any, name: str) -> int | None:
    raw = headers.get(name)
    try:
        return int(raw) if isinstance(raw, str) and raw.strip() else None
    except ValueError:
        return None
