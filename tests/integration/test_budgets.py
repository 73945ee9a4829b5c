"""Spending limits through the real stdio server: a turn stopped before the request that would pass a
limit, prompts refused until it is raised, the 80 % notice, tokens for a model without a price, a
delegated child's spend, and ``/budget`` kept with the session across processes.

Costs come from scripted usage at the default model's list price (``costing``); titles are scripted
to cost nothing, so every figure shown is exact. The fake refuses invalid histories, so a request it
answers after a stop proves the history stayed valid.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from acp_hermes.config import Settings
from acp_hermes.model.pricing import price_of
from acp_hermes.testing.scripted_model import MessageReply, TextBlock, ToolUseBlock, Usage
from tests.support.acp_harness import AgentProcess, running_agent, write_config
from tests.support.fake_anthropic import (
    DelegationRouter,
    FakeAnthropic,
    is_subagent_request,
    next_tool_id,
    text_reply,
    texts_of,
)

pytestmark = pytest.mark.anyio

STOPPED = "⛔ Budget reached"
NOTICE = "⚠️ This session's budget is"
FREE = Usage(0, 0)  # a call that costs nothing (titles, here)


def costing(usd: float) -> Usage:
    """Usage of the default model that costs ``usd`` (input tokens only)."""
    price = price_of(Settings().model, Settings())
    assert price is not None
    return Usage(input_tokens=round(usd * 1_000_000 / price.input), output_tokens=0)


def reading(usage: Usage, text: str | None = None) -> MessageReply:
    """The model (optionally saying ``text`` first) reads notes.txt; its message's usage is ``usage``."""
    call = ToolUseBlock(next_tool_id(), "read_file", {"path": "notes.txt"})
    return MessageReply([*([TextBlock(text)] if text else []), call], stop_reason="tool_use", usage=usage)


def budget_config(home: Path, lines: str, extra: str = "") -> None:
    write_config(home, f"learning_loop: false\n{extra}budget:\n{lines}")


async def workspace_agent_session(agent: AgentProcess) -> str:
    (agent.workspace / "notes.txt").write_text("short notes\n", encoding="utf-8")
    return await agent.new_session()


def said(body: dict[str, Any]) -> list[str]:
    """Every text of a request's messages (tool results included)."""
    return [text for message in body["messages"] for text in texts_of(message["content"])]


def tool_use_ids(body: dict[str, Any]) -> list[str]:
    return [block["id"] for message in body["messages"] if isinstance(message["content"], list)
            for block in message["content"] if block.get("type") == "tool_use"]


def tool_result_ids(body: dict[str, Any]) -> list[str]:
    return [block["tool_use_id"] for message in body["messages"] if isinstance(message["content"], list)
            for block in message["content"] if block.get("type") == "tool_result"]


