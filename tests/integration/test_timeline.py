"""A conversation's timeline through the real stdio server (issue 32, points 1-3).

Fork at a message (``messageId`` and AIR's ``_meta.jetbrains.air.fork``): the fork ends at that message
(a model message keeps its tool results, so the next request is one the fake that refuses unpaired
histories accepts), the original is untouched, and the answer says files are not forked with the
``/rollback`` that matches. ``session/rewind`` and ``session/edit_prompt`` (Session Rewind v2) truncate,
send ``history_truncated`` and go on. Every chunk carries a ``messageId``, the same live and in
replay, and every tool call its ``name``. The wire is checked against the unstable schema with the
drafts' shapes (``tests/fixtures/acp/timeline-drafts.schema.json``); a client checked against the
stable schema sees nothing it does not know in the same flows.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import anyio
import pytest
from acp import RequestError

from tests.support.acp_harness import CANCEL_LIMIT, AgentProcess, PromptTask, running_agent
from tests.support.fake_anthropic import (
    FakeAnthropic,
    slow_text_reply,
    text_reply,
    texts_of,
    thinking_then_text,
    tool_reply,
)
from tests.support.schema_check import RELEASE_UNSTABLE_SCHEMA_PATH, UNSTABLE_SCHEMA_PATH, AcpSchema, with_drafts

pytestmark = pytest.mark.anyio

needs_git = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed: checkpoints are off")
CHUNKS = ("agent_message_chunk", "agent_thought_chunk", "user_message_chunk")


def drafts() -> AcpSchema:
    """The newest unstable schema there is here, with the drafts' shapes."""
    path = UNSTABLE_SCHEMA_PATH if UNSTABLE_SCHEMA_PATH.exists() else RELEASE_UNSTABLE_SCHEMA_PATH
    return with_drafts(str(path))


async def prompt(agent: AgentProcess, sid: str, text: str, message_id: str | None = None) -> dict[str, Any]:
    params: dict[str, Any] = {"sessionId": sid, "prompt": [{"type": "text", "text": text}]}
    if message_id is not None:
        params["messageId"] = message_id
    result: dict[str, Any] = await agent.conn._conn.send_request("session/prompt", params)
    return result


def agent_ids(agent: AgentProcess, sid: str) -> list[str]:
    """The ids of the agent's messages in the order they were shown (each once)."""
    ids: list[str] = []
    for update in agent.updates(sid, "agent_message_chunk"):
        if update["messageId"] not in ids:
            ids.append(update["messageId"])
    return ids


def said(messages: list[dict[str, Any]]) -> str:
    return " | ".join(" ".join(texts_of(message["content"])) for message in messages)


def fork_params(form: str, sid: str, workspace: Path, message_id: str) -> dict[str, Any]:
    params: dict[str, Any] = {"sessionId": sid, "cwd": str(workspace), "mcpServers": []}
    if form == "messageId":
        params["messageId"] = message_id
    else:
        params["_meta"] = {"jetbrains": {"air": {"fork": {"version": 1, "messageId": message_id}}}}
    return params


