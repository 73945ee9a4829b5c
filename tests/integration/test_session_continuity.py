"""Sessions carry on: the todo plan survives a restart, and a session gets a title even when its
first turn was cancelled."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from tests.support.acp_harness import running_agent
from tests.support.fake_anthropic import FakeAnthropic, slow_text_reply, text_reply, tool_reply


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
    )
    fake_anthropic.script_auxiliary(text_reply("Parser plan"))
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
        # As live, the plan stands for the call's raw output; stored, that output restores the tool (below).
        assert "rawOutput" not in replayed[0] and second.updates(sid, "plan")
        gauge = await second.wait_for_update(sid, "usage_update")
        system_prompt = fake_anthropic.stream_requests[0]["system"][0]["text"]
        assert gauge["used"] > len(system_prompt) // 4  # an estimate of the reloaded context, not zero
        before = len(second.updates(sid, "plan"))
        assert await second.prompt(sid, "the parser is written") == "end_turn"
        merged = second.updates(sid, "plan")[before:]

    assert [(e["content"], e["status"]) for e in merged[-1]["entries"]] == [
        ("Write the parser", "completed"),
        ("Test the parser", "pending"),
    ]


@pytest.mark.anyio
async def test_a_session_whose_first_turn_was_cancelled_is_named_after_its_first_completed_turn(
    tmp_path: Path, fake_anthropic: FakeAnthropic
) -> None:
    fake_anthropic.script(slow_text_reply(200, 0.05), text_reply("Done."))
    fake_anthropic.script_auxiliary(text_reply("Parser refactor"))
    async with running_agent(tmp_path, fake_anthropic) as agent:
        sid = await agent.new_session()
        async with anyio.create_task_group() as group:
            outcome: list[str] = []

            async def first() -> None:
                outcome.append(await agent.prompt(sid, "start the refactor"))

            group.start_soon(first)
            await agent.wait_for_update(sid, "agent_message_chunk")
            await agent.conn.cancel(session_id=sid)
        assert outcome == ["cancelled"]
        assert not agent.updates(sid, "session_info_update")
        assert await agent.prompt(sid, "refactor the parser") == "end_turn"
        named = await agent.wait_for_update(sid, "session_info_update")
    assert named["title"] == "Parser refactor"