async def test_a_spent_session_budget_stops_the_turn_and_refuses_prompts_until_raised(
        tmp_path: Path, fake_anthropic: FakeAnthropic) -> None:
    budget_config(tmp_path / "hermes-home", "  session_usd: 0.5\n")
    first = reading(costing(0.6), "Let me look at the notes.")
    fake_anthropic.script(first, text_reply("Carrying on."))
    fake_anthropic.script_auxiliary(text_reply("A title", usage=FREE))
    async with running_agent(tmp_path, fake_anthropic) as agent:
        sid = await workspace_agent_session(agent)
        assert await agent.prompt(sid, "read the notes") == "end_turn"
        assert len(fake_anthropic.stream_requests) == 1  # the request past the limit never started
        finished = [u for u in agent.updates(sid, "tool_call_update") if u.get("status") == "completed"]
        assert len(finished) == 1  # the call the model made before ran and was kept
        text = agent.agent_text(sid)
        assert text.startswith("Let me look at the notes.")  # the partial answer stays in the chat
        assert "⛔ Budget reached: this session has spent $0.60 of this session's budget ($0.50)" in text
        assert "`/budget <usd>`" in text and "budget.session_usd" in text

        before = len(agent.updates(sid, "agent_message_chunk"))
        assert await agent.prompt(sid, "please go on") == "end_turn"
        assert len(fake_anthropic.stream_requests) == 1  # refused: the model was not asked
        refusal = "".join(u["content"]["text"] for u in agent.updates(sid, "agent_message_chunk")[before:])
        assert refusal.strip().startswith("⛔ Budget reached: this session has spent $0.60")

        assert await agent.prompt(sid, "/budget 5") == "end_turn"
        shown = agent.agent_text(sid)
        assert "Spent: $0.60 this session" in shown
        assert "- `session_usd`: $5.00 (12% used) (set for this session)" in shown
        assert await agent.prompt(sid, "go on") == "end_turn"
        assert agent.agent_text(sid).endswith("Carrying on.")
    assert len(fake_anthropic.stream_requests) == 2
    resumed = fake_anthropic.stream_requests[1]
    call_id = first.content[-1].id  # type: ignore[union-attr]
    assert tool_use_ids(resumed) == [call_id] and tool_result_ids(resumed) == [call_id]
    texts = said(resumed)
    assert "Let me look at the notes." in texts and any("short notes" in text for text in texts)
    assert "go on" in texts and not any("⛔" in text or "/budget" in text for text in texts)  # shown, never sent
    assert "please go on" not in texts  # the refused prompt is not the model's to read


async def test_a_spent_turn_budget_ends_that_turn_only(tmp_path: Path, fake_anthropic: FakeAnthropic) -> None:
    budget_config(tmp_path / "hermes-home", "  turn_usd: 0.5\n")
    fake_anthropic.script(reading(costing(0.6)), reading(costing(0.3)), text_reply("A fresh turn."))
    fake_anthropic.script_auxiliary(text_reply("A title", usage=FREE))
    async with running_agent(tmp_path, fake_anthropic) as agent:
        sid = await workspace_agent_session(agent)
        assert await agent.prompt(sid, "read the notes") == "end_turn"
        assert len(fake_anthropic.stream_requests) == 1
        text = agent.agent_text(sid)
        assert "⛔ Budget reached: this turn has spent $0.60 of the budget of one turn ($0.50)" in text
        assert "Send another prompt to go on" in text and "`/budget turn <usd>`" in text
        # The session has spent more than one turn may, yet the next turn starts afresh: $0.30 of its own is fine.
        assert await agent.prompt(sid, "what did they say?") == "end_turn"
        assert agent.agent_text(sid).endswith("A fresh turn.")
        assert agent.agent_text(sid).count(STOPPED) == 1
    assert len(fake_anthropic.stream_requests) == 3
    last = fake_anthropic.stream_requests[2]
    assert len(tool_result_ids(last)) == 2 and not any("⛔" in text for text in said(last))


async def test_tokens_bound_a_model_whose_price_is_unknown(tmp_path: Path, fake_anthropic: FakeAnthropic) -> None:
    # At the default model's price 400,000 input tokens would cost $0.80, past session_usd: the unpriced model
    # costs nothing in dollars, so only session_tokens can stop it.
    budget_config(tmp_path / "hermes-home", "  session_usd: 0.5\n  session_tokens: 500000\n",
                  extra="models: [my-private-model]\n")
    fake_anthropic.script(reading(Usage(400_000, 0)), text_reply("Read.", usage=Usage(149_000, 1_000)))
    fake_anthropic.script_auxiliary(text_reply("A title", usage=FREE))
    async with running_agent(tmp_path, fake_anthropic) as agent:
        sid = await workspace_agent_session(agent)
        await agent.conn.set_config_option(config_id="model", session_id=sid, value="my-private-model")
        assert await agent.prompt(sid, "read the notes") == "end_turn"
        text = agent.agent_text(sid)
        assert "Read." in text  # not stopped after the 400,000 tokens ($0 here) ...
        assert len(fake_anthropic.stream_requests) == 2
        assert fake_anthropic.stream_requests[-1]["model"] == "my-private-model"
        # ... and when the last request went past the tokens, the user hears it as the turn ends
        assert text.rstrip().endswith("or set `budget.session_tokens` in config.yaml (read when the agent starts).")
        assert ("⛔ Budget reached: this session has spent 550,000 tokens of this session's token budget "
                "(500,000 tokens), the turn's last model request went past it") in text

        assert await agent.prompt(sid, "and again") == "end_turn"
        text = agent.agent_text(sid)
        assert ("⛔ Budget reached: this session has spent 550,000 tokens of this session's token budget "
                "(500,000 tokens), so the agent stopped") in text and "`/budget tokens <n>`" in text
        assert await agent.prompt(sid, "/budget") == "end_turn"
        shown = agent.agent_text(sid)
        assert "Spent: 550,000 tokens this session" in shown and "price is unknown" in shown
        assert "- `session_tokens`: 500,000 tokens (reached: 550,000 tokens spent)" in shown
    assert len(fake_anthropic.stream_requests) == 2  # the refused prompt never reached the model


