"""Spending limits: what a session and its subagents have spent, checked before every model request.

The meter lives in memory, so the check on a turn's path reads no database: when a turn starts it is
set from what the SessionDB has recorded (earlier turns, subagents, titles, reviews), and each model
call of the turn, and of the children it delegates to, adds its cost as it completes. A child shares
its parent's ``Budget``: a subagent's spend is its parent's, and its requests stop with the parent's.

Limits come from ``budget:`` in the config, overridden per session by ``/budget`` (kept with the
session's choices, so a reload keeps them). A model without a known price costs nothing in dollars;
tokens are counted for every model, and ``session_tokens`` bounds them.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Literal

from acp_hermes.config import BudgetSettings
from acp_hermes.model.types import Usage
from acp_hermes_memory.values import value

LimitName = Literal["session_usd", "turn_usd", "session_tokens"]
LIMIT_NAMES: tuple[LimitName, ...] = ("session_usd", "turn_usd", "session_tokens")
WARN_SHARE = 0.8  # the share of a limit at which the user hears of it, once


@value
class Spend:
    usd: float = 0.0
    tokens: int = 0

    def __add__(self, other: Spend) -> Spend:
        return Spend(self.usd + other.usd, self.tokens + other.tokens)

    def __sub__(self, other: Spend) -> Spend:
        return Spend(self.usd - other.usd, self.tokens - other.tokens)


def tokens_of(usage: Usage) -> int:
    """Every token a call processed: its input (cached or not) and its output."""
    return usage.input_tokens + usage.output_tokens + usage.cache_read_tokens + usage.cache_write_tokens


def money(amount: float) -> str:
    """Dollars as a user reads them: two decimals, up to four for small sums ($0.50, $0.0123)."""
    text = f"{amount:.4f}".rstrip("0")
    whole, _, cents = text.partition(".")
    return f"${whole}.{cents.ljust(2, '0')}"


def _amount(name: LimitName, value: float) -> str:
    return f"{int(value):,} tokens" if name == "session_tokens" else money(value)


def share(used: float, limit: float) -> str:
    """How much of a limit not yet reached is spent, as a person reads it: whole percents rounded down
    (99.6 % is not all of it), "under 1%" for a little (not "0%" once something is spent)."""
    if used <= 0:
        return "0%"
    part = used / limit
    return "under 1%" if part < 0.01 else f"{math.floor(part * 100 + 1e-9)}%"  # 0.57 is 57 %, not 56.99…


# How each limit is named, raised, and configured, for the messages.
_WHAT = {"session_usd": "this session's budget", "turn_usd": "the budget of one turn",
         "session_tokens": "this session's token budget"}
_RAISE = {"session_usd": "`/budget <usd>` (`/budget off` removes it)", "turn_usd": "`/budget turn <usd>`",
          "session_tokens": "`/budget tokens <n>`"}


class Budget:
    """One session's limits and spend (shared with its children)."""

    def __init__(self, settings: Callable[[], BudgetSettings], overrides: Mapping[str, float | None],
                 notify: Callable[[str], None]) -> None:
        self._settings = settings  # the config's limits, as they are now
        self._overrides = overrides  # the session's own (/budget): None means no limit
        self._notify = notify  # tells the user now (the 80 % notice)
        self._spent = Spend()
        self._turn_start: Spend | None = None  # what was spent when the current or last turn began
        self._warned: set[tuple[str, float]] = set()

    @property
    def spent(self) -> Spend:
        return self._spent

    @property
    def turn_spent(self) -> Spend:
        return self._spent - (self._turn_start or self._spent)

    def limit(self, name: LimitName) -> float | None:
        if name in self._overrides:
            return self._overrides[name]
        value: float | None = getattr(self._settings(), name)
        return value

    def start_turn(self, recorded: Spend) -> None:
        """A turn of the session begins, with ``recorded`` spent so far (the SessionDB's figure)."""
        self._spent = self._turn_start = recorded
        self._warned = {key for key in self._warned if key[0] != "turn_usd"}

    def resync(self, recorded: Spend) -> None:
        """Between turns: the SessionDB's figure, with what reviews and titles cost since the turn."""
        self._spent = recorded

    def add(self, spend: Spend) -> None:
        """A model call (the session's or a child's) completed and cost ``spend``."""
        self._spent = self._spent + spend
        for name in LIMIT_NAMES:
            limit, used = self.limit(name), self._used(name)
            if limit is not None and WARN_SHARE * limit <= used < limit and (name, limit) not in self._warned:
                self._warned.add((name, limit))
                self._notify(f"⚠️ {_WHAT[name].capitalize()} is {share(used, limit)} spent ({_amount(name, used)} "
                             f"of {_amount(name, limit)}). Raise it with {_RAISE[name]}.")

    def used(self, name: LimitName) -> float:
        """What counts against limit ``name`` now (dollars or tokens)."""
        return self._used(name)

    def _used(self, name: LimitName) -> float:
        if name == "session_tokens":
            return self._spent.tokens
        return self.turn_spent.usd if name == "turn_usd" else self._spent.usd

    def exceeded(self) -> str | None:
        """Why the next model request must not start (a limit is reached), or None."""
        for name in LIMIT_NAMES:
            limit = self.limit(name)
            if limit is not None and self._used(name) >= limit:
                return self._stop_message(name, limit)
        return None

    def refusal(self) -> str | None:
        """Why a new prompt is refused: a limit of the whole session is reached (a turn's starts afresh)."""
        for name in ("session_usd", "session_tokens"):
            limit = self.limit(name)
            if limit is not None and self._used(name) >= limit:
                return self._stop_message(name, limit)
        return None

    def passed(self) -> str | None:
        """A limit the turn's requests reached though nothing stopped (its last request went past it and
        the turn ended by itself): the ⛔ message, said at the turn's end, or None."""
        for name in LIMIT_NAMES:
            limit = self.limit(name)
            if limit is not None and self._used(name) >= limit:
                return self._stop_message(name, limit, stopped=False)
        return None

    def _stop_message(self, name: LimitName, limit: float, *, stopped: bool = True) -> str:
        used = self._used(name)
        where = "this turn" if name == "turn_usd" else "this session"
        how = ("so the agent stopped before its next model request" if stopped else
               "the turn's last model request went past it")
        then = " Send another prompt to go on, or raise it" if name == "turn_usd" else " Raise it"
        return (f"⛔ Budget reached: {where} has spent {_amount(name, used)} of {_WHAT[name]} "
                f"({_amount(name, limit)}), {how}.{then} with {_RAISE[name]}, or set `budget.{name}` in "
                "config.yaml (read when the agent starts).")

    def already_spent(self, name: LimitName, *, running: bool) -> str | None:
        """A warning for a limit just set that is already spent (``/budget``): what it stops now. A turn's
        limit set between turns holds from the next turn, which starts afresh: nothing to warn of."""
        limit = self.limit(name)
        if limit is None or self._used(name) < limit or (name == "turn_usd" and not running):
            return None
        used, wanted = _amount(name, self._used(name)), _amount(name, limit)
        if name == "turn_usd":
            return (f"⚠️ The running turn has already spent {used}, more than the new limit of {wanted}: it stops "
                    "before its next model request.")
        refused = "new prompts are refused until it is raised"
        stops = f"the running turn stops before its next model request and {refused}" if running else refused
        return f"⚠️ This session has already spent {used}, more than the new limit of {wanted}: {stops}."

    def describe(self, priced: bool, *, running: bool) -> list[str]:
        """What ``/budget`` and ``/usage`` show: spend against each limit (a turn's: the running turn's,
        or between turns what the last one spent, as the next starts afresh)."""
        spent, turn = self._spent, self.turn_spent
        lines = [f"Spent: {money(spent.usd)} this session ({spent.tokens:,} tokens), {money(turn.usd)} "
                 f"in the {'current' if running else 'last'} turn; subagents included." if priced else
                 f"Spent: {spent.tokens:,} tokens this session, subagents included (the model's price is unknown: "
                 "only the token limit applies)."]
        for name in LIMIT_NAMES:
            source = " (set for this session)" if name in self._overrides else ""
            lines.append(f"- `{name}`: {self._against(name, running)}{source}")
        return lines

    def _against(self, name: LimitName, running: bool) -> str:
        limit = self.limit(name)
        if limit is None:
            return "none"
        amount = _amount(name, limit) + (" a turn" if name == "turn_usd" else "")
        if name == "turn_usd" and not running:
            return f"{amount} (the last turn spent {money(self.turn_spent.usd)})"
        used = self._used(name)
        if used >= limit:
            return f"{amount} (reached: {_amount(name, used)} spent)"
        return f"{amount} ({share(used, limit)} used)"


def parse_limit(words: list[str]) -> tuple[LimitName, float | None]:
    """``/budget``'s arguments as (limit, value): ``<usd>``, ``turn <usd>``, ``tokens <n>``, each or ``off``.
    Raises ValueError saying what is wrong."""
    names: dict[str, LimitName] = {"turn": "turn_usd", "tokens": "session_tokens"}
    name: LimitName = "session_usd"
    if len(words) == 2 and words[0] in names:
        name, words = names[words[0]], words[1:]
    if len(words) != 1:
        raise ValueError("give one amount")
    raw = words[0].lstrip("$")
    if raw in ("off", "none"):
        return name, None
    try:
        value = float(raw) if name != "session_tokens" else float(int(raw.replace(",", "").replace("_", "")))
    except ValueError:
        raise ValueError(f"{words[0]!r} is not an amount") from None
    if not value > 0 or value == float("inf"):
        raise ValueError("the amount must be more than 0")
    return name, value
