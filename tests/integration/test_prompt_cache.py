"""Prompt caching through the real stdio server: where the breakpoints go on every model request, that
stored history never carries them, the TTL from config, the cache share of a 30-turn session against
the simulated provider cache, and cache tokens in the session's usage and cost.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from acp_hermes.testing.scripted_model import MessageReply, ThinkingBlock, ToolUseBlock
from acp_hermes_memory.session_db import SessionDB, SessionRecord
from bench.cache_efficiency import (
    FIRST_MEASURED_TURN,
    TARGET_READ_SHARE,
    conversation_only,
    play,
    prepare_workspace,
    scenario,
    share_from,
)
from tests.support.acp_harness import AgentProcess, running_agent
from tests.support.fake_anthropic import FakeAnthropic, text_reply, thinking_then_text, tool_calls_reply, tool_reply

FIVE_MINUTES = {"type": "ephemeral"}
ONE_HOUR = {"type": "ephemeral", "ttl": "1h"}
UNCACHEABLE = {"thinking", "redacted_thinking"}
# claude-sonnet-5-5 (the default model), USD per million tokens.
INPUT_PRICE, OUTPUT_PRICE = 2.0, 10.0


def streamed(fake: FakeAnthropic) -> list[dict[str, Any]]:
    """The conversation requests (titles are separate, non-streamed calls)."""
    return [request for request in fake.requests if request.get("stream")]


def marked_blocks(request: dict[str, Any]) -> Iterator[tuple[str, int, int, dict[str, Any]]]:
    """Every block carrying cache_control: (where, message index or -1, block index, marker)."""
    for index, tool in enumerate(request.get("tools", [])):
        if "cache_control" in tool:
            yield "tools", -1, index, tool["cache_control"]
    for index, block in enumerate(request["system"]):
        if "cache_control" in block:
            yield "system", -1, index, block["cache_control"]
    for position, message in enumerate(request["messages"]):
        for index, block in enumerate(message["content"]):
            if "cache_control" in block:
                yield "messages", position, index, block["cache_control"]


def last_cacheable(message: dict[str, Any]) -> int:
    return max(i for i, block in enumerate(message["content"]) if block.get("type") not in UNCACHEABLE)


def assert_breakpoints(request: dict[str, Any], marker: dict[str, Any]) -> None:
    """The system prompt and the last cacheable block of each of the last three messages; nothing else."""
    marks = list(marked_blocks(request))
    assert 2 <= len(marks) <= 4
    assert all(found == marker for *_, found in marks)
    assert [(where, index) for where, _, index, _ in marks if where != "messages"] == [("system", 0)]
    assert len(request["system"]) == 1
    messages = request["messages"]
    expected = {(position, last_cacheable(messages[position])) for position in range(len(messages))[-3:]}
    assert {(position, index) for where, position, index, _ in marks if where == "messages"} == expected


def without_cache_control(value: Any) -> Any:
    if isinstance(value, dict):
        return {key: without_cache_control(item) for key, item in value.items() if key != "cache_control"}
    if isinstance(value, list):
        return [without_cache_control(item) for item in value]
    return value


def assert_history_only_grows(requests: list[dict[str, Any]]) -> None:
    """Each request resends the previous one's messages unchanged; old breakpoints are gone from them."""
    unmarked = 0
    for before, after in itertools.pairwise(requests):
        old = len(before["messages"])
        assert without_cache_control(after["messages"][:old]) == without_cache_control(before["messages"])
        marked_before = {p for where, p, _, _ in marked_blocks(before) if where == "messages"}
        marked_after = {p for where, p, _, _ in marked_blocks(after) if where == "messages"}
        moved_on = {p for p in marked_before if p < len(after["messages"]) - 3}
        assert not moved_on & marked_after
        unmarked += len(moved_on)
    assert unmarked >= len(requests) - 2


def stored_payloads(agent: AgentProcess) -> list[str]:
    with SessionDB(agent.home / "acp-hermes" / "state.db") as db:
        return [
            json.dumps(row.payload) for record in db.list_sessions()[0] for row in db.messages(record.id)
        ]


def session_record(agent: AgentProcess, session_id: str) -> SessionRecord:
    with SessionDB(agent.home / "acp-hermes" / "state.db") as db:
        record = db.get_session(session_id)
    assert record is not None
    return record


