"""Notices derived from the messages every source already writes (``core.notices``), and quota meters
from the API's rate-limit headers (``model.rate_limits``) and the budgets (``core.quotas``)."""

from __future__ import annotations

from typing import Any

import pytest

from acp_hermes.config import BudgetSettings
from acp_hermes.core.budget import Budget, Spend
from acp_hermes.core.events import Event, QuotaChanged
from acp_hermes.core.notices import notice
from acp_hermes.core.quotas import Quotas
from acp_hermes.model.rate_limits import RateLimit, rate_limits


def test_a_marked_message_becomes_a_plain_notice_and_keeps_its_text_for_other_clients() -> None:
    found = notice("budget", "⚠️ This session's budget is 85% spent ($0.85 of $1.00). Raise it with `/budget <usd>`.")
    assert (found.kind, found.severity) == ("budget", "warning")
    assert found.title == "This session's budget is 85% spent ($0.85 of $1.00)."
    assert found.description == "Raise it with /budget <usd>."
    assert found.text == "⚠️ This session's budget is 85% spent ($0.85 of $1.00). Raise it with `/budget <usd>`.\n\n"
    assert found.message_id.startswith("notice-")


def test_a_long_first_sentence_is_cut_at_a_word_and_kept_whole_in_the_description() -> None:
    text = "The MCP server " + "really " * 40 + "failed."
    found = notice("info", text, shown="", severity="error")
    assert len(found.title) <= 121 and found.title.endswith("…") and found.description == text
    assert (found.severity, found.text) == ("error", "")


def test_rate_limit_headers_are_read_and_what_is_missing_or_broken_is_left_out() -> None:
    headers = {"anthropic-ratelimit-requests-limit": "50", "anthropic-ratelimit-requests-remaining": "49",
               "anthropic-ratelimit-requests-reset": "2026-11-29T07:01:00Z",
               "anthropic-ratelimit-tokens-limit": "1000", "anthropic-ratelimit-tokens-remaining": "lots",
               "anthropic-ratelimit-output-tokens-limit": "80", "anthropic-ratelimit-output-tokens-remaining": "90"}
    assert rate_limits(headers) == (RateLimit("requests", "requests", 50, 49, "2026-11-29T07:01:00Z"),
                                    RateLimit("output-tokens", "tokens", 80, 80, None))
    assert rate_limits(None) == () and rate_limits({}) == ()


class Sink:
    def __init__(self) -> None:
        self.events: list[Event] = []

    async def emit(self, event: Event) -> None:
        self.events.append(event)


def meters(quotas: Quotas) -> dict[str, dict[str, Any]]:
    return {pool.id: {meter.id: (meter.used, meter.limit, meter.status, meter.window) for meter in pool.meters}
            for pool in quotas.pools()}


@pytest.mark.anyio
async def test_meters_follow_the_api_and_the_budget_and_name_the_limit_that_stopped() -> None:
    budget = Budget(lambda: BudgetSettings(session_usd=1.0), {"session_tokens": 1000}, lambda _: None)
    sink = Sink()
    quotas = Quotas(budget, sink, clock=lambda: 0.0)
    await quotas.publish()
    assert sink.events == [QuotaChanged(quotas.pools())] and set(meters(quotas)) == {"budget"}
    quotas.saw((RateLimit("requests", "requests", 50, 10, "2026-11-29T07:01:00Z"),))
    budget.add(Spend(0.9, 1200))
    assert meters(quotas) == {
        "anthropic": {"requests": (40.0, 50.0, "warning", "minute")},
        "budget": {"session_usd": (0.9, 1.0, "warning", "session"),
                   "session_tokens": (1200.0, 1000.0, "exceeded", "session")}}
    quotas.saw(())  # a response without the headers keeps what is known
    assert "anthropic" in meters(quotas)
    stopped = quotas.budget_stop("⛔ Budget reached")
    assert stopped.pool == "budget" and stopped.meter is not None and stopped.meter.id == "session_tokens"
    assert quotas.rate_limited("429").meter is None  # no meter ran out: none is named