async def test_the_80_percent_notice_comes_once(tmp_path: Path, fake_anthropic: FakeAnthropic) -> None:
    budget_config(tmp_path / "hermes-home", "  session_usd: 1.0\n")
    fake_anthropic.script(reading(costing(0.85)), text_reply("Read.", usage=costing(0.05)),
                          text_reply("Again.", usage=costing(0.02)))
    fake_anthropic.script_auxiliary(text_reply("A title", usage=FREE))
    async with running_agent(tmp_path, fake_anthropic) as agent:
        sid = await workspace_agent_session(agent)
        assert await agent.prompt(sid, "read the notes") == "end_turn"
        await agent.wait_for(lambda: NOTICE in agent.agent_text(sid))  # told outside the turn's stream
        assert "⚠️ This session's budget is 85% spent ($0.85 of $1.00). Raise it with `/budget <usd>`" \
            in agent.agent_text(sid)
        assert await agent.prompt(sid, "once more") == "end_turn"  # 92 %: past the mark again, not told again
        assert await agent.prompt(sid, "/budget") == "end_turn"  # a later answer: any notice is out by now
        text = agent.agent_text(sid)
        assert "- `session_usd`: $1.00 (92% used)" in text
    assert text.count(NOTICE) == 1
    assert STOPPED not in text
    assert len(fake_anthropic.stream_requests) == 3


def requests_by(fake: FakeAnthropic) -> tuple[int, int]:
    """How many conversation requests the parent and its children made."""
    children = sum(is_subagent_request(body) for body in fake.stream_requests)
    return len(fake.stream_requests) - children, children


GOAL = "Count the TODO markers in src/"


def delegation(parent_usage: Usage, child_usage: Usage, *, parent_next: str) -> DelegationRouter:
    """The parent delegates GOAL and the child searches, each first message costing what is given; the
    parent's reply after that is ``parent_next``, which a budget that holds never lets be asked for."""
    return DelegationRouter().parent(
        MessageReply([ToolUseBlock("toolu_delegate", "delegate_task", {"goal": GOAL})], stop_reason="tool_use",
                     usage=parent_usage),
        text_reply(parent_next, usage=FREE),
    ).child(
        GOAL,
        MessageReply([ToolUseBlock("toolu_search", "search_files", {"pattern": "TODO"})], stop_reason="tool_use",
                     usage=child_usage),
    )