@needs_git
@pytest.mark.parametrize("form", ["messageId", "air"])
async def test_fork_at_a_message_inside_a_tool_exchange(tmp_path: Path, fake_anthropic: FakeAnthropic,
                                                        form: str) -> None:
    """The fork keeps the model message that called a tool and its result, nothing after; its next
    request is accepted; the original goes on whole; the answer names the matching /rollback."""
    fake_anthropic.script(
        tool_reply("write_file", {"path": "a.txt", "content": "one\n"}, text="writing a", id="toolu_fork_a"),
        text_reply("first done"),
        tool_reply("write_file", {"path": "a.txt", "content": "two\n"}, text="writing b", id="toolu_fork_b"),
        text_reply("second done"),
    )
    fake_anthropic.script_auxiliary(text_reply("Forks"))
    async with running_agent(tmp_path, fake_anthropic, schema_path=drafts()) as agent:
        init = next(m["result"] for m in agent.sent() if "agentCapabilities" in (m.get("result") or {}))
        assert init["agentCapabilities"]["sessionCapabilities"]["fork"] == {"atMessageId": True}
        sid = await agent.new_session()
        await prompt(agent, sid, "first ask")
        await prompt(agent, sid, "second ask")
        writing_a = agent_ids(agent, sid)[0]
        engine = agent.conn._conn

        with pytest.raises(RequestError) as unknown:
            await engine.send_request("session/fork", fork_params(form, sid, agent.workspace, "no-such-message"))
        assert unknown.value.code == -32602

        fork = await engine.send_request("session/fork", fork_params(form, sid, agent.workspace, writing_a))
        fid = fork["sessionId"]
        files = fork["_meta"]["acp-hermes"]["files"]
        assert files["forked"] is False and files["rollback"] == 2 and "/rollback 2" in files["message"]

        fake_anthropic.script(text_reply("the fork goes on"))
        assert (await prompt(agent, fid, "go on from there"))["stopReason"] == "end_turn"
        assert "the fork goes on" in agent.agent_text(fid)
        sent = fake_anthropic.stream_requests[-1]["messages"]
        assert "first ask" in said(sent) and "writing a" in said(sent)
        assert "first done" not in said(sent) and "second ask" not in said(sent)
        results = [block for message in sent for block in message["content"]
                   if isinstance(block, dict) and block.get("type") == "tool_result"]
        assert [block["tool_use_id"] for block in results] == ["toolu_fork_a"]

        fake_anthropic.script(text_reply("the original goes on"))
        await prompt(agent, sid, "and the original")
        assert "second done" in said(fake_anthropic.stream_requests[-1]["messages"])

    async with running_agent(tmp_path, fake_anthropic, schema_path=drafts()) as loaded:
        await loaded.conn.load_session(session_id=fid, cwd=str(loaded.workspace), mcp_servers=[])
        assert [u["content"]["text"] for u in loaded.updates(fid, "user_message_chunk")] == [
            "first ask", "go on from there"]
        assert agent_ids(loaded, fid)[0] == writing_a
        [call] = loaded.updates(fid, "tool_call")
        assert call["toolCallId"] == "toolu_fork_a" and call["name"] == "write_file"


async def test_rewind_and_edit_prompt_truncate_and_continue(tmp_path: Path, fake_anthropic: FakeAnthropic) -> None:
    """``session/rewind`` keeps its message and all before it; ``session/edit_prompt`` goes back to just
    before the prompt and runs the edited one under the same id; each sends ``history_truncated``; the
    next requests hold exactly what is left, and a reload replays it."""
    fake_anthropic.script(text_reply("one done"), text_reply("two done"), text_reply("three done"))
    fake_anthropic.script_auxiliary(text_reply("Rewinds"))
    async with running_agent(tmp_path, fake_anthropic, schema_path=drafts()) as agent:
        init = next(m["result"] for m in agent.sent() if "agentCapabilities" in (m.get("result") or {}))
        assert init["agentCapabilities"]["sessionCapabilities"]["rewind"] == {}
        sid = await agent.new_session()
        for number, word in enumerate(["one", "two", "three"], 1):
            await prompt(agent, sid, word, f"m{number}")
        one_done, two_done, three_done = agent_ids(agent, sid)
        engine = agent.conn._conn

        rewound = await engine.send_request("session/rewind", {"sessionId": sid, "toMessageId": two_done})
        assert rewound == {"remainingMessageCount": 4, "lastMessageId": two_done}
        [truncated] = agent.updates(sid, "history_truncated")
        assert truncated["removedMessageIds"] == ["m3", three_done]
        assert truncated["lastMessageId"] == two_done and truncated["remainingMessageCount"] == 4

        fake_anthropic.script(text_reply("four done"))
        await prompt(agent, sid, "four", "m4")
        assert said(fake_anthropic.stream_requests[-1]["messages"]) == "one | one done | two | two done | four"

        with pytest.raises(RequestError) as not_a_prompt:
            await engine.send_request("session/edit_prompt", {
                "sessionId": sid, "messageId": one_done, "content": [{"type": "text", "text": "x"}]})
        assert not_a_prompt.value.code == -32602
        with pytest.raises(RequestError) as unknown:
            await engine.send_request("session/rewind", {"sessionId": sid, "toMessageId": "m3"})  # rewound away
        assert unknown.value.code == -32602

        fake_anthropic.script(text_reply("TWO done"))
        edited = await engine.send_request("session/edit_prompt", {
            "sessionId": sid, "messageId": "m2", "content": [{"type": "text", "text": "TWO"}]})
        assert edited == {"stopReason": "end_turn"}
        second = agent.updates(sid, "history_truncated")[1]
        four_done = agent_ids(agent, sid)[3]
        assert second["removedMessageIds"] == ["m2", two_done, "m4", four_done]
        assert second["lastMessageId"] == one_done and second["remainingMessageCount"] == 2
        assert said(fake_anthropic.stream_requests[-1]["messages"]) == "one | one done | TWO"
        updates = [u["sessionUpdate"] for u in agent.updates(sid)]
        assert updates.index("history_truncated") < len(updates) - 1  # the edited turn streams after it

    async with running_agent(tmp_path, fake_anthropic, schema_path=drafts()) as loaded:
        await loaded.conn.load_session(session_id=sid, cwd=str(loaded.workspace), mcp_servers=[])
        shown = [(u["messageId"], u["content"]["text"]) for u in loaded.updates(sid, "user_message_chunk")]
        assert shown == [("m1", "one"), ("m2", "TWO")]
        assert loaded.agent_text(sid) == "one doneTWO done"