@pytest.mark.anyio
async def test_every_model_request_has_at_most_four_breakpoints_in_the_right_places(
    tmp_path: Path, fake_anthropic: FakeAnthropic
) -> None:
    fake = fake_anthropic
    (tmp_path / "workspace").mkdir()
    (tmp_path / "workspace" / "a.txt").write_text("alpha\n")
    (tmp_path / "workspace" / "b.txt").write_text("beta\n")
    fake.script(
        text_reply("Plain answer."),
        tool_reply("read_file", {"path": "a.txt"}),
        text_reply("a.txt holds alpha."),
        tool_calls_reply(("read_file", {"path": "a.txt"}), ("read_file", {"path": "b.txt"}), text="Both at once."),
        text_reply("alpha and beta."),
    )
    fake.script_auxiliary(text_reply("Caching walkthrough"))
    async with running_agent(tmp_path, fake) as first:
        sid = await first.new_session()
        assert await first.prompt(sid, "hello") == "end_turn"
        await first.wait_for_update(sid, "session_info_update")
        assert await first.prompt(sid, "what is in a.txt?") == "end_turn"
        assert await first.prompt(sid, "and both files?") == "end_turn"
        # With thinking on, assistant messages start with thinking blocks, which cannot be cached.
        await first.conn.set_config_option(config_id="thought_level", session_id=sid, value="low")
        fake.script(
            MessageReply([ThinkingBlock("which file?"), ToolUseBlock("toolu_think_read", "read_file",
                                                                      {"path": "b.txt"})], stop_reason="tool_use"),
            thinking_then_text("done reading", "b.txt holds beta."),
        )
        assert await first.prompt(sid, "think, then read b.txt") == "end_turn"
        fake.script(text_reply("Still thinking."))
        assert await first.prompt(sid, "one more") == "end_turn"
        assert stored_payloads(first) and not any("cache_control" in payload for payload in stored_payloads(first))
        workspace, home = first.workspace, first.home

    fake.script(text_reply("After the restart."))
    async with running_agent(tmp_path, fake, home=home, workspace=workspace) as second:
        await second.conn.load_session(cwd=str(workspace), session_id=sid, mcp_servers=[])
        assert await second.prompt(sid, "still cached?") == "end_turn"

    requests = streamed(fake)
    assert len(requests) == 9
    assert len(requests[0]["messages"]) == 1  # the very first request: the system prompt and one message
    for request in requests:
        assert_breakpoints(request, FIVE_MINUTES)
    assert all(len(list(marked_blocks(request))) == 4 for request in requests[2:])
    # A thinking-first assistant message has its breakpoint after the thinking block.
    thinking_request = requests[6]
    assistant = thinking_request["messages"][-2]
    assert [block["type"] for block in assistant["content"]] == ["thinking", "tool_use"]
    assert "cache_control" not in assistant["content"][0] and "cache_control" in assistant["content"][1]
    # The history only grows, across turns and across the restart.
    assert_history_only_grows(requests)


@pytest.mark.anyio
async def test_cache_ttl_comes_from_config_and_one_hour_writes_are_priced_as_such(tmp_path: Path) -> None:
    config = tmp_path / "hermes-home" / "acp-hermes" / "config.yaml"
    config.parent.mkdir(parents=True)
    config.write_text("cache_ttl: 1h\n", encoding="utf-8")
    prepare_workspace(tmp_path / "workspace")
    with FakeAnthropic(simulate_cache=True) as fake:
        async with running_agent(tmp_path, fake) as agent:
            sid = await agent.new_session()
            await play(agent, fake, sid, scenario(3))
            record = session_record(agent, sid)
        requests = streamed(fake)
        for request in requests:
            assert_breakpoints(request, ONE_HOUR)
        assert record.cache_write_tokens > 0 and record.cache_read_tokens > 0
        one_hour_write = INPUT_PRICE * 2
        expected = (
            record.input_tokens * INPUT_PRICE
            + record.output_tokens * OUTPUT_PRICE
            + record.cache_write_tokens * one_hour_write
            + record.cache_read_tokens * INPUT_PRICE * 0.1
        ) / 1_000_000
        assert record.estimated_cost_usd == pytest.approx(expected, rel=1e-9)


@pytest.mark.anyio
async def test_a_30_turn_session_reads_90_percent_of_its_input_from_the_cache_and_accounts_for_it(
    tmp_path: Path,
) -> None:
    prepare_workspace(tmp_path / "workspace")
    conversation_only(tmp_path / "hermes-home")
    with FakeAnthropic(simulate_cache=True) as fake:
        async with running_agent(tmp_path, fake) as agent:
            sid = await agent.new_session()
            figures = await play(agent, fake, sid, scenario(30))
            before_usage = len(agent.updates(sid, "agent_message_chunk"))
            assert await agent.prompt(sid, "/usage") == "end_turn"
            usage_text = "".join(
                u["content"]["text"] for u in agent.updates(sid, "agent_message_chunk")[before_usage:]
            )
            record = session_record(agent, sid)
            last_usage = agent.updates(sid, "usage_update")[-1]

    assert len(figures) == 30
    assert share_from(figures) >= TARGET_READ_SHARE
    assert all(turn.read_share >= TARGET_READ_SHARE for turn in figures if turn.number >= FIRST_MEASURED_TURN)
    assert figures[0].read_share < TARGET_READ_SHARE  # the first turn had to write the cache

    # What the provider reported is what the session recorded, request by request summed up.
    accounts = [account for turn in figures for account in turn.accounts]
    # the title (a free auxiliary call in this scenario) is the one call outside the turns
    assert record.api_call_count == len(accounts) + 1 == len(streamed(fake)) + 1
    assert record.input_tokens == sum(a.input_tokens for a in accounts)
    assert record.cache_read_tokens == sum(a.cache_read_input_tokens for a in accounts)
    assert record.cache_write_tokens == sum(a.cache_creation_input_tokens for a in accounts)
    five_minute_write = INPUT_PRICE * 1.25
    expected_cost = (
        record.input_tokens * INPUT_PRICE
        + record.output_tokens * OUTPUT_PRICE
        + record.cache_write_tokens * five_minute_write
        + record.cache_read_tokens * INPUT_PRICE * 0.1
    ) / 1_000_000
    assert record.estimated_cost_usd == pytest.approx(expected_cost, rel=1e-9)
    uncached_cost = (sum(a.total for a in accounts) * INPUT_PRICE + record.output_tokens * OUTPUT_PRICE) / 1e6
    assert record.estimated_cost_usd < uncached_cost / 3
    assert last_usage["cost"] == {"amount": round(record.estimated_cost_usd, 6), "currency": "USD"}
    assert usage_text.startswith(
        f"Model calls: {record.api_call_count}. Tokens — input {record.input_tokens:,}, output "
        f"{record.output_tokens:,}, cache read {record.cache_read_tokens:,}, cache write "
        f"{record.cache_write_tokens:,}. Estimated cost: ${record.estimated_cost_usd:.4f}.\n\n**Budget**\n"
    )
