"""Slash commands through the real stdio server: answered locally (no model call) with readable text,
option changes announced to the editor, the title set, sessions searched; an unknown /word goes to
the model unchanged."""

from __future__ import annotations

from pathlib import Path

import pytest

from acp_hermes.core.commands import INIT_INSTRUCTION
from tests.support.acp_harness import AgentProcess, EditorClient, choose, running_agent
from tests.support.fake_anthropic import FakeAnthropic, text_reply, tool_reply
from tests.support.tool_checks import asked_ids

pytestmark = pytest.mark.anyio


async def reply(agent: AgentProcess, sid: str, line: str) -> str:
    before = len(agent.agent_text(sid))
    assert await agent.prompt(sid, line) == "end_turn"
    return agent.agent_text(sid)[before:]


async def test_local_commands_answer_without_the_model(tmp_path: Path, fake_anthropic: FakeAnthropic) -> None:
    fake_anthropic.script(text_reply("The zephyrine parser is done."), text_reply("Passed on as written."))
    fake_anthropic.script_auxiliary(text_reply("Zephyrine parser"))
    async with running_agent(tmp_path, fake_anthropic) as agent:
        earlier = await agent.new_session()
        assert await agent.prompt(earlier, "finish the zephyrine parser") == "end_turn"
        await agent.wait_for_update(earlier, "session_info_update")  # its title, for /search to show
        sid = await agent.new_session()
        requests = len(fake_anthropic.stream_requests)

        assert "`/model [model name]`" in await reply(agent, sid, "/help")
        assert "now `plan`" in await reply(agent, sid, "/mode plan")
        assert agent.updates(sid, "current_mode_update")[-1]["currentModeId"] == "plan"
        assert "now `high`" in await reply(agent, sid, "/thinking high")
        assert "Model: `claude-sonnet-5-5`" in await reply(agent, sid, "/model")
        assert "unknown model 'claude-nope'" in await reply(agent, sid, "/model claude-nope")
        assert "No MCP servers in this session" in await reply(agent, sid, "/mcp")
        assert "mode: plan" in await reply(agent, sid, "/permissions")
        assert "“Release checklist”" in await reply(agent, sid, "/title Release checklist")
        assert agent.updates(sid, "session_info_update")[-1]["title"] == "Release checklist"
        found = await reply(agent, sid, "/search zephyrine")
        assert f"`{earlier}`" in found and "Zephyrine parser" in found
        assert len(fake_anthropic.stream_requests) == requests  # none of them called the model

        await reply(agent, sid, "/frobnicate the widgets")
        assert "/frobnicate the widgets" in str(fake_anthropic.stream_requests[-1]["messages"][-1])


async def test_init_is_a_model_turn_whose_write_asks_like_any_edit(tmp_path: Path,
                                                                   fake_anthropic: FakeAnthropic) -> None:
    fake_anthropic.script(
        tool_reply("write_file", {"path": "AGENTS.md", "content": "# Agents\n\nRun `make test`.\n"}, id="toolu_w"),
        text_reply("Drafted AGENTS.md."),
    )
    fake_anthropic.script_auxiliary(text_reply("Project instructions"))
    client = EditorClient(policy=choose("allow_once"))
    async with running_agent(tmp_path, fake_anthropic, client=client) as agent:
        sid = await agent.new_session()
        assert await agent.prompt(sid, "/init mention the Makefile") == "end_turn"
        workspace = agent.workspace
    sent = str(fake_anthropic.stream_requests[0]["messages"][-1])
    assert INIT_INSTRUCTION[:60] in sent and "mention the Makefile" in sent
    assert asked_ids(client) == ["toolu_w"] and (workspace / "AGENTS.md").read_text().startswith("# Agents")


@pytest.mark.parametrize(("answer", "written"), [("allow_once", True), ("reject_once", False)])
async def test_export_writes_the_conversation_as_markdown_after_asking(
    tmp_path: Path, fake_anthropic: FakeAnthropic, answer: str, written: bool
) -> None:
    fake_anthropic.script(text_reply("The parser is a recursive-descent one."))
    fake_anthropic.script_auxiliary(text_reply("Parser design"))
    client = EditorClient(policy=choose(answer))
    async with running_agent(tmp_path, fake_anthropic, client=client) as agent:
        sid = await agent.new_session()
        assert await agent.prompt(sid, "how does the parser work?") == "end_turn"
        await agent.wait_for_update(sid, "session_info_update")
        (agent.workspace / "notes").mkdir()  # /export writes into an existing folder, never makes one
        said = await reply(agent, sid, "/export notes/parser.md")
        card = next(u for u in agent.updates(sid, "tool_call") if u["title"].startswith("Export"))
        target = agent.workspace / "notes" / "parser.md"
    assert [r["toolCall"]["toolCallId"] for r in client.permission_requests] == [card["toolCallId"]]
    assert client.permission_requests[0]["toolCall"]["content"][0]["type"] == "diff"
    assert target.exists() is written
    if written:
        exported = target.read_text()
        assert exported.startswith("# Parser design") and "## You\n\nhow does the parser work?" in exported
        assert "recursive-descent" in exported and "Exported the conversation" in said
    else:  # in the user's words: no instructions meant for the model
        assert said.strip() == "Not done: you rejected it."


async def test_commands_and_replies_are_replayed_but_never_sent_to_the_model(
    tmp_path: Path, fake_anthropic: FakeAnthropic
) -> None:
    fake_anthropic.script(text_reply("Hi there."), text_reply("Still here."))
    fake_anthropic.script_auxiliary(text_reply("Greeting"))
    async with running_agent(tmp_path, fake_anthropic) as agent:
        sid = await agent.new_session()
        assert await agent.prompt(sid, "hello") == "end_turn"
        help_text = await reply(agent, sid, "/help")
        title_text = await reply(agent, sid, "/title Release checklist")

    async with running_agent(tmp_path, fake_anthropic) as reloaded:
        await reloaded.conn.load_session(cwd=str(reloaded.workspace), session_id=sid, mcp_servers=[])
        shown = [(u["sessionUpdate"], u["content"]["text"]) for u in reloaded.updates(sid)
                 if u["sessionUpdate"] in ("user_message_chunk", "agent_message_chunk")]
        assert shown == [
            ("user_message_chunk", "hello"), ("agent_message_chunk", "Hi there."),
            ("user_message_chunk", "/help"), ("agent_message_chunk", help_text),
            ("user_message_chunk", "/title Release checklist"), ("agent_message_chunk", title_text),
        ]
        assert await reloaded.prompt(sid, "are you there?") == "end_turn"
    sent = str(fake_anthropic.stream_requests[-1]["messages"])
    assert "hello" in sent and "are you there?" in sent
    assert "/help" not in sent and "Commands:" not in sent and "Release checklist" not in sent
