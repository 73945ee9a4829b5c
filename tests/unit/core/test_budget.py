"""Spending limits in-process: amounts, ``/budget``'s arguments, and when a budget stops or warns."""

from __future__ import annotations

import pytest

from acp_hermes.config import BudgetSettings
from acp_hermes.core.budget import Budget, Spend, money, parse_limit, tokens_of
from acp_hermes.model.types import Usage


def budget(overrides: dict[str, float | None] | None = None, **limits: float) -> tuple[Budget, list[str]]:
    """A meter over the config's ``limits`` and the session's ``overrides``, and what it told the user."""
    told: list[str] = []
    settings = BudgetSettings(**limits)  # type: ignore[arg-type]
    return Budget(lambda: settings, overrides if overrides is not None else {}, told.append), told


# -- amounts and arguments


@pytest.mark.parametrize(("amount", "shown"), [
    (0.5, "$0.50"), (2, "$2.00"), (0.1, "$0.10"), (0, "$0.00"), (100, "$100.00"), (0.0123, "$0.0123"),
    (12.3456, "$12.3456"), (0.00001, "$0.00"), (0.99999, "$1.00"), (1.23456, "$1.2346"),
])
def test_money_reads_as_dollars(amount: float, shown: str) -> None:
    assert money(amount) == shown


@pytest.mark.parametrize(("words", "parsed"), [
    (["5"], ("session_usd", 5.0)), (["$0.25"], ("session_usd", 0.25)), (["0.001"], ("session_usd", 0.001)),
    (["off"], ("session_usd", None)), (["none"], ("session_usd", None)),
    (["turn", "1.5"], ("turn_usd", 1.5)), (["turn", "$2"], ("turn_usd", 2.0)), (["turn", "off"], ("turn_usd", None)),
    (["tokens", "200,000"], ("session_tokens", 200_000.0)), (["tokens", "50_000"], ("session_tokens", 50_000.0)),
    (["tokens", "7"], ("session_tokens", 7.0)), (["tokens", "off"], ("session_tokens", None)),
])
def test_budget_arguments(words: list[str], parsed: tuple[str, float | None]) -> None:
    assert parse_limit(words) == parsed


@pytest.mark.parametrize("words", [
    [], ["0"], ["-1"], ["$0"], ["lots"], ["inf"], ["nan"], ["5", "6"], ["turn"], ["turn", "0"], ["turn", "x"],
    ["turn", "1", "2"], ["tokens"], ["tokens", "1.5"], ["tokens", "0"], ["tokens", "-5"], ["session", "5"],
])
def test_bad_budget_arguments_are_refused(words: list[str]) -> None:
    with pytest.raises(ValueError):
        parse_limit(words)


def test_a_word_that_is_no_amount_is_named() -> None:
    with pytest.raises(ValueError, match="'lots' is not an amount"):
        parse_limit(["lots"])
    with pytest.raises(ValueError, match="more than 0"):
        parse_limit(["turn", "0"])


def test_tokens_count_every_token_a_call_processed() -> None:
    assert tokens_of(Usage(10, 5, cache_read_tokens=100, cache_write_tokens=20)) == 135
    assert tokens_of(Usage(0, 0)) == 0


# -- limits


def test_limits_come_from_the_config_and_a_sessions_own_win() -> None:
    overrides: dict[str, float | None] = {}
    meter, _ = budget(overrides, session_usd=1.0, session_tokens=500)
    assert (meter.limit("session_usd"), meter.limit("turn_usd"), meter.limit("session_tokens")) == (1.0, None, 500)
    overrides.update(session_usd=3.0, turn_usd=0.5)
    assert (meter.limit("session_usd"), meter.limit("turn_usd"), meter.limit("session_tokens")) == (3.0, 0.5, 500)
    overrides["session_tokens"] = None  # the session's "off": no limit, though the config has one
    assert meter.limit("session_tokens") is None


def test_the_configs_limits_are_read_as_they_are_now() -> None:
    settings = BudgetSettings(session_usd=1.0)
    meter = Budget(lambda: settings, {}, lambda _: None)
    meter.start_turn(Spend(1.5, 0))
    assert meter.exceeded() is not None
    settings = BudgetSettings(session_usd=2.0)  # the config was reloaded
    assert meter.limit("session_usd") == 2.0 and meter.exceeded() is None


def test_a_sessions_own_limit_can_lift_or_lower_the_configs() -> None:
    overrides: dict[str, float | None] = {}
    meter, _ = budget(overrides, session_usd=1.0)
    meter.start_turn(Spend(1.5, 0))
    assert meter.exceeded() is not None and meter.refusal() is not None
    overrides["session_usd"] = 2.0
    assert meter.exceeded() is None and meter.refusal() is None
    overrides["session_usd"] = None
    assert meter.limit("session_usd") is None and meter.exceeded() is None and meter.refusal() is None
    overrides["session_usd"] = 1.5  # reached exactly: spent ≥ limit stops
    assert meter.exceeded() is not None and meter.refusal() is not None