async def test_a_rewind_cancels_the_running_turn_first(tmp_path: Path, fake_anthropic: FakeAnthropic) -> None:
    """A turn running when ``session/rewind`` arrives is cancelled, then the conversation is cut: the
    prompt answers ``cancelled`` and neither it nor its partial answer reaches the next request."""
    fake_anthropic.script(text_reply("one done"), slow_text_reply(60, 0.05, text="a long answer, streamed slowly"))
    fake_anthropic.script_auxiliary(text_reply("Busy"))
    async with running_agent(tmp_path, fake_anthropic, schema_path=drafts()) as agent:
        sid = await agent.new_session()
        await prompt(agent, sid, "one", "m1")
        [one_done] = agent_ids(agent, sid)
        task = PromptTask(agent, sid)
        async with anyio.create_task_group() as group:
            group.start_soon(task.run, "two")
            await agent.wait_for_update(sid, "agent_message_chunk", count=2)  # the slow answer is streaming
            rewound = await agent.conn._conn.send_request("session/rewind", {"sessionId": sid, "toMessageId": one_done})
            with anyio.fail_after(CANCEL_LIMIT):
                await task.done.wait()
        assert task.stop_reason == "cancelled"
        assert rewound == {"remainingMessageCount": 2, "lastMessageId": one_done}
        [truncated] = agent.updates(sid, "history_truncated")
        assert len(truncated["removedMessageIds"]) == 2  # the prompt "two" and what was streamed of its answer
        fake_anthropic.script(text_reply("three done"))
        await prompt(agent, sid, "three", "m3")
        assert said(fake_anthropic.stream_requests[-1]["messages"]) == "one | one done | three"


def chunk_ids(agent: AgentProcess, sid: str) -> list[tuple[str, str]]:
    """(kind, messageId) of every agent chunk, in order, each run of one id once."""
    out: list[tuple[str, str]] = []
    for update in agent.updates(sid):
        if update["sessionUpdate"] in CHUNKS[:2]:
            entry = (update["sessionUpdate"], update["messageId"])
            if not out or out[-1] != entry:
                out.append(entry)
    return out