async def test_a_delegated_childs_spend_counts_toward_its_parents_budget(
        tmp_path: Path, fake_anthropic: FakeAnthropic) -> None:
    # Neither alone reaches the $1.00: the parent spends $0.10, the child $0.95 — together they do.
    budget_config(tmp_path / "hermes-home", "  session_usd: 1.0\n")
    router = delegation(costing(0.1), costing(0.95), parent_next="There are none.")
    router.child(GOAL, text_reply("No TODO markers.", usage=FREE))  # must never be asked for
    fake_anthropic.script(*router.items())
    fake_anthropic.script_auxiliary(text_reply("A title", usage=FREE))
    async with running_agent(tmp_path, fake_anthropic) as agent:
        parent = await agent.new_session()
        assert await agent.prompt(parent, "count the TODOs") == "end_turn"
        # The child stopped before its second request, the parent before its second.
        assert requests_by(fake_anthropic) == (1, 1)
        text = agent.agent_text(parent)
        assert "⛔ Budget reached: this session has spent $1.05 of this session's budget ($1.00)" in text
        assert "There are none." not in text

        assert await agent.prompt(parent, "go on") == "end_turn"
        assert agent.agent_text(parent).count(STOPPED) == 2  # refused: the recorded spend counts the child's
        assert await agent.prompt(parent, "/budget") == "end_turn"
        assert "Spent: $1.05 this session" in agent.agent_text(parent)
    assert requests_by(fake_anthropic) == (1, 1)


async def test_a_childs_cached_tokens_still_count_at_the_next_prompt(
        tmp_path: Path, fake_anthropic: FakeAnthropic) -> None:
    budget_config(tmp_path / "hermes-home", "  session_tokens: 5000\n")
    router = delegation(Usage(100, 0), Usage(100, 0, cache_read_input_tokens=5_000),
                        parent_next="Went on past the budget.")  # asked for only if the next prompt is not refused
    fake_anthropic.script(*router.items())
    fake_anthropic.script_auxiliary(text_reply("A title", usage=FREE))
    async with running_agent(tmp_path, fake_anthropic) as agent:
        parent = await agent.new_session()
        assert await agent.prompt(parent, "count the TODOs") == "end_turn"
        assert "this session has spent 5,200 tokens" in agent.agent_text(parent)  # live: cache reads count
        assert requests_by(fake_anthropic) == (1, 1)
        assert await agent.prompt(parent, "go on") == "end_turn"
        assert agent.agent_text(parent).count(STOPPED) == 2
    assert requests_by(fake_anthropic) == (1, 1)


async def test_budget_and_usage_show_the_spend_against_each_limit(
        tmp_path: Path, fake_anthropic: FakeAnthropic) -> None:
    budget_config(tmp_path / "hermes-home", "  session_usd: 2.0\n  session_tokens: 1000000\n")
    fake_anthropic.script(reading(costing(0.3)), text_reply("Read.", usage=costing(0.2)))
    fake_anthropic.script_auxiliary(text_reply("A title", usage=FREE))
    async with running_agent(tmp_path, fake_anthropic) as agent:
        sid = await workspace_agent_session(agent)
        assert await agent.prompt(sid, "/budget") == "end_turn"
        assert "Spent: $0.00 this session (0 tokens)" in agent.agent_text(sid)
        assert await agent.prompt(sid, "read the notes") == "end_turn"
        before = len(agent.agent_text(sid))
        assert await agent.prompt(sid, "/usage") == "end_turn"
        usage = agent.agent_text(sid)[before:]
        tokens = costing(0.3).input_tokens + costing(0.2).input_tokens
        assert "Model calls: 2." in usage and "Estimated cost: $0.5000." in usage
        assert "**Budget**" in usage
        assert f"Spent: $0.50 this session ({tokens:,} tokens), $0.50 in the last turn" in usage
        assert "- `session_usd`: $2.00 (25% used)\n" in usage
        assert "- `turn_usd`: none\n" in usage
        assert f"- `session_tokens`: 1,000,000 tokens ({tokens // 10_000}% used)" in usage

        before = len(agent.agent_text(sid))
        assert await agent.prompt(sid, "/budget turn $0.40") == "end_turn"
        shown = agent.agent_text(sid)[before:]
        # Between turns a turn's limit holds for the next turn, which starts afresh: no "125% used", and no
        # warning, though the last turn spent more than it.
        assert "- `turn_usd`: $0.40 a turn (the last turn spent $0.50) (set for this session)" in shown
        assert "⚠️" not in shown
        assert "- `session_usd`: $2.00 (25% used)\n" in shown  # the config's, untouched
        assert await agent.prompt(sid, "/budget tokens lots") == "end_turn"
        assert "Not understood: 'lots' is not an amount." in agent.agent_text(sid)
    assert len(fake_anthropic.stream_requests) == 2  # commands never reach the model