def test_no_limits_never_stop() -> None:
    meter, told = budget()
    meter.start_turn(Spend(1_000.0, 10**9))
    meter.add(Spend(50.0, 10**6))
    assert meter.exceeded() is None and meter.refusal() is None and told == []


# -- spend and turns


def test_turn_spent_counts_from_the_turns_start() -> None:
    meter, _ = budget()
    assert meter.spent == Spend() and meter.turn_spent == Spend()
    meter.start_turn(Spend(2.0, 300))
    assert meter.spent == Spend(2.0, 300) and meter.turn_spent == Spend(0.0, 0)
    meter.add(Spend(0.25, 40))
    meter.add(Spend(0.5, 60))
    assert meter.spent == Spend(2.75, 400) and meter.turn_spent == Spend(0.75, 100)
    meter.start_turn(Spend(3.0, 450))  # the SessionDB's figure: what reviews and titles cost counts too
    assert meter.spent == Spend(3.0, 450) and meter.turn_spent == Spend(0.0, 0)


def test_a_resync_between_turns_keeps_the_turns_start() -> None:
    meter, _ = budget()
    meter.start_turn(Spend(1.0, 100))
    meter.add(Spend(0.5, 50))
    meter.resync(Spend(1.75, 180))  # a title cost $0.25 after the turn
    assert meter.spent == Spend(1.75, 180) and meter.turn_spent == Spend(0.75, 80)


def test_a_spent_turn_stops_the_turn_but_not_the_next_prompt() -> None:
    meter, _ = budget(turn_usd=0.5)
    meter.start_turn(Spend(10.0, 0))  # what earlier turns spent does not count against one turn
    assert meter.exceeded() is None
    meter.add(Spend(0.6, 100))
    assert meter.turn_spent.usd == pytest.approx(0.6) and meter.turn_spent.tokens == 100
    stop = meter.exceeded()
    assert stop is not None and stop.startswith("⛔ Budget reached: this turn has spent $0.60 of the budget of one "
                                                "turn ($0.50), so the agent stopped before its next model request.")
    assert "Send another prompt to go on" in stop and "`/budget turn <usd>`" in stop and "budget.turn_usd" in stop
    assert meter.refusal() is None  # a new turn starts afresh
    meter.start_turn(meter.spent)
    assert meter.exceeded() is None


def test_a_spent_session_stops_the_turn_and_refuses_prompts_with_how_to_raise_it() -> None:
    meter, _ = budget(session_usd=1.0)
    meter.start_turn(Spend(0.4, 0))
    assert meter.exceeded() is None and meter.refusal() is None
    meter.add(Spend(0.6, 0))
    stop = meter.exceeded()
    assert stop == ("⛔ Budget reached: this session has spent $1.00 of this session's budget ($1.00), so the agent "
                    "stopped before its next model request. Raise it with `/budget <usd>` (`/budget off` removes "
                    "it), or set `budget.session_usd` in config.yaml (read when the agent starts).")
    meter.start_turn(meter.spent)  # the next prompt: refused, with the same words
    assert meter.refusal() == stop


def test_tokens_bound_a_model_without_a_price() -> None:
    meter, _ = budget(session_tokens=1_000, session_usd=0.01)
    meter.start_turn(Spend())
    meter.add(Spend(0.0, 999))  # unpriced: no dollars, the dollar limit never stops it
    assert meter.exceeded() is None and meter.refusal() is None
    meter.add(Spend(0.0, 1))
    stop = meter.refusal()
    assert stop is not None and stop == meter.exceeded()
    assert "this session has spent 1,000 tokens of this session's token budget (1,000 tokens)" in stop
    assert "`/budget tokens <n>`" in stop and "budget.session_tokens" in stop


# -- the 80 % notice


def test_the_80_percent_notice_comes_once_per_limit_and_again_once_raised() -> None:
    overrides: dict[str, float | None] = {}
    meter, told = budget(overrides, session_usd=1.0)
    meter.start_turn(Spend())
    meter.add(Spend(0.5, 0))
    meter.add(Spend(0.29, 0))
    assert told == []  # 79 %
    meter.add(Spend(0.06, 0))
    assert told == ["⚠️ This session's budget is 85% spent ($0.85 of $1.00). Raise it with `/budget <usd>` "
                    "(`/budget off` removes it)."]
    meter.add(Spend(0.05, 0))
    meter.start_turn(meter.spent)  # a new turn does not repeat a session limit's notice
    meter.add(Spend(0.01, 0))
    assert len(told) == 1
    overrides["session_usd"] = 1.1  # raised: 82.7 % of the new limit is worth a new notice, once
    meter.add(Spend(0.0, 0))
    meter.add(Spend(0.0, 0))
    assert len(told) == 2 and told[1].startswith("⚠️ This session's budget is 82% spent ($0.91 of $1.10)")
    overrides["session_usd"] = 5.0  # raised far: 19 %, nothing to say
    meter.add(Spend(0.0, 0))
    assert len(told) == 2