async def test_message_ids_are_the_same_live_and_in_every_replay(tmp_path: Path,
                                                                  fake_anthropic: FakeAnthropic) -> None:
    """Every chunk carries a messageId: the agent's and a steer's are the same live and in replay, every
    prompt's the same in every replay (stored, not made up per load); every tool call carries its name."""
    fake_anthropic.script(
        thinking_then_text("let me think", "thought it through"),
        tool_reply("read_file", {"path": "notes.txt"}, text="reading", id="toolu_ids_1"),
        text_reply("read it"),
        slow_text_reply(40, 0.05, text="a long answer, streamed slowly"),
        text_reply("shorter"),
    )
    fake_anthropic.script_auxiliary(text_reply("Ids"))
    async with running_agent(tmp_path, fake_anthropic, schema_path=drafts()) as agent:
        (agent.workspace / "notes.txt").write_text("hello\n")
        sid = await agent.new_session()
        await prompt(agent, sid, "think")
        await prompt(agent, sid, "read notes")
        await prompt(agent, sid, "/help")
        task = PromptTask(agent, sid)
        shown = len(agent.updates(sid, "agent_message_chunk"))
        async with anyio.create_task_group() as group:
            group.start_soon(task.run, "explain")
            await agent.wait_for_update(sid, "agent_message_chunk", count=shown + 1)  # the slow answer streams
            answer = await agent.conn.ext_method("session/steering", {
                "sessionId": sid, "prompt": [{"type": "text", "text": "shorter"}]})
            assert answer == {"outcome": "injected"}
        [steer] = agent.updates(sid, "user_message_chunk")  # shown live, where the model reads it
        live = chunk_ids(agent, sid)
        assert [kind for kind, _ in live] == ["agent_thought_chunk", *["agent_message_chunk"] * 6]
        assert all(update.get("name") for update in agent.updates(sid, "tool_call"))

    replays = []
    for _ in range(2):
        async with running_agent(tmp_path, fake_anthropic, schema_path=drafts()) as loaded:
            await loaded.conn.load_session(session_id=sid, cwd=str(loaded.workspace), mcp_servers=[])
            updates = [u for u in loaded.updates(sid) if u["sessionUpdate"] in CHUNKS]
            assert updates and all(isinstance(u.get("messageId"), str) and u["messageId"] for u in updates)
            assert chunk_ids(loaded, sid) == live
            [call] = loaded.updates(sid, "tool_call")
            assert call["name"] == "read_file"
            replays.append([u["messageId"] for u in loaded.updates(sid, "user_message_chunk")])
    assert len(replays[0]) == 5 and len(set(replays[0])) == 5 and replays[0] == replays[1]
    assert replays[0][-1] == steer["messageId"]


@needs_git
async def test_a_stable_client_sees_nothing_unstable(tmp_path: Path, fake_anthropic: FakeAnthropic) -> None:
    """A client checked against the stable schema: a fork at a message, a reload and ``_session/rewind``
    send it nothing that schema does not know, and no ``history_truncated``."""
    fake_anthropic.script(
        tool_reply("write_file", {"path": "a.txt", "content": "one\n"}, text="writing", id="toolu_stable"),
        text_reply("done"),
        text_reply("again"),
    )
    fake_anthropic.script_auxiliary(text_reply("Stable"))
    async with running_agent(tmp_path, fake_anthropic) as agent:  # the stable schema
        sid = await agent.new_session()
        await prompt(agent, sid, "write", "s1")
        await prompt(agent, sid, "more", "s2")
        engine = agent.conn._conn
        fork = await engine.send_request("session/fork", fork_params("messageId", sid, agent.workspace,
                                                                      agent_ids(agent, sid)[0]))
        assert fork["sessionId"] != sid
        done = await agent.conn.ext_method("session/rewind", {"sessionId": sid, "beforeMessage": {"messageId": "s2"}})
        assert done["rewound"] is True
        assert not agent.updates(kind="history_truncated")
    async with running_agent(tmp_path, fake_anthropic) as loaded:
        await loaded.conn.load_session(session_id=sid, cwd=str(loaded.workspace), mcp_servers=[])
        await loaded.conn.load_session(session_id=fork["sessionId"], cwd=str(loaded.workspace), mcp_servers=[])
        assert not loaded.updates(kind="history_truncated")
