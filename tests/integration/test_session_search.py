"""Cross-session recall with session_search through the real stdio server."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from acp_hermes.config import Settings
from acp_hermes_tools.session_search import SUMMARY_SYSTEM
from tests.support.acp_harness import running_agent
from tests.support.fake_anthropic import FakeAnthropic, error_reply, text_reply, tool_reply
from tests.support.tool_checks import check_tool_calls, tool_result

# --- through the real server ---------------------------------------------------------------------

SESSION_A_PROMPT = "Plan the postgres migration for the billing service"
SESSION_B_PROMPT = "Configure the redis cache eviction policy"
SUMMARY_A = "SUMMARY-A: the billing service moved to postgres with pg_dump and alembic."


def summary_requests(fake: FakeAnthropic) -> list[dict[str, Any]]:
    return [body for body in fake.requests if body.get("system") == SUMMARY_SYSTEM]


def prompt_text(body: dict[str, Any]) -> str:
    content = body["messages"][0]["content"]
    return content if isinstance(content, str) else "".join(block.get("text", "") for block in content)


@pytest.mark.anyio
async def test_session_search_recalls_other_sessions_with_summaries_and_falls_back(
    tmp_path: Path, fake_anthropic: FakeAnthropic
) -> None:
    home = tmp_path / "home"
    settings = Settings()
    fake_anthropic.script(
        text_reply("Dump with pg_dump, then run alembic upgrade head."),
    )
    fake_anthropic.script_auxiliary(text_reply("Billing migration"))
    async with running_agent(tmp_path, fake_anthropic, home=home) as first:
        session_a = await first.new_session()
        await first.prompt(session_a, SESSION_A_PROMPT)
        await first.wait_for_update(session_a, "session_info_update")

    # A new process on the same HERMES_HOME: session A is only in the database now.
    fake_anthropic.script(text_reply("Set maxmemory-policy to allkeys-lru."))
    fake_anthropic.script_auxiliary(text_reply("Redis eviction"))
    async with running_agent(tmp_path, fake_anthropic, home=home) as agent:
        session_b = await agent.new_session()
        await agent.prompt(session_b, SESSION_B_PROMPT)
        await agent.wait_for_update(session_b, "session_info_update")

        session_c = await agent.new_session()
        fake_anthropic.script(
            tool_reply("session_search", {"query": "postgres"}, id="toolu_recall_1"),
            text_reply("We used pg_dump and alembic."),
        )
        fake_anthropic.script_auxiliary(
            text_reply(SUMMARY_A),  # the auxiliary model's recap of session A
            text_reply("Recall postgres plan"),  # session C's title
        )
        assert await agent.prompt(session_c, "What did we decide about postgres last time?") == "end_turn"
        await agent.wait_for_update(session_c, "session_info_update")

        text, is_error = tool_result(fake_anthropic, "toolu_recall_1")
        assert not is_error
        assert SUMMARY_A in text and f"session {session_a}" in text and "Billing migration" in text
        assert session_c not in text and session_b not in text  # current session excluded, B does not match
        (aux,) = summary_requests(fake_anthropic)
        assert not aux.get("stream") and aux["model"] == settings.auxiliary_model != settings.model
        assert "Search topic: postgres" in prompt_text(aux) and SESSION_A_PROMPT in prompt_text(aux)

        calls = check_tool_calls(agent, session_c)
        (call,) = calls.values()
        assert call.announced["title"] == 'Search past sessions: "postgres"' and call.announced["kind"] == "search"
        assert call.status == "completed" and SUMMARY_A in call.text()

        # Both summaries fail: the model gets the raw snippets and is told why.
        fake_anthropic.script(
            tool_reply("session_search", {"query": "redis OR postgres", "limit": 5}, id="toolu_recall_2"),
            text_reply("Here is what I found."),
        )
        fake_anthropic.script_auxiliary(*[error_reply(400, message="aux refused")] * 2)
        assert await agent.prompt(session_c, "And anything about redis?") == "end_turn"

        text, is_error = tool_result(fake_anthropic, "toolu_recall_2")
        assert not is_error
        assert f"session {session_a}" in text and f"session {session_b}" in text and session_c not in text
        assert text.count("(No summary: failed:") == 2
        assert ">>>redis<<<" in text and ">>>postgres<<<" in text
        assert len(summary_requests(fake_anthropic)) == 3
        assert all(not body.get("stream") for body in summary_requests(fake_anthropic))
        assert fake_anthropic.unused_replies == 0
