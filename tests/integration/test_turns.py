"""Turns through the real stdio server: prompt conversion, streaming, stop reasons, cancel, queueing, usage.

The fake model records every request body, so each test checks both what the editor saw and what
the product actually asked the model.
"""

from __future__ import annotations

import base64
import time
from pathlib import Path
from typing import Any

import anyio
import pytest
from acp import (
    audio_block,
    embedded_blob_resource,
    embedded_text_resource,
    image_block,
    resource_block,
    resource_link_block,
    text_block,
)

from acp_hermes.config import Settings
from acp_hermes.core.attachments import INLINE_FILE_LIMIT
from acp_hermes.model.pricing import context_window, price_of
from acp_hermes.testing.scripted_model import (
    MessageReply,
    TextBlock,
    ThinkingBlock,
    ToolUseBlock,
    Usage,
)
from tests.support.acp_harness import Prompts, running_agent, write_config
from tests.support.fake_anthropic import FakeAnthropic, next_tool_id, slow_text_reply, text_reply, tool_reply

DEFAULT_MODEL = Settings().model
CANCEL_DEADLINE = 0.5  # seconds from session/cancel to the cancelled response (the bound)



def text_of(content: list[dict[str, Any]]) -> str:
    return "\n".join(block.get("text", "") for block in content if block.get("type") == "text")


# ----------------------------------------------------------------------------------------------------
# prompt content


