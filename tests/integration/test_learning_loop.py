"""The Hermes half through the real stdio server: a nudge starting a background review that writes
memory visibly (and is replayed by a load), /memory, the turn-budget notes, and hints from files
the user attaches."""

from __future__ import annotations

from pathlib import Path

import pytest
from acp.schema import ResourceContentBlock, TextContentBlock

from tests.support.acp_harness import AgentProcess, running_agent, write_config
from tests.support.fake_anthropic import FakeAnthropic, text_reply, tool_reply
from tests.support.tool_checks import tool_result

pytestmark = pytest.mark.anyio


def review_cards(agent: AgentProcess, sid: str) -> list[dict[str, object]]:
    return [u for u in agent.updates(sid, "tool_call") if str(u["title"]).startswith("Review: ")]


async def test_a_nudge_starts_a_review_that_saves_memory_visibly(tmp_path: Path,
                                                                 fake_anthropic: FakeAnthropic) -> None:
    home = tmp_path / "hermes-home"
    write_config(home, "memory_nudge_interval: 2\nskill_nudge_interval: 0\n")
    fake_anthropic.script(
        text_reply("Hello Ada."),
        text_reply("Tabs it is."),
        tool_reply("memory", {"action": "add", "target": "user", "content": "Ada prefers tabs."}, id="toolu_rev"),
        text_reply("Saved."),
    )
    fake_anthropic.script_auxiliary(text_reply("Indentation"))
    async with running_agent(tmp_path, fake_anthropic, home=home) as agent:
        sid = await agent.new_session()
        await agent.conn.set_session_mode(session_id=sid, mode_id="accept-edits")
        assert await agent.prompt(sid, "I am Ada") == "end_turn"
        assert await agent.prompt(sid, "I like tabs") == "end_turn"  # the second user turn: a memory review
        await agent.wait_for(lambda: any(u.get("status") == "completed" and u["toolCallId"] == "toolu_rev"
                                         for u in agent.updates(sid, "tool_call_update")))
        assert [c["toolCallId"] for c in review_cards(agent, sid)] == ["toolu_rev"]
        assert await agent.prompt(sid, "/memory") == "end_turn"
        shown = agent.agent_text(sid)
    assert "Ada prefers tabs." in (home / "memories" / "USER.md").read_text()
    assert "- Ada prefers tabs." in shown and "User profile (USER.md)" in shown
    review_request = fake_anthropic.stream_requests[2]
    assert [t["name"] for t in review_request["tools"]] == ["memory", "skills_list", "skill_view", "skill_manage"]
    assert "Saved." not in str(fake_anthropic.stream_requests[-1:])  # the review's reply stays out of the session

    async with running_agent(tmp_path, fake_anthropic, home=home) as again:
        await again.conn.load_session(cwd=str(again.workspace), session_id=sid, mcp_servers=[])
        assert [c["toolCallId"] for c in review_cards(again, sid)] == ["toolu_rev"]


async def test_budget_notes_ride_on_tool_results_near_the_end_of_the_turn(tmp_path: Path,
                                                                          fake_anthropic: FakeAnthropic) -> None:
    write_config(tmp_path / "hermes-home", "max_iterations: 10\n")
    reads = [tool_reply("read_file", {"path": "a.txt"}, id=f"toolu_{n}") for n in range(1, 10)]
    fake_anthropic.script(*reads, text_reply("Done."))
    fake_anthropic.script_auxiliary(text_reply("Reading"))
    async with running_agent(tmp_path, fake_anthropic) as agent:
        (agent.workspace / "a.txt").write_text("alpha\n")
        sid = await agent.new_session()
        assert await agent.prompt(sid, "read it many times") == "end_turn"
    noted = [n for n in range(1, 10) if "[Turn budget:" in tool_result(fake_anthropic, f"toolu_{n}")[0]]
    assert noted == [7, 9]
    assert "Wrap up now" in tool_result(fake_anthropic, "toolu_9")[0]


async def test_an_attached_file_brings_its_directorys_hints_once(tmp_path: Path,
                                                                fake_anthropic: FakeAnthropic) -> None:
    fake_anthropic.script(text_reply("Noted."), text_reply("Again."))
    fake_anthropic.script_auxiliary(text_reply("API"))
    async with running_agent(tmp_path, fake_anthropic) as agent:
        api = agent.workspace / "api"
        api.mkdir()
        (api / "AGENTS.md").write_text("Every handler validates its input.\n")
        (api / "routes.py").write_text("ROUTES = []\n")
        sid = await agent.new_session()
        link = ResourceContentBlock(type="resource_link", uri=f"file://{api}/routes.py", name="routes.py")
        for question in ("look at this", "and again"):
            response = await agent.conn.prompt(session_id=sid, prompt=[TextContentBlock(type="text", text=question),
                                                                       link])
            assert response.stop_reason == "end_turn"
    first, second = (str(r["messages"][-1]) for r in fake_anthropic.stream_requests[:2])
    assert "Every handler validates its input." in first and "Every handler validates" not in second