async def test_a_budget_set_with_the_command_is_kept_with_the_session(
        tmp_path: Path, fake_anthropic: FakeAnthropic) -> None:
    budget_config(tmp_path / "hermes-home", "  session_usd: 10\n  session_tokens: 90000\n")
    async with running_agent(tmp_path, fake_anthropic) as agent:
        sid = await agent.new_session()
        assert await agent.prompt(sid, "/budget 2.5") == "end_turn"
        assert await agent.prompt(sid, "/budget turn 0.25") == "end_turn"
        assert await agent.prompt(sid, "/budget tokens off") == "end_turn"
        assert await agent.prompt(sid, "/budget tokens lots") == "end_turn"  # not understood: nothing changes
        assert "Not understood" in agent.agent_text(sid)

    async with running_agent(tmp_path, fake_anthropic) as loaded:
        await loaded.conn.load_session(session_id=sid, cwd=str(loaded.workspace), mcp_servers=[])
        before = len(loaded.agent_text(sid))
        assert await loaded.prompt(sid, "/usage") == "end_turn"
        shown = loaded.agent_text(sid)[before:]
        assert "- `session_usd`: $2.50 (0% used) (set for this session)" in shown
        assert "- `turn_usd`: $0.25 a turn (the last turn spent $0.00) (set for this session)" in shown
        assert "- `session_tokens`: none (set for this session)" in shown  # "no limit" is kept too
        before = len(loaded.agent_text(sid))
        assert await loaded.prompt(sid, "/budget reset") == "end_turn"
        shown = loaded.agent_text(sid)[before:]
        assert "- `session_usd`: $10.00 (0% used)\n" in shown
        assert "- `turn_usd`: none\n" in shown
        assert "- `session_tokens`: 90,000 tokens (0% used)\n" in shown
    assert fake_anthropic.stream_requests == []


async def test_a_stop_and_a_refusal_are_replayed_and_still_hold_in_a_new_process(
        tmp_path: Path, fake_anthropic: FakeAnthropic) -> None:
    budget_config(tmp_path / "hermes-home", "  session_usd: 0.5\n")
    fake_anthropic.script(reading(costing(0.6)), text_reply("Carrying on."))
    fake_anthropic.script_auxiliary(text_reply("A title", usage=FREE))
    async with running_agent(tmp_path, fake_anthropic) as agent:
        sid = await workspace_agent_session(agent)
        assert await agent.prompt(sid, "read the notes") == "end_turn"
        assert await agent.prompt(sid, "go on") == "end_turn"
        assert agent.agent_text(sid).count(STOPPED) == 2
    assert len(fake_anthropic.stream_requests) == 1

    async with running_agent(tmp_path, fake_anthropic) as loaded:
        await loaded.conn.load_session(session_id=sid, cwd=str(loaded.workspace), mcp_servers=[])
        replayed = loaded.agent_text(sid)
        assert replayed.count(STOPPED) == 2  # the stop and the refusal, as they were shown
        prompts = "".join(u["content"]["text"] for u in loaded.updates(sid, "user_message_chunk"))
        assert "read the notes" in prompts and "go on" in prompts

        assert await loaded.prompt(sid, "still there?") == "end_turn"  # the spend is the SessionDB's: refused
        assert loaded.agent_text(sid).count(STOPPED) == 3
        assert len(fake_anthropic.stream_requests) == 1
        assert await loaded.prompt(sid, "/budget 1") == "end_turn"
        assert await loaded.prompt(sid, "go on") == "end_turn"
        assert loaded.agent_text(sid).endswith("Carrying on.")
    assert len(fake_anthropic.stream_requests) == 2
    resumed = fake_anthropic.stream_requests[1]
    texts = said(resumed)
    assert len(tool_result_ids(resumed)) == 1 and not any("⛔" in text for text in texts)
    assert "go on" in texts and "still there?" not in texts  # refused prompts are not the model's to read