@pytest.mark.anyio
async def test_every_content_block_type_reaches_the_model(tmp_path: Path, fake_anthropic: FakeAnthropic) -> None:
    fake_anthropic.script(text_reply("Seen it all."))
    fake_anthropic.script_auxiliary(text_reply("A title"))
    files = tmp_path / "files"
    files.mkdir()
    small = files / "small.py"
    small.write_text("SMALL_FILE_MARKER = 1\n", encoding="utf-8")
    big = files / "big.log"
    big.write_text("BIG_FILE_MARKER\n" * (INLINE_FILE_LIMIT // 16 + 1), encoding="utf-8")
    assert big.stat().st_size > INLINE_FILE_LIMIT
    png = base64.b64encode(b"\x89PNG\r\n\x1a\n" + b"\x00" * 32).decode("ascii")
    blob = base64.b64encode(b"\x00\x01\x02BLOB_MARKER").decode("ascii")

    prompt = [
        text_block("Please look at all of this."),
        image_block(png, "image/png"),
        resource_block(embedded_text_resource("file:///proj/notes.md", "EMBEDDED_MARKER", mime_type="text/markdown")),
        resource_block(embedded_blob_resource("file:///proj/data.bin", blob, mime_type="application/octet-stream")),
        resource_link_block("small.py", small.as_uri()),
        resource_link_block("big.log", big.as_uri()),
        resource_link_block("docs", "https://example.com/docs/guide"),
        audio_block(base64.b64encode(b"RIFF....WAVE").decode("ascii"), "audio/wav"),
    ]
    async with running_agent(tmp_path, fake_anthropic) as agent:
        sid = await agent.new_session()
        response = await agent.conn.prompt(session_id=sid, prompt=prompt)
        assert response.stop_reason == "end_turn"

    user = fake_anthropic.stream_requests[0]["messages"][0]
    assert user["role"] == "user"
    blocks = user["content"]
    assert len(blocks) >= len(prompt)
    text, image, embedded, binary, inlined, referenced, remote, audio = blocks[: len(prompt)]

    assert text["text"] == "Please look at all of this."
    assert image["type"] == "image"
    assert image["source"] == {"type": "base64", "media_type": "image/png", "data": png}
    assert "file:///proj/notes.md" in embedded["text"] and "EMBEDDED_MARKER" in embedded["text"]
    assert embedded["text"].index("file:///proj/notes.md") < embedded["text"].index("EMBEDDED_MARKER")
    assert embedded["text"].rstrip().endswith(">")  # delimited: opened and closed around the text
    assert "file:///proj/data.bin" in binary["text"] and "BLOB_MARKER" not in binary["text"]
    assert small.as_uri() in inlined["text"] and "SMALL_FILE_MARKER = 1" in inlined["text"]
    assert big.as_uri() in referenced["text"] and "BIG_FILE_MARKER" not in referenced["text"]
    assert "https://example.com/docs/guide" in remote["text"]
    assert "audio" in audio["text"].lower() and "not supported" in audio["text"]
    everything = text_of(blocks)
    assert "BIG_FILE_MARKER" not in everything and "BLOB_MARKER" not in everything


# ----------------------------------------------------------------------------------------------------
# streaming and stop reasons


@pytest.mark.anyio
async def test_text_and_thinking_stream_with_one_message_id_per_model_message(
    tmp_path: Path, fake_anthropic: FakeAnthropic
) -> None:
    first = MessageReply(
        [
            ThinkingBlock("Let me think about the notes.", chunks=3),
            TextBlock("Reading the notes.", chunks=3),
            ToolUseBlock(next_tool_id(), "read_file", {"path": "notes.txt"}, chunks=3),
        ],
        stop_reason="tool_use",
    )
    fake_anthropic.script(first, text_reply("The notes say hello.", chunks=4))
    fake_anthropic.script_auxiliary(text_reply("A title"))
    async with running_agent(tmp_path, fake_anthropic) as agent:
        (agent.workspace / "notes.txt").write_text("hello\n", encoding="utf-8")
        sid = await agent.new_session()
        assert await agent.prompt(sid, "What do my notes say?") == "end_turn"
        thoughts = agent.updates(sid, "agent_thought_chunk")
        chunks = agent.updates(sid, "agent_message_chunk")

    assert len(thoughts) == 3 and len(chunks) == 7  # streamed delta by delta, not buffered
    assert "".join(t["content"]["text"] for t in thoughts) == "Let me think about the notes."
    assert "".join(c["content"]["text"] for c in chunks) == "Reading the notes.The notes say hello."
    first_ids = {u["messageId"] for u in thoughts} | {c["messageId"] for c in chunks[:3]}
    second_ids = {c["messageId"] for c in chunks[3:]}
    assert len(first_ids) == 1 and len(second_ids) == 1
    assert first_ids != second_ids
    assert all(u["messageId"] for u in thoughts + chunks)


@pytest.mark.anyio
async def test_stop_reasons_follow_the_model(tmp_path: Path, fake_anthropic: FakeAnthropic) -> None:
    fake_anthropic.script(
        text_reply("All done."),
        text_reply("This answer is cut o", stop_reason="max_tokens"),
        text_reply("I can't help with that.", stop_reason="refusal"),
    )
    fake_anthropic.script_auxiliary(text_reply("A title"))
    async with running_agent(tmp_path, fake_anthropic) as agent:
        sid = await agent.new_session()
        assert await agent.prompt(sid, "finish") == "end_turn"
        await agent.wait_for_update(sid, "session_info_update")
        assert await agent.prompt(sid, "write a lot") == "max_tokens"
        assert await agent.prompt(sid, "something bad") == "refusal"
    assert len(fake_anthropic.stream_requests) == 3


@pytest.mark.anyio
async def test_iteration_budget_ends_the_turn_with_max_turn_requests(
    tmp_path: Path, fake_anthropic: FakeAnthropic
) -> None:
    write_config(tmp_path / "hermes-home", "max_iterations: 2\n")
    fake_anthropic.script(
        tool_reply("read_file", {"path": "notes.txt"}),
        tool_reply("read_file", {"path": "notes.txt"}),
        tool_reply("read_file", {"path": "notes.txt"}),  # a third call would be over budget: never asked for
    )
    fake_anthropic.script_auxiliary(text_reply("A title"))
    async with running_agent(tmp_path, fake_anthropic) as agent:
        (agent.workspace / "notes.txt").write_text("loop forever\n", encoding="utf-8")
        sid = await agent.new_session()
        assert await agent.prompt(sid, "keep reading") == "max_turn_requests"
        await agent.wait_for_update(sid, "session_info_update")  # the title's reply is used up too: no race
        finished = [u for u in agent.updates(sid, "tool_call_update") if u.get("status") == "completed"]
    assert len(fake_anthropic.stream_requests) == 2
    assert len(finished) == 2
    assert fake_anthropic.unused_replies == 1


# ----------------------------------------------------------------------------------------------------
# cancel and queueing


@pytest.mark.anyio
async def test_cancel_stops_the_stream_promptly_and_the_session_goes_on(
    tmp_path: Path, fake_anthropic: FakeAnthropic
) -> None:
    fake_anthropic.script(
        text_reply("Hello there."),
        slow_text_reply(200, 0.05),  # ten seconds if nobody stops it
        text_reply("Back again."),
    )
    fake_anthropic.script_auxiliary(text_reply("A title"))
    async with running_agent(tmp_path, fake_anthropic) as agent:
        sid = await agent.new_session()
        await agent.conn.cancel(session_id=sid)  # idle: nothing to stop, nothing breaks
        assert await agent.prompt(sid, "hi") == "end_turn"
        await agent.wait_for_update(sid, "session_info_update")

        async with anyio.create_task_group() as group:
            prompts = Prompts(agent, group)
            await prompts.start("slow", sid, "tell me a long story")
            await agent.wait_for(lambda: "word0" in agent.agent_text(sid))
            cancelled_at = time.monotonic()
            await agent.conn.cancel(session_id=sid)
            await prompts.done["slow"].wait()
            elapsed = time.monotonic() - cancelled_at
        assert prompts.results["slow"] == "cancelled"
        assert elapsed < CANCEL_DEADLINE, f"prompt answered {elapsed:.3f}s after session/cancel"
        assert await fake_anthropic.wait_for_disconnect_async() == 2  # the slow stream's request was hung up on

        assert await agent.prompt(sid, "are you still there?") == "end_turn"
        assert agent.agent_text(sid).endswith("Back again.")
    last = fake_anthropic.stream_requests[-1]["messages"]
    assert "are you still there?" in text_of(last[-1]["content"])


@pytest.mark.anyio
async def test_prompt_during_a_turn_is_queued_and_runs_next(tmp_path: Path, fake_anthropic: FakeAnthropic) -> None:
    fake_anthropic.script(
        slow_text_reply(40, 0.05, text="First answer, slowly streamed to the editor."),
        text_reply("Second answer."),
    )
    fake_anthropic.script_auxiliary(text_reply("A title"))
    async with running_agent(tmp_path, fake_anthropic) as agent:
        sid = await agent.new_session()
        async with anyio.create_task_group() as group:
            prompts = Prompts(agent, group)
            await prompts.start("first", sid, "question one")
            await agent.wait_for(lambda: bool(agent.updates(sid, "agent_message_chunk")))
            await prompts.start("second", sid, "question two")
        assert prompts.results == {"first": "end_turn", "second": "end_turn"}
        assert prompts.finished == ["first", "second"]
        assert agent.agent_text(sid) == "First answer, slowly streamed to the editor.Second answer."

    first_request, second_request = fake_anthropic.stream_requests
    assert len(first_request["messages"]) == 1
    history = second_request["messages"]
    assert [m["role"] for m in history] == ["user", "assistant", "user"]
    assert "question one" in text_of(history[0]["content"])
    assert text_of(history[1]["content"]) == "First answer, slowly streamed to the editor."
    assert "question two" in text_of(history[2]["content"])


@pytest.mark.anyio
async def test_cancel_also_ends_queued_prompts_but_not_later_ones(
    tmp_path: Path, fake_anthropic: FakeAnthropic
) -> None:
    fake_anthropic.script(slow_text_reply(200, 0.05), text_reply("Fresh start."))
    async with running_agent(tmp_path, fake_anthropic) as agent:
        sid = await agent.new_session()
        async with anyio.create_task_group() as group:
            prompts = Prompts(agent, group)
            await prompts.start("running", sid, "a long job")
            await agent.wait_for(lambda: bool(agent.updates(sid, "agent_message_chunk")))
            await prompts.start("queued", sid, "and then this")
            await agent.conn.cancel(session_id=sid)
        assert prompts.results == {"running": "cancelled", "queued": "cancelled"}

        assert await agent.prompt(sid, "after the cancel") == "end_turn"
        assert agent.agent_text(sid).endswith("Fresh start.")
    requests = fake_anthropic.stream_requests
    assert len(requests) == 2  # the queued prompt never reached the model
    assert "and then this" not in text_of([b for m in requests[1]["messages"] for b in m["content"]])


# ----------------------------------------------------------------------------------------------------
# usage


def scripted_usage(input_tokens: int, output_tokens: int, cache_read: int, cache_write: int) -> Usage:
    return Usage(input_tokens, output_tokens, cache_read_input_tokens=cache_read,
                 cache_creation_input_tokens=cache_write)


def expected_cost(model: str, *calls: Usage) -> float:
    """pricing.py's list price applied by hand: cache reads at 0.1x input, 5-minute cache writes at 1.25x."""
    price = price_of(model, Settings())
    assert price is not None and price.cache_read is None and price.cache_write_5m is None
    return sum(
        u.input_tokens * price.input + u.output_tokens * price.output
        + u.cache_read_input_tokens * price.input * 0.1 + u.cache_creation_input_tokens * price.input * 1.25
        for u in calls
    ) / 1_000_000


@pytest.mark.anyio
async def test_usage_update_reports_context_and_cost_per_turn_and_session(
    tmp_path: Path, fake_anthropic: FakeAnthropic
) -> None:
    write_config(tmp_path / "hermes-home", "models: [my-private-model]\n")
    exploring = scripted_usage(5_000, 40, 0, 0)
    answering = scripted_usage(100, 20, 300, 50)
    second = scripted_usage(200, 30, 400, 0)
    naming = scripted_usage(2_000, 10, 0, 0)  # the title, written by the auxiliary model
    fake_anthropic.script(
        MessageReply([ToolUseBlock(next_tool_id(), "read_file", {"path": "notes.txt"})], usage=exploring),
        text_reply("The notes are short.", usage=answering),
        text_reply("Still short.", usage=second),
        text_reply("Local model answer.", usage=scripted_usage(10, 5, 0, 0)),
    )
    fake_anthropic.script_auxiliary(text_reply("A title", usage=naming))
    async with running_agent(tmp_path, fake_anthropic) as agent:
        (agent.workspace / "notes.txt").write_text("short\n", encoding="utf-8")
        sid = await agent.new_session()
        await agent.wait_for_update(sid, "usage_update")
        before = len(agent.updates(sid, "usage_update"))

        assert await agent.prompt(sid, "read my notes") == "end_turn"
        after_first = agent.updates(sid, "usage_update")[-1]
        assert len(agent.updates(sid, "usage_update")) == before + 1
        await agent.wait_for_update(sid, "session_info_update")
        assert await agent.prompt(sid, "again") == "end_turn"
        after_second = agent.updates(sid, "usage_update")[-1]

        await agent.conn.set_config_option(config_id="model", session_id=sid, value="my-private-model")
        assert await agent.prompt(sid, "and with the local model?") == "end_turn"
        unpriced = agent.updates(sid, "usage_update")[-1]

    # used: the context of the turn's last model call (input + cache read + cache write + output), not a sum
    assert after_first["used"] == 100 + 300 + 50 + 20
    assert after_first["size"] == context_window(DEFAULT_MODEL, Settings())
    first_cost = expected_cost(DEFAULT_MODEL, exploring, answering)
    assert after_first["cost"]["currency"] == "USD"
    assert after_first["cost"]["amount"] == pytest.approx(first_cost, abs=1e-6)

    assert after_second["used"] == 200 + 400 + 30
    # the session pays for its title too, at the auxiliary model's price
    session_cost = first_cost + expected_cost(Settings().auxiliary_model, naming) + expected_cost(DEFAULT_MODEL, second)
    assert after_second["cost"]["amount"] == pytest.approx(session_cost, abs=1e-6)

    assert unpriced["used"] == 15
    assert unpriced["size"] == context_window("my-private-model", Settings())
    assert "cost" not in unpriced
    assert fake_anthropic.stream_requests[-1]["model"] == "my-private-model"
