"""The wire shapes of notices, quotas and JetBrains AIR (``adapter.render``, ``adapter.extensions``,
``adapter.client``): who gets which, and how a client's request is read."""

from __future__ import annotations

from typing import Any

import pytest

from acp_hermes.adapter.client import AIR_ASYNC_TASKS, air_capabilities, session_capability
from acp_hermes.adapter.extensions import file_report_request
from acp_hermes.adapter.render import file_change_report, quota_exceeded, quota_update, render_notice
from acp_hermes.core.events import Notice, QuotaChanged, QuotaMeter, QuotaPool
from acp_hermes.core.quotas import QuotaExceeded
from tests.support.extension_schema import QUOTA_EXCEEDED_DATA, UPDATES, problems

BUDGET = Notice("budget", "warning", "This session's budget is 85% spent.", "Raise it with /budget <usd>.",
                "⚠️ This session's budget is 85% spent. Raise it with `/budget <usd>`.\n\n", "notice-1")
METER = QuotaMeter("requests", "Requests per minute", "requests", 50.0, 50.0, "minute", "exceeded",
                   "2026-11-29T07:00:00+00:00", "2026-11-29T07:01:00Z")


def test_a_notice_client_gets_a_notice_and_any_other_the_message_it_always_had() -> None:
    assert render_notice(BUDGET, True) == {
        "sessionUpdate": "notice", "severity": "warning", "title": "This session's budget is 85% spent.",
        "description": "Raise it with /budget <usd>.", "_meta": {"acp-hermes": {"kind": "budget"}}}
    assert render_notice(BUDGET, False) == {
        "sessionUpdate": "agent_message_chunk", "messageId": "notice-1",
        "content": {"type": "text", "text": BUDGET.text}}


def test_a_notice_with_its_own_rendering_elsewhere_shows_nothing_to_other_clients() -> None:
    compaction = Notice("compaction", "info", "Compacting the conversation", text="")
    assert render_notice(compaction, False) is None
    assert render_notice(compaction, True) is not None


def test_quota_update_and_the_quota_exceeded_error_have_their_documented_shapes() -> None:
    update = quota_update(QuotaChanged((QuotaPool("anthropic", "Anthropic API rate limits", (METER,)),)))
    assert problems(UPDATES["quota_update"], update) == []
    assert update["pools"][0]["meters"][0]["usedPercent"] == 100
    code, message, data = quota_exceeded(QuotaExceeded("anthropic", METER, "\n\n⚠️ Rate-limited.\n"))
    assert (code, message) == (-32029, "⚠️ Rate-limited.")
    assert problems(QUOTA_EXCEEDED_DATA, data) == [] and data["quotaExceeded"]["resetsAt"] == METER.resets_at


def test_the_file_change_report_rides_a_session_info_update_as_air_reads_it() -> None:
    update = file_change_report("r1", ("/w/a.txt",))
    report = update["_meta"]["jetbrains"]["air"]["agentFileChangeReport"]
    assert update["sessionUpdate"] == "session_info_update" and update["_meta"]["jetbrains"]["air"]["version"] == 1
    assert report == {"version": 1, "requestId": "r1", "status": "reported", "paths": ["/w/a.txt"],
                      "declaredComplete": True, "truncated": False}
    unknown = file_change_report("r2", None)["_meta"]["jetbrains"]["air"]["agentFileChangeReport"]
    assert unknown == {"version": 1, "requestId": "r2", "status": "unavailable", "reason": "notReported"}


def request(value: Any) -> dict[str, Any]:
    return {"_meta": {"jetbrains": {"air": {"agentFileChangeReportRequest": value}}}}


@pytest.mark.parametrize(("params", "expected"), [
    (request({"version": 1, "requestId": "turn-1.a:b"}), "turn-1.a:b"),
    (request({"version": 2, "requestId": "turn-1"}), None),
    (request({"version": 1, "requestId": "turn 1"}), None),
    (request({"version": 1, "requestId": "x" * 129}), None),
    (request({"version": 1, "requestId": "t", "extra": 1}), None),
    (request("turn-1"), None),
    ({}, None),
], ids=["valid", "version-2", "space", "too-long", "extra-key", "not-an-object", "none"])
def test_a_file_change_report_request_is_read_only_in_its_exact_shape(params: dict[str, Any],
                                                                      expected: str | None) -> None:
    assert file_report_request(params) == expected


def test_capabilities_are_read_from_the_raw_initialize() -> None:
    air = {"_meta": {"jetbrains": {"air": {"version": 1, "capabilities": [AIR_ASYNC_TASKS, 3]}}}}
    assert air_capabilities(air) == {AIR_ASYNC_TASKS}
    assert air_capabilities({"_meta": {"jetbrains": {"air": {"version": 0, "capabilities": [AIR_ASYNC_TASKS]}}}}) \
        == frozenset()
    assert session_capability({"session": {"notices": {}}}, "notices")
    assert not session_capability({"session": {"notices": None}}, "notices")
    assert not session_capability({"session": {"quotas": True}}, "quotas")
    assert not session_capability(None, "quotas")