async def test_a_turn_limit_passed_by_its_only_request_still_gets_its_stop_message(
        tmp_path: Path, fake_anthropic: FakeAnthropic) -> None:
    # One request goes from nothing straight past the turn's limit and the model ends the turn: nothing was
    # stopped, yet the user hears the limit was reached (no 80 % notice came either).
    budget_config(tmp_path / "hermes-home", "  turn_usd: 0.5\n")
    fake_anthropic.script(text_reply("All done.", usage=costing(0.6)), text_reply("Next.", usage=costing(0.1)))
    fake_anthropic.script_auxiliary(text_reply("A title", usage=FREE))
    async with running_agent(tmp_path, fake_anthropic) as agent:
        sid = await agent.new_session()
        assert await agent.prompt(sid, "do it") == "end_turn"
        text = agent.agent_text(sid)
        assert text.startswith("All done.")
        assert ("⛔ Budget reached: this turn has spent $0.60 of the budget of one turn ($0.50), the turn's last "
                "model request went past it. Send another prompt to go on") in text
        assert await agent.prompt(sid, "and then?") == "end_turn"  # the next turn starts afresh
        assert agent.agent_text(sid).endswith("Next.") and agent.agent_text(sid).count(STOPPED) == 1
    assert not any("⛔" in text for text in said(fake_anthropic.stream_requests[1]))  # shown, never sent


async def test_a_session_limit_passed_by_the_last_request_is_said_at_once(
        tmp_path: Path, fake_anthropic: FakeAnthropic) -> None:
    budget_config(tmp_path / "hermes-home", "  session_usd: 0.5\n")
    fake_anthropic.script(text_reply("All done.", usage=costing(0.7)))
    fake_anthropic.script_auxiliary(text_reply("A title", usage=FREE))
    async with running_agent(tmp_path, fake_anthropic) as agent:
        sid = await agent.new_session()
        assert await agent.prompt(sid, "do it") == "end_turn"
        assert ("⛔ Budget reached: this session has spent $0.70 of this session's budget ($0.50), the turn's last "
                "model request went past it. Raise it with `/budget <usd>`") in agent.agent_text(sid)
        assert await agent.prompt(sid, "more") == "end_turn"  # refused, as before
        assert agent.agent_text(sid).count(STOPPED) == 2
    assert len(fake_anthropic.stream_requests) == 1


async def test_a_new_limit_that_is_already_spent_is_warned_of(
        tmp_path: Path, fake_anthropic: FakeAnthropic) -> None:
    budget_config(tmp_path / "hermes-home", "  session_usd: 100\n")
    fake_anthropic.script(text_reply("Read.", usage=costing(0.6)))
    fake_anthropic.script_auxiliary(text_reply("A title", usage=FREE))
    async with running_agent(tmp_path, fake_anthropic) as agent:
        sid = await agent.new_session()
        assert await agent.prompt(sid, "/budget") == "end_turn"
        assert "- `session_usd`: $100.00 (0% used)" in agent.agent_text(sid)
        assert await agent.prompt(sid, "read") == "end_turn"
        before = len(agent.agent_text(sid))
        assert await agent.prompt(sid, "/budget") == "end_turn"
        assert "- `session_usd`: $100.00 (under 1% used)" in agent.agent_text(sid)[before:]  # $0.60: not "0%"

        before = len(agent.agent_text(sid))
        assert await agent.prompt(sid, "/budget 0.5") == "end_turn"
        shown = agent.agent_text(sid)[before:]
        assert "- `session_usd`: $0.50 (reached: $0.60 spent) (set for this session)" in shown
        assert ("⚠️ This session has already spent $0.60, more than the new limit of $0.50: new prompts are refused "
                "until it is raised.") in shown
        before = len(agent.agent_text(sid))
        assert await agent.prompt(sid, "/budget 2") == "end_turn"  # raised: nothing to warn of
        assert "⚠️" not in agent.agent_text(sid)[before:]
    assert len(fake_anthropic.stream_requests) == 1
