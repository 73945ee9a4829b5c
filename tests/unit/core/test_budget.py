"""Spending limits in-process: amounts, ``/budget``'s arguments, and when a budget stops or warns."""

from __future__ import annotations

import pytest

from acp_hermes.config import BudgetSettings
from acp_hermes.core.budget import Budget, Spend, money, parse_limit, tokens_of
from acp_hermes.model.types import Usage


def budget(overrides: dict[str, float | None] | None = None, **limits: float) -> tuple[Budget, list[str]]:
    told: list[str] = []
    settings = BudgetSettings(**limits)  # type: ignore[arg-type]
    return Budget(lambda: settings, overrides if overrides is not None else {}, told.append), told


@pytest.mark.parametrize(("amount", "shown"), [(0.5, "$0.50"), (2, "$2.00"), (0.0123, "$0.0123"), (0.1, "$0.10"),
                                               (12.3456, "$12.3456"), (0.00001, "$0.00")])
def test_money_reads_as_dollars(amount: float, shown: str) -> None:
    assert money(amount) == shown


@pytest.mark.parametrize(("words", "parsed"), [
    (["5"], ("session_usd", 5.0)), (["$0.25"], ("session_usd", 0.25)), (["off"], ("session_usd", None)),
    (["turn", "1.5"], ("turn_usd", 1.5)), (["turn", "none"], ("turn_usd", None)),
    (["tokens", "200,000"], ("session_tokens", 200_000.0)), (["tokens", "off"], ("session_tokens", None)),
])
def test_budget_arguments(words: list[str], parsed: tuple[str, float | None]) -> None:
    assert parse_limit(words) == parsed


@pytest.mark.parametrize("words", [["0"], ["-1"], ["lots"], ["inf"], ["nan"], ["turn"], ["5", "6"], ["tokens", "1.5"],
                                   []])
def test_bad_budget_arguments_say_what_is_wrong(words: list[str]) -> None:
    with pytest.raises(ValueError):
        parse_limit(words)


def test_tokens_count_every_token_a_call_processed() -> None:
    assert tokens_of(Usage(10, 5, cache_read_tokens=100, cache_write_tokens=20)) == 135


def test_a_sessions_own_limit_wins_over_the_configs_and_none_means_no_limit() -> None:
    overrides: dict[str, float | None] = {}
    meter, _ = budget(overrides, session_usd=1.0)
    meter.start_turn(Spend(1.5, 0))
    assert meter.exceeded() is not None
    overrides["session_usd"] = 2.0
    assert meter.limit("session_usd") == 2.0 and meter.exceeded() is None
    overrides["session_usd"] = None
    assert meter.limit("session_usd") is None and meter.exceeded() is None


def test_a_spent_turn_stops_the_turn_but_not_the_next_prompt() -> None:
    meter, _ = budget(turn_usd=0.5)
    meter.start_turn(Spend(10.0, 0))  # what earlier turns spent does not count against one turn
    assert meter.exceeded() is None
    meter.add(Spend(0.6, 100))
    assert meter.turn_spent == Spend(pytest.approx(0.6), 100)  # type: ignore[arg-type]
    stop = meter.exceeded()
    assert stop is not None and "this turn has spent $0.60" in stop and "/budget turn <usd>" in stop
    assert meter.refusal() is None  # a new turn starts afresh
    meter.start_turn(meter.spent)
    assert meter.exceeded() is None


def test_a_spent_session_refuses_prompts_with_how_to_raise_it() -> None:
    meter, _ = budget(session_usd=1.0)
    meter.start_turn(Spend(1.0, 0))
    refusal = meter.refusal()
    assert refusal is not None and refusal == meter.exceeded()
    assert "$1.00" in refusal and "`/budget <usd>`" in refusal and "budget.session_usd" in refusal


def test_tokens_bound_a_model_without_a_price() -> None:
    meter, _ = budget(session_tokens=1_000, session_usd=0.01)
    meter.start_turn(Spend())
    meter.add(Spend(0.0, 999))  # unpriced: no dollars, the dollar limit never stops it
    assert meter.exceeded() is None
    meter.add(Spend(0.0, 1))
    stop = meter.refusal()
    assert stop is not None and "1,000 tokens" in stop and "`/budget tokens <n>`" in stop


def test_the_80_percent_notice_comes_once_per_limit_and_again_once_raised() -> None:
    overrides: dict[str, float | None] = {}
    meter, told = budget(overrides, session_usd=1.0)
    meter.start_turn(Spend())
    meter.add(Spend(0.5, 0))
    assert told == []
    meter.add(Spend(0.35, 0))
    meter.add(Spend(0.05, 0))
    assert len(told) == 1 and "85% spent ($0.85 of $1.00)" in told[0]
    overrides["session_usd"] = 1.1
    meter.add(Spend(0.0, 0))
    assert len(told) == 2 and "$1.10" in told[1]


def test_describe_shows_each_limit_and_where_it_comes_from() -> None:
    meter, _ = budget({"turn_usd": 0.5}, session_usd=2.0)
    meter.start_turn(Spend(0.5, 1_234))
    priced = meter.describe(priced=True)
    assert priced[0].startswith("Spent: $0.50 this session (1,234 tokens)")
    assert "- `session_usd`: $2.00 (25% used)" in priced
    assert "- `turn_usd`: $0.50 (0% used) (set for this session)" in priced
    assert "- `session_tokens`: none" in priced
    assert "price is unknown" in meter.describe(priced=False)[0]
