"""A reloaded session continues with the tool state it had: the todo plan survives a restart."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.acp_harness import running_agent
from tests.fake_anthropic import FakeAnthropic, text_reply, tool_reply


@pytest.mark.anyio
async def test_todo_merge_after_a_restart_updates_the_plan_the_session_had(
    tmp_path: Path, fake_anthropic: FakeAnthropic
) -> None:
    plan = [
        {"id": "a", "content": "Write the parser", "status": "in_progress"},
        {"id": "b", "content": "Test the parser", "status": "pending"},
    ]
    fake_anthropic.script(
        tool_reply("todo", {"todos": plan}, id="toolu_plan"),
        text_reply("Planned."),
        text_reply("Parser plan"),  # the title
    )
    async with running_agent(tmp_path, fake_anthropic) as first:
        sid = await first.new_session()
        assert await first.prompt(sid, "plan the parser work") == "end_turn"
        await first.wait_for_update(sid, "session_info_update")

    fake_anthropic.script(
        tool_reply("todo", {"todos": [{"id": "a", "status": "completed"}], "merge": True}, id="toolu_merge"),
        text_reply("Marked the first step done."),
    )
    async with running_agent(tmp_path, fake_anthropic) as second:
        await second.conn.load_session(cwd=str(second.workspace), session_id=sid, mcp_servers=[])
        replayed = second.updates(sid, "tool_call")
        assert replayed[0]["rawOutput"]["todos"][0]["id"] == "a"  # the stored call keeps its output
        before = len(second.updates(sid, "plan"))
        assert await second.prompt(sid, "the parser is written") == "end_turn"
        merged = second.updates(sid, "plan")[before:]

    assert [(e["content"], e["status"]) for e in merged[-1]["entries"]] == [
        ("Write the parser", "completed"),
        ("Test the parser", "pending"),
    ]
