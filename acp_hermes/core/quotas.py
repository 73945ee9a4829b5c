"""The limits a session works under, as meters an editor can show: the model API's rate limits
(from its last response's headers, ``model.rate_limits``) and the user's budgets (``core.budget``).

Two pools: ``anthropic`` (requests and tokens a minute, shared by every session of the API key, so
the last response of any session's call here is the latest word) and ``budget`` (one meter per limit
the user set: dollars this session, dollars this turn, tokens this session). The session emits
``QuotaChanged`` after each model call and each refused one; what an editor is shown of it, if
anything, is the adapter's business. A turn that a limit ends (a budget, a 429 with no retry left)
says which in a ``QuotaExceeded`` (``core.turn_report``).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Literal

from acp_hermes.core.budget import LIMIT_NAMES
from acp_hermes.core.events import EventSink, QuotaChanged, QuotaMeter, QuotaPool
from acp_hermes_memory.values import value

if TYPE_CHECKING:
    from acp_hermes.core.budget import Budget, LimitName
    from acp_hermes.model.rate_limits import RateLimit

API_POOL = "anthropic"
BUDGET_POOL = "budget"
WARN_SHARE = 0.8  # of a limit, where a meter's status turns to "warning"

_BUDGET_METERS: dict[str, tuple[str, str, str]] = {  # limit -> (title, unit, window)
    "session_usd": ("Session budget", "usd", "session"),
    "turn_usd": ("Turn budget", "usd", "turn"),
    "session_tokens": ("Session token budget", "tokens", "session"),
}
_API_TITLES = {"requests": "Requests per minute", "tokens": "Tokens per minute",
               "input-tokens": "Input tokens per minute", "output-tokens": "Output tokens per minute"}


@value
class QuotaExceeded:
    """A limit ended the turn: which (``pool``, ``meter``), and what the user was told."""

    pool: str
    meter: QuotaMeter | None  # None: the API refused (429) without stating its limits
    message: str


def now_text(at: float | None = None) -> str:
    return datetime.fromtimestamp(time.time() if at is None else at, timezone.utc).isoformat(timespec="seconds")


def status(used: float, limit: float) -> Literal["ok", "warning", "exceeded"]:
    return "exceeded" if used >= limit else "warning" if used >= WARN_SHARE * limit else "ok"


class Quotas:
    """One session's meters; its budget is its own (a child's is its parent's)."""

    def __init__(self, budget: Budget, sink: EventSink, clock: Callable[[], float] = time.time) -> None:
        self._budget = budget
        self._sink = sink
        self._clock = clock
        self._api: tuple[QuotaMeter, ...] = ()

    def saw(self, limits: tuple[RateLimit, ...]) -> None:
        """The API's latest word on its limits (a response's headers); nothing stated keeps the last."""
        if not limits:
            return
        at = now_text(self._clock())
        self._api = tuple(
            QuotaMeter(limit.name, _API_TITLES.get(limit.name, limit.name), limit.unit, float(limit.limit
                       - limit.remaining), float(limit.limit), "minute",
                       status(limit.limit - limit.remaining, limit.limit), at, limit.resets_at)
            for limit in limits)

    def pools(self) -> tuple[QuotaPool, ...]:
        """Every pool with a meter: the API's once a response stated its limits, the budget's when a
        limit is set."""
        pools = []
        if self._api:
            pools.append(QuotaPool(API_POOL, "Anthropic API rate limits", self._api))
        budget = tuple(meter for name in LIMIT_NAMES if (meter := self._budget_meter(name)) is not None)
        if budget:
            pools.append(QuotaPool(BUDGET_POOL, "Your budgets (acp-hermes)", budget))
        return tuple(pools)

    async def publish(self) -> None:
        """Tell the session's sink how the quotas stand (nothing when no limit is known)."""
        pools = self.pools()
        if pools:
            await self._sink.emit(QuotaChanged(pools))

    def budget_stop(self, message: str) -> QuotaExceeded:
        """The budget ended the turn (or refused the prompt) with ``message``: the meter it reached."""
        meter = next((meter for name in LIMIT_NAMES
                      if (meter := self._budget_meter(name)) is not None and meter.status == "exceeded"),
                     None)
        return QuotaExceeded(BUDGET_POOL, meter, message)

    def rate_limited(self, message: str) -> QuotaExceeded:
        """The API refused for its rate limits and no retry was left: its meter that ran out, if stated."""
        meter = next((meter for meter in self._api if meter.status == "exceeded"), None)
        return QuotaExceeded(API_POOL, meter, message)

    def _budget_meter(self, name: LimitName) -> QuotaMeter | None:
        limit = self._budget.limit(name)
        if limit is None:
            return None
        title, unit, window = _BUDGET_METERS[name]
        used = self._budget.used(name)
        return QuotaMeter(name, title, unit, round(used, 6), float(limit), window,
                          status(used, limit), now_text(self._clock()))
