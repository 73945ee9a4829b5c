"""Spending limits through the real stdio server: a turn stopped before the request that would pass a
limit, prompts refused until it is raised, the 80 % notice, tokens for a model without a price, a
delegated child's spend, and ``/budget`` kept with the session across processes.

Costs come from scripted usage at the default model's list price ($2 in, $10 out per million
tokens): 100,000 input tokens cost $0.20. The fake refuses invalid histories, so a request it
answers after a stop proves the history stayed valid.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from acp_hermes.config import Settings
from acp_hermes.model.pricing import price_of
from acp_hermes.testing.scripted_model import MessageReply, ToolUseBlock, Usage
from tests.support.acp_harness import AgentProcess, running_agent, write_config
from tests.support.fake_anthropic import DelegationRouter, FakeAnthropic, next_tool_id, text_reply, texts_of

pytestmark = pytest.mark.anyio

STOPPED = "⛔ Budget reached"


def costing(usd: float) -> Usage:
    """Usage of the default model that costs ``usd`` (input tokens only)."""
    price = price_of(Settings().model, Settings())
    assert price is not None
    return Usage(input_tokens=round(usd * 1_000_000 / price.input), output_tokens=0)


def reading(usd: float) -> MessageReply:
    """The model reads notes.txt; its message cost ``usd``."""
    return MessageReply([ToolUseBlock(next_tool_id(), "read_file", {"path": "notes.txt"})], stop_reason="tool_use",
                        usage=costing(usd))


def budget_config(home: Path, lines: str) -> None:
    write_config(home, f"learning_loop: false\nbudget:\n{lines}")


async def workspace_agent_session(agent: AgentProcess) -> str:
    (agent.workspace / "notes.txt").write_text("short notes\n", encoding="utf-8")
    return await agent.new_session()


async def test_a_spent_session_budget_stops_the_turn_and_refuses_prompts_until_raised(
        tmp_path: Path, fake_anthropic: FakeAnthropic) -> None:
    budget_config(tmp_path / "hermes-home", "  session_usd: 0.5\n")
    fake_anthropic.script(reading(0.6), text_reply("Carrying on."))
    fake_anthropic.script_auxiliary(text_reply("A title", usage=Usage(10, 5)))
    async with running_agent(tmp_path, fake_anthropic) as agent:
        sid = await workspace_agent_session(agent)
        assert await agent.prompt(sid, "read the notes") == "end_turn"
        assert len(fake_anthropic.stream_requests) == 1  # the request past the limit never started
        finished = [u for u in agent.updates(sid, "tool_call_update") if u.get("status") == "completed"]
        assert len(finished) == 1  # the call the model made before ran and was kept
        text = agent.agent_text(sid)
        assert STOPPED in text and "this session has spent $0.60" in text and "`/budget <usd>`" in text

        assert await agent.prompt(sid, "go on") == "end_turn"
        assert len(fake_anthropic.stream_requests) == 1  # refused: the model was not asked
        assert agent.agent_text(sid).count(STOPPED) == 2

        assert await agent.prompt(sid, "/budget 5") == "end_turn"
        assert "- `session_usd`: $5.00" in agent.agent_text(sid)
        assert await agent.prompt(sid, "go on") == "end_turn"
        assert agent.agent_text(sid).endswith("Carrying on.")
    resumed = fake_anthropic.stream_requests[1]["messages"]
    said = [text for message in resumed for text in texts_of(message["content"])]
    assert "go on" in said and not any(STOPPED in text for text in said)  # the stop was shown, never sent


async def test_a_spent_turn_budget_ends_that_turn_only(tmp_path: Path, fake_anthropic: FakeAnthropic) -> None:
    budget_config(tmp_path / "hermes-home", "  turn_usd: 0.5\n")
    fake_anthropic.script(reading(0.6), text_reply("A fresh turn."))
    fake_anthropic.script_auxiliary(text_reply("A title"))
    async with running_agent(tmp_path, fake_anthropic) as agent:
        sid = await workspace_agent_session(agent)
        assert await agent.prompt(sid, "read the notes") == "end_turn"
        assert "this turn has spent $0.60" in agent.agent_text(sid)
        assert "Send another prompt to go on" in agent.agent_text(sid)
        assert await agent.prompt(sid, "what did they say?") == "end_turn"
        assert agent.agent_text(sid).endswith("A fresh turn.")
    assert len(fake_anthropic.stream_requests) == 2


async def test_tokens_bound_a_model_whose_price_is_unknown(tmp_path: Path, fake_anthropic: FakeAnthropic) -> None:
    write_config(tmp_path / "hermes-home", "learning_loop: false\nmodel: my-private-model\n"
                 "budget:\n  session_tokens: 1000\n  session_usd: 0.01\n")
    fake_anthropic.script(text_reply("Hello.", usage=Usage(800, 300)))
    async with running_agent(tmp_path, fake_anthropic) as agent:
        sid = await agent.new_session()
        assert await agent.prompt(sid, "hi") == "end_turn"
        assert await agent.prompt(sid, "and again") == "end_turn"
        text = agent.agent_text(sid)
        assert "1,100 tokens" in text and "this session's token budget (1,000 tokens)" in text
        assert await agent.prompt(sid, "/budget") == "end_turn"
        assert "price is unknown" in agent.agent_text(sid)
    assert len(fake_anthropic.stream_requests) == 1


async def test_the_80_percent_notice_comes_once(tmp_path: Path, fake_anthropic: FakeAnthropic) -> None:
    budget_config(tmp_path / "hermes-home", "  session_usd: 1.0\n")
    fake_anthropic.script(reading(0.85), text_reply("Read.", usage=costing(0.05)), text_reply("Again."))
    fake_anthropic.script_auxiliary(text_reply("A title"))
    async with running_agent(tmp_path, fake_anthropic) as agent:
        sid = await workspace_agent_session(agent)
        assert await agent.prompt(sid, "read the notes") == "end_turn"
        await agent.wait_for(lambda: "85% spent ($0.85 of $1.00)" in agent.agent_text(sid))
        assert await agent.prompt(sid, "once more") == "end_turn"
        text = agent.agent_text(sid)
    assert text.count("⚠️ This session's budget is") == 1
    assert STOPPED not in text


async def test_a_delegated_childs_spend_counts_toward_its_parents_budget(
        tmp_path: Path, fake_anthropic: FakeAnthropic) -> None:
    budget_config(tmp_path / "hermes-home", "  session_usd: 1.0\n")
    goal = "Count the TODO markers in src/"
    router = DelegationRouter().parent(
        MessageReply([ToolUseBlock("toolu_delegate", "delegate_task", {"goal": goal})], stop_reason="tool_use",
                     usage=costing(0.1)),
    ).child(
        goal,
        MessageReply([ToolUseBlock("toolu_search", "search_files", {"pattern": "TODO"})], stop_reason="tool_use",
                     usage=costing(1.2)),
    )
    fake_anthropic.script(*router.items())
    async with running_agent(tmp_path, fake_anthropic) as agent:
        parent = await agent.new_session()
        assert await agent.prompt(parent, "count the TODOs") == "end_turn"
        text = agent.agent_text(parent)
        assert STOPPED in text and "this session has spent $1.30" in text
        assert await agent.prompt(parent, "go on") == "end_turn"
        assert agent.agent_text(parent).count(STOPPED) == 2
    # The child's second request and the parent's second were never made: one each.
    assert len(fake_anthropic.stream_requests) == 2


async def test_a_budget_set_with_the_command_is_kept_with_the_session(
        tmp_path: Path, fake_anthropic: FakeAnthropic) -> None:
    budget_config(tmp_path / "hermes-home", "  session_usd: 10\n")
    async with running_agent(tmp_path, fake_anthropic) as agent:
        sid = await agent.new_session()
        assert await agent.prompt(sid, "/budget 2.5") == "end_turn"
        assert await agent.prompt(sid, "/budget turn 0.25") == "end_turn"
        assert await agent.prompt(sid, "/budget tokens lots") == "end_turn"
        assert "Not understood" in agent.agent_text(sid)

    async with running_agent(tmp_path, fake_anthropic) as loaded:
        await loaded.conn.load_session(session_id=sid, cwd=str(loaded.workspace), mcp_servers=[])
        assert await loaded.prompt(sid, "/usage") == "end_turn"
        shown = loaded.agent_text(sid)
        assert "- `session_usd`: $2.50 (0% used) (set for this session)" in shown
        assert "- `turn_usd`: $0.25 (0% used) (set for this session)" in shown
        assert await loaded.prompt(sid, "/budget reset") == "end_turn"
        assert "- `session_usd`: $10.00 (0% used)\n" in loaded.agent_text(sid)
    assert fake_anthropic.stream_requests == []