def test_no_notice_once_a_limit_is_passed_the_stop_says_it() -> None:
    meter, told = budget(session_usd=1.0)
    meter.start_turn(Spend())
    meter.add(Spend(1.2, 0))  # from 0 % straight past the limit
    assert told == [] and meter.exceeded() is not None


def test_each_limit_has_its_own_notice_and_a_turns_comes_again_each_turn() -> None:
    meter, told = budget(turn_usd=1.0, session_tokens=1_000)
    meter.start_turn(Spend())
    meter.add(Spend(0.9, 850))
    assert sorted(told) == [
        "⚠️ The budget of one turn is 90% spent ($0.90 of $1.00). Raise it with `/budget turn <usd>`.",
        "⚠️ This session's token budget is 85% spent (850 tokens of 1,000 tokens). Raise it with "
        "`/budget tokens <n>`.",
    ]
    meter.start_turn(meter.spent)
    meter.add(Spend(0.85, 0))
    assert len(told) == 3 and told[2].startswith("⚠️ The budget of one turn is 85% spent ($0.85 of $1.00)")


# -- what /budget and /usage show


def test_describe_shows_each_limit_and_where_it_comes_from() -> None:
    meter, _ = budget({"turn_usd": 0.5}, session_usd=2.0)
    meter.start_turn(Spend(0.5, 1_234))
    meter.add(Spend(0.1, 10))
    assert meter.describe(priced=True, running=True) == [
        "Spent: $0.60 this session (1,244 tokens), $0.10 in the current turn; subagents included.",
        "- `session_usd`: $2.00 (30% used)",
        "- `turn_usd`: $0.50 a turn (20% used) (set for this session)",
        "- `session_tokens`: none",
    ]
    # Between turns a turn's limit holds for the next one, which starts afresh: the last one's spend is said.
    assert meter.describe(priced=True, running=False)[2] == (
        "- `turn_usd`: $0.50 a turn (the last turn spent $0.10) (set for this session)")


@pytest.mark.parametrize(("used", "shown"), [
    (0.0, "0% used"), (0.0001, "under 1% used"), (0.57, "57% used"), (0.996, "99% used"),
    (1.0, "reached: $1.00 spent"), (1.25, "reached: $1.25 spent"),
])
def test_describe_shows_percentages_a_person_reads(used: float, shown: str) -> None:
    """Rounded down (99.6 % is not yet the limit), never 0 % once something is spent, and past the
    limit the amount spent rather than "125% used"."""
    meter, _ = budget(session_usd=1.0)
    meter.start_turn(Spend(used, 0))
    assert meter.describe(priced=True, running=False)[1] == f"- `session_usd`: $1.00 ({shown})"


def test_a_new_limit_already_spent_is_warned_of() -> None:
    overrides: dict[str, float | None] = {}
    meter, _ = budget(overrides)
    meter.start_turn(Spend(0.5, 2_000))
    meter.add(Spend(0.3, 100))
    overrides.update(session_usd=0.6, session_tokens=1_000_000, turn_usd=0.2)
    assert meter.already_spent("session_usd", running=False) == (
        "⚠️ This session has already spent $0.80, more than the new limit of $0.60: new prompts are refused until "
        "it is raised.")
    assert meter.already_spent("session_usd", running=True) == (
        "⚠️ This session has already spent $0.80, more than the new limit of $0.60: the running turn stops before "
        "its next model request and new prompts are refused until it is raised.")
    assert meter.already_spent("session_tokens", running=True) is None  # not spent
    assert meter.already_spent("turn_usd", running=True) == (
        "⚠️ The running turn has already spent $0.30, more than the new limit of $0.20: it stops before its next "
        "model request.")
    assert meter.already_spent("turn_usd", running=False) is None  # the next turn starts afresh
    overrides["session_usd"] = None
    assert meter.already_spent("session_usd", running=False) is None


def test_a_limit_passed_by_the_turns_last_request_is_said_at_its_end() -> None:
    meter, _ = budget(turn_usd=0.5)
    meter.start_turn(Spend(3.0, 0))
    assert meter.passed() is None
    meter.add(Spend(0.7, 0))  # one request, from nothing straight past the turn's limit
    passed = meter.passed()
    assert passed is not None and passed.startswith(
        "⛔ Budget reached: this turn has spent $0.70 of the budget of one turn ($0.50), the turn's last model "
        "request went past it. Send another prompt to go on")


def test_describe_for_a_model_without_a_price_speaks_of_tokens() -> None:
    meter, _ = budget({"session_usd": None}, session_usd=2.0, session_tokens=10_000)
    meter.start_turn(Spend(0.0, 2_500))
    lines = meter.describe(priced=False, running=False)
    assert lines[0] == ("Spent: 2,500 tokens this session, subagents included (the model's price is unknown: only "
                        "the token limit applies).")
    assert "$" not in lines[0]
    assert lines[1:] == ["- `session_usd`: none (set for this session)", "- `turn_usd`: none",
                         "- `session_tokens`: 10,000 tokens (25% used)"]
