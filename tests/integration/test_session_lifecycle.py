"""Persisted sessions through the real stdio server: load (replay), list, resume, close, fork, delete,
unknown ids, persisted choices and titles, with restarts in between (a new process, same HERMES_HOME).
"""

from __future__ import annotations

import re
from collections.abc import Awaitable
from datetime import datetime
from pathlib import Path
from typing import Any, TypeVar

import anyio
import pytest
from acp import RequestError, embedded_text_resource, resource_block, text_block

from acp_hermes.testing.scripted_model import MessageReply, TextBlock, ThinkingBlock, ToolUseBlock
from acp_hermes_memory.session_db import SessionDB
from tests.support.acp_harness import AgentProcess, running_agent
from tests.support.fake_anthropic import (
    FakeAnthropic,
    error_reply,
    slow_text_reply,
    text_reply,
    tool_reply,
)

T = TypeVar("T")

NOT_FOUND = -32002
LIST_PAGE_SIZE = 50  # SessionDB.list_sessions' default page, which session/list uses
ISO_8601 = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$")
REPLAYED_KINDS = {"user_message_chunk", "agent_message_chunk", "agent_thought_chunk", "tool_call", "plan"}


def without_cache_control(value: Any) -> Any:
    """A request's content with the prompt-cache markers taken out (they are not conversation)."""
    if isinstance(value, dict):
        return {key: without_cache_control(item) for key, item in value.items() if key != "cache_control"}
    if isinstance(value, list):
        return [without_cache_control(item) for item in value]
    return value


def system_text(request: dict[str, Any]) -> str:
    return "".join(block["text"] for block in request["system"])


def state_db(agent: AgentProcess) -> SessionDB:
    return SessionDB(agent.home / "acp-hermes" / "state.db")


async def with_updates_before_response(
    agent: AgentProcess, session_id: str, call: Awaitable[T]
) -> tuple[T, list[dict[str, Any]]]:
    """Run one client request; also return the session's updates the agent sent before answering it."""
    start = len(agent.wire.messages)
    result = await call
    sent = agent.wire.messages[start:]
    answer = next(i for i, message in enumerate(sent) if "method" not in message and "id" in message)
    return result, [
        m["params"]["update"]
        for m in sent[:answer]
        if m.get("method") == "session/update" and m["params"]["sessionId"] == session_id
    ]


async def first_exchange(agent: AgentProcess, session_id: str, text: str) -> str:
    """Prompt, then wait for the title the first exchange triggers (from the auxiliary script)."""
    stop = await agent.prompt(session_id, text)
    await agent.wait_for_update(session_id, "session_info_update")
    return stop


def condensed(updates: list[dict[str, Any]]) -> list[tuple[str, Any]]:
    """The conversation-bearing updates as (kind, what) pairs, in order; text chunks joined per message."""
    out: list[tuple[str, Any]] = []
    for update in updates:
        kind = update["sessionUpdate"]
        if kind not in REPLAYED_KINDS:
            continue
        if kind in ("agent_message_chunk", "agent_thought_chunk"):
            if out and out[-1][0] == kind and out[-1][1][0] == update["messageId"]:
                out[-1] = (kind, (update["messageId"], out[-1][1][1] + update["content"]["text"]))
            else:
                out.append((kind, (update["messageId"], update["content"]["text"])))
        elif kind == "user_message_chunk":
            out.append((kind, update["content"]))
        elif kind == "tool_call":
            out.append((kind, (update["toolCallId"], update["status"])))
        else:
            out.append((kind, update["entries"]))
    return out


def texts_only(items: list[tuple[str, Any]]) -> list[tuple[str, Any]]:
    """Condensed items with message ids dropped (replayed ids of user messages are new)."""
    return [(kind, what[1] if kind.startswith("agent_") else what) for kind, what in items]


# ----------------------------------------------------------------------------------------------------
# load


@pytest.mark.anyio
async def test_load_replays_the_whole_conversation_in_order_and_continues_after_a_restart(
    tmp_path: Path, fake_anthropic: FakeAnthropic
) -> None:
    fake = fake_anthropic
    notes_uri = "file:///project/notes.md"
    prompt_one = [
        text_block("Create hello.txt and plan the rest"),
        resource_block(embedded_text_resource(notes_uri, "remember the newline", mime_type="text/markdown")),
    ]
    todos = [
        {"id": "1", "content": "Write hello.txt", "status": "completed"},
        {"id": "2", "content": "Review it", "status": "pending"},
    ]
    fake.script(
        MessageReply(
            [
                ThinkingBlock("The file does not exist yet", chunks=2),
                TextBlock("Writing it now."),
                ToolUseBlock("toolu_write", "write_file", {"path": "hello.txt", "content": "hello\n"}, chunks=3),
            ],
            stop_reason="tool_use",
        ),
        tool_reply("read_file", {"path": "missing.txt"}, id="toolu_read"),
        tool_reply("todo", {"todos": todos}, id="toolu_todo"),
        text_reply("Done: hello.txt exists.", chunks=3),
        text_reply("Nothing else to do."),
    )
    fake.script_auxiliary(text_reply("Create hello file"))
    async with running_agent(tmp_path, fake) as first:
        sid = await first.new_session()
        response = await first.conn.prompt(session_id=sid, prompt=prompt_one)
        assert response.stop_reason == "end_turn"
        await first.wait_for_update(sid, "session_info_update")
        assert await first.prompt(sid, "Anything else?") == "end_turn"
        live = first.updates(sid)
        home, workspace = first.home, first.workspace
    assert (workspace / "hello.txt").read_text() == "hello\n"
    assert fake.unused_replies == 0
    requests_before = fake.requests
    main_requests = [r for r in requests_before if r.get("stream")]
    frozen_system = system_text(main_requests[0])
    last_history = without_cache_control(main_requests[-1]["messages"])

    fake.script(text_reply("Third answer."))
    async with running_agent(tmp_path, fake, home=home, workspace=workspace) as second:
        loaded, replay = await with_updates_before_response(
            second, sid, second.conn.load_session(cwd=str(workspace), session_id=sid, mcp_servers=[])
        )
        assert {option.id for option in loaded.config_options or []} == {"mode", "model", "thought_level"}
        assert replay, "nothing was replayed before the load response"

        sent_blocks = [block.model_dump(mode="json", by_alias=True, exclude_none=True) for block in prompt_one]
        expected = [
            ("user_message_chunk", sent_blocks[0]),
            ("user_message_chunk", sent_blocks[1]),
            ("agent_thought_chunk", "The file does not exist yet"),
            ("agent_message_chunk", "Writing it now."),
            ("tool_call", ("toolu_write", "completed")),
            ("tool_call", ("toolu_read", "failed")),
            ("tool_call", ("toolu_todo", "completed")),
            ("plan", [{"content": "Write hello.txt", "priority": "medium", "status": "completed"},
                      {"content": "Review it", "priority": "medium", "status": "pending"}]),
            ("agent_message_chunk", "Done: hello.txt exists."),
            ("user_message_chunk", {"type": "text", "text": "Anything else?"}),
            ("agent_message_chunk", "Nothing else to do."),
        ]
        assert texts_only(condensed(replay)) == expected
        # The agent's messages keep the ids the editor saw live, and the live view agrees.
        live_items = condensed(live)
        replay_items = condensed(replay)
        assert [w for k, w in replay_items if k.startswith("agent_")] == [
            w for k, w in live_items if k.startswith("agent_")
        ]
        user_ids = [u["messageId"] for u in replay if u["sessionUpdate"] == "user_message_chunk"]
        assert user_ids[0] == user_ids[1] != user_ids[2]

        # Each tool call arrives once, final, with what the user saw when it finished.
        calls = {u["toolCallId"]: u for u in replay if u["sessionUpdate"] == "tool_call"}
        for call_id, call in calls.items():
            last_live = [u for u in first.tool_updates(sid, call_id) if u["sessionUpdate"] == "tool_call_update"][-1]
            assert call["content"] == last_live["content"], call_id
            assert call["status"] == last_live["status"], call_id
        write = calls["toolu_write"]
        assert write["kind"] == "edit"
        assert write["rawInput"] == {"path": "hello.txt", "content": "hello\n"}
        assert write["content"] == [{"type": "diff", "path": str(workspace / "hello.txt"), "newText": "hello\n"}]
        assert calls["toolu_read"]["status"] == "failed"
        assert "missing.txt" in calls["toolu_read"]["content"][0]["content"]["text"]
        assert [u for u in replay if u["sessionUpdate"] == "session_info_update"][-1]["title"] == "Create hello file"

        # The loaded session continues: same frozen system prompt, the whole previous history.
        assert await second.prompt(sid, "And a third thing?") == "end_turn"
        request = fake.stream_requests[-1]
        assert system_text(request) == frozen_system
        history = without_cache_control(request["messages"])
        assert history[: len(last_history)] == last_history
        assert history[len(last_history)] == {
            "role": "assistant", "content": [{"type": "text", "text": "Nothing else to do."}]
        }
        assert history[-1] == {"role": "user", "content": [{"type": "text", "text": "And a third thing?"}]}
        assert len(history) == len(last_history) + 2
        thinking = history[1]["content"][0]
        assert thinking == {"type": "thinking", "thinking": "The file does not exist yet",
                            "signature": "fake-thinking-signature"}
        assert second.agent_text(sid).endswith("Third answer.")


# ----------------------------------------------------------------------------------------------------
# resume and fork


@pytest.mark.anyio
async def test_resume_sends_no_replay_and_fork_copies_the_history_with_lineage(
    tmp_path: Path, fake_anthropic: FakeAnthropic
) -> None:
    fake = fake_anthropic
    fake.script(text_reply("Source answer one."))
    fake.script_auxiliary(text_reply("Source title"))
    async with running_agent(tmp_path, fake) as first:
        source = await first.new_session()
        await first_exchange(first, source, "source question one")
        home, workspace = first.home, first.workspace
    source_system = system_text(fake.requests[0])

    async with running_agent(tmp_path, fake, home=home, workspace=workspace) as second:
        # Fork a session that is not open in this process: it comes from the SessionDB.
        fork_response = await second.conn.fork_session(session_id=source, cwd=str(workspace))
        fork = fork_response.session_id
        assert fork != source
        assert {option.id for option in fork_response.config_options or []} == {"mode", "model", "thought_level"}

        resumed, resume_replay = await with_updates_before_response(
            second, source, second.conn.resume_session(session_id=source, cwd=str(workspace))
        )
        assert resume_replay == []
        assert resumed.config_options is not None

        fake.script(text_reply("Source answer two."))
        assert await second.prompt(source, "source question two") == "end_turn"
        resumed_request = fake.stream_requests[-1]
        assert system_text(resumed_request) == source_system
        assert without_cache_control(resumed_request["messages"]) == [
            {"role": "user", "content": [{"type": "text", "text": "source question one"}]},
            {"role": "assistant", "content": [{"type": "text", "text": "Source answer one."}]},
            {"role": "user", "content": [{"type": "text", "text": "source question two"}]},
        ]
        # Nothing of the old conversation was sent to the editor on resume.
        assert not [u for u in second.updates(source) if u["sessionUpdate"] in ("user_message_chunk",)]
        assert second.agent_text(source) == "Source answer two."

        # The fork holds the history as it was when forked; its next request carries it.
        fake.script(text_reply("Fork answer."))
        assert await second.prompt(fork, "fork question") == "end_turn"
        fork_request = fake.stream_requests[-1]
        assert system_text(fork_request) == source_system
        assert without_cache_control(fork_request["messages"]) == [
            {"role": "user", "content": [{"type": "text", "text": "source question one"}]},
            {"role": "assistant", "content": [{"type": "text", "text": "Source answer one."}]},
            {"role": "user", "content": [{"type": "text", "text": "fork question"}]},
        ]

        # A live session forks too, with everything it has so far.
        live_fork = (await second.conn.fork_session(session_id=source, cwd=str(workspace))).session_id
        fake.script(text_reply("Live fork answer."))
        assert await second.prompt(live_fork, "live fork question") == "end_turn"
        assert len(fake.stream_requests[-1]["messages"]) == 5

        # The source is unchanged by its forks.
        fake.script(text_reply("Source answer three."))
        assert await second.prompt(source, "source question three") == "end_turn"
        source_texts = [m["content"][0]["text"] for m in without_cache_control(fake.stream_requests[-1]["messages"])]
        assert "fork question" not in source_texts and "live fork question" not in source_texts
        assert len(source_texts) == 5

        # A fork starts with the source's name (it has no first exchange of its own to be named after).
        listed = {s.session_id: s.title for s in (await second.conn.list_sessions(cwd=str(workspace))).sessions}
        assert listed == {source: "Source title", fork: "Source title (fork)", live_fork: "Source title (fork)"}
        info = await second.wait_for_update(fork, "session_info_update")
        assert info["title"] == "Source title (fork)"

        with state_db(second) as db:
            assert db.get_session(fork).parent_session_id == source  # type: ignore[union-attr]
            assert db.get_session(live_fork).parent_session_id == source  # type: ignore[union-attr]
            assert db.get_session(source).parent_session_id is None  # type: ignore[union-attr]
            assert len(db.messages(source)) == 6
            assert len(db.messages(fork)) == 4
            assert db.lineage(source) == {source, fork, live_fork}


# ----------------------------------------------------------------------------------------------------
# close, delete, unknown ids


@pytest.mark.anyio
async def test_close_cancels_the_running_turn_frees_the_session_and_keeps_its_history(
    tmp_path: Path, fake_anthropic: FakeAnthropic
) -> None:
    fake = fake_anthropic
    fake.script(text_reply("First answer."), slow_text_reply(200, 0.05))
    fake.script_auxiliary(text_reply("Closing test"))
    async with running_agent(tmp_path, fake) as agent:
        sid = await agent.new_session()
        await first_exchange(agent, sid, "first question")

        outcome: dict[str, str] = {}

        async def run_prompt() -> None:
            outcome["stop"] = await agent.prompt(sid, "a long answer please")

        with anyio.fail_after(15):
            async with anyio.create_task_group() as group:
                group.start_soon(run_prompt)
                await agent.wait_for_update(sid, "agent_message_chunk", count=2)
                assert await agent.conn.close_session(session_id=sid) is not None
        assert outcome["stop"] == "cancelled"
        await fake.wait_for_disconnect_async()  # the model stream was really closed
        shown = agent.agent_text(sid)[len("First answer."):]
        assert shown.startswith("word0")

        # The session is no longer open here: prompting it is an error, not a new session.
        with pytest.raises(RequestError) as raised:
            await agent.prompt(sid, "are you there?")
        assert raised.value.code == NOT_FOUND
        # Closing it again is harmless (it still exists), an unknown id is not.
        await agent.conn.close_session(session_id=sid)

        # History stays: load reopens it from the SessionDB, with the part of the answer that was shown.
        _, replay = await with_updates_before_response(
            agent, sid, agent.conn.load_session(cwd=str(agent.workspace), session_id=sid, mcp_servers=[])
        )
        assert texts_only(condensed(replay)) == [
            ("user_message_chunk", {"type": "text", "text": "first question"}),
            ("agent_message_chunk", "First answer."),
            ("user_message_chunk", {"type": "text", "text": "a long answer please"}),
            ("agent_message_chunk", shown),
        ]
        fake.script(text_reply("Back again."))
        assert await agent.prompt(sid, "are you there now?") == "end_turn"
        texts = [m["content"][0]["text"] for m in without_cache_control(fake.stream_requests[-1]["messages"])]
        assert texts == ["first question", "First answer.", "a long answer please", shown, "are you there now?"]


@pytest.mark.anyio
async def test_delete_removes_the_session_and_unknown_ids_are_errors_everywhere(
    tmp_path: Path, fake_anthropic: FakeAnthropic
) -> None:
    fake = fake_anthropic
    fake.script(text_reply("Kept answer."), text_reply("Doomed answer."))
    fake.script_auxiliary(text_reply("Kept"), text_reply("Doomed"))
    async with running_agent(tmp_path, fake) as agent:
        workspace = str(agent.workspace)
        kept = await agent.new_session()
        await first_exchange(agent, kept, "keep me")
        doomed = await agent.new_session()
        await first_exchange(agent, doomed, "delete me")
        listed = (await agent.conn.list_sessions(cwd=workspace)).sessions
        assert {s.session_id for s in listed} == {kept, doomed}

        raw = agent.conn._conn
        assert await raw.send_request("session/delete", {"sessionId": doomed}) == {}
        assert [s.session_id for s in (await agent.conn.list_sessions(cwd=workspace)).sessions] == [kept]
        with state_db(agent) as db:
            assert db.get_session(doomed) is None
            assert db.messages(doomed) == []
            assert len(db.messages(kept)) == 2

        unknown = "00000000-0000-4000-8000-000000000000"
        attempts = {
            "load": lambda sid: agent.conn.load_session(cwd=workspace, session_id=sid, mcp_servers=[]),
            "resume": lambda sid: agent.conn.resume_session(session_id=sid, cwd=workspace),
            "fork": lambda sid: agent.conn.fork_session(session_id=sid, cwd=workspace),
            "close": lambda sid: agent.conn.close_session(session_id=sid),
            "delete": lambda sid: raw.send_request("session/delete", {"sessionId": sid}),
            "prompt": lambda sid: agent.conn.prompt(session_id=sid, prompt=[text_block("hi")]),
            "set_config_option": lambda sid: agent.conn.set_config_option(
                config_id="mode", session_id=sid, value="plan"
            ),
            "set_session_mode": lambda sid: agent.conn.set_session_mode(session_id=sid, mode_id="plan"),
        }
        for name, attempt in attempts.items():
            for sid in (doomed, unknown):
                with pytest.raises(RequestError) as raised:
                    await attempt(sid)
                assert raised.value.code == NOT_FOUND, (name, sid)
                assert raised.value.data["sessionId"] == sid

        # None of that created a session, and the kept one is untouched and still works.
        with state_db(agent) as db:
            every = db.list_sessions(include_empty=True)[0]
        assert [record.id for record in every] == [kept]
        fake.script(text_reply("Still here."))
        assert await agent.prompt(kept, "still there?") == "end_turn"

        # Deleting a session in the middle of a turn cancels the turn, and nothing of it comes back.
        fake.script(slow_text_reply(200, 0.05))
        outcome: dict[str, str] = {}

        async def run_prompt() -> None:
            outcome["stop"] = await agent.prompt(kept, "a long answer please")

        with anyio.fail_after(15):
            async with anyio.create_task_group() as group:
                group.start_soon(run_prompt)
                await agent.wait_for(lambda: "word3" in agent.agent_text(kept))
                assert await raw.send_request("session/delete", {"sessionId": kept}) == {}
        assert outcome["stop"] == "cancelled"
        with state_db(agent) as db:
            assert db.list_sessions(include_empty=True)[0] == []
            assert db.messages(kept) == []
        assert (await agent.conn.list_sessions()).sessions == []


# ----------------------------------------------------------------------------------------------------
# list


def seed_sessions(db: SessionDB, cwd: str, count: int) -> list[str]:
    """``count`` sessions with one message each, oldest first (much cheaper than prompting each)."""
    ids = []
    for number in range(count):
        session_id = f"seeded-{cwd.rsplit('/', 1)[-1]}-{number:03d}"
        db.create_session(session_id, cwd=cwd, model="claude-sonnet-5-5", mode="default", model_config={},
                          system_prompt="seeded", title=f"Seeded {number}")
        db.append_message(session_id, "user", f"seeded question {number}", payload=[{"type": "text", "text": "q"}])
        ids.append(session_id)
    return ids


@pytest.mark.anyio
async def test_list_filters_by_cwd_newest_first_with_cursor_paging_titles_and_iso_times(
    tmp_path: Path, fake_anthropic: FakeAnthropic
) -> None:
    fake = fake_anthropic
    home = tmp_path / "hermes-home"
    workspace = (tmp_path / "workspace").resolve()
    other = (tmp_path / "other").resolve()
    workspace.mkdir()
    other.mkdir()
    with SessionDB(home / "acp-hermes" / "state.db") as db:
        seeded = seed_sessions(db, str(workspace), LIST_PAGE_SIZE + 5)
        seeded_other = seed_sessions(db, str(other), 3)
        # An empty session (no messages) is never listed.
        db.create_session("seeded-empty", cwd=str(workspace), model=None, mode=None, model_config={},
                          system_prompt=None)

    fake.script(text_reply("Live answer."))
    fake.script_auxiliary(text_reply("Live session title"))
    async with running_agent(tmp_path, fake, home=home, workspace=workspace) as agent:
        live = await agent.new_session()
        await first_exchange(agent, live, "a live question")
        empty = await agent.new_session()

        pages = []
        cursor = None
        while True:
            page = await agent.conn.list_sessions(cwd=str(workspace), cursor=cursor)
            pages.append(page.sessions)
            cursor = page.next_cursor
            if cursor is None:
                break
        assert [len(page) for page in pages] == [LIST_PAGE_SIZE, 6]
        listed = [entry for page in pages for entry in page]
        assert [entry.session_id for entry in listed] == [live, *reversed(seeded)]
        assert empty not in {entry.session_id for entry in listed}
        assert "seeded-empty" not in {entry.session_id for entry in listed}
        assert all(entry.cwd == str(workspace) for entry in listed)
        assert listed[0].title == "Live session title"
        assert listed[1].title == f"Seeded {LIST_PAGE_SIZE + 4}"
        stamps = [entry.updated_at for entry in listed]
        assert all(stamp is not None and ISO_8601.match(stamp) for stamp in stamps)
        parsed = [datetime.fromisoformat(stamp.replace("Z", "+00:00")) for stamp in stamps if stamp]
        assert parsed == sorted(parsed, reverse=True)

        elsewhere = await agent.conn.list_sessions(cwd=str(other))
        assert [entry.session_id for entry in elsewhere.sessions] == list(reversed(seeded_other))
        assert elsewhere.next_cursor is None
        everything = await agent.conn.list_sessions()
        assert len(everything.sessions) == LIST_PAGE_SIZE and everything.next_cursor is not None

        with pytest.raises(RequestError) as raised:
            await agent.conn.list_sessions(cwd=str(workspace), cursor="not-a-cursor")
        assert raised.value.code == -32602


# ----------------------------------------------------------------------------------------------------
# choices and titles


def write_config(home: Path, text: str) -> None:
    config = home / "acp-hermes" / "config.yaml"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text(text, encoding="utf-8")


@pytest.mark.anyio
async def test_mode_model_and_thinking_choices_survive_a_restart(
    tmp_path: Path, fake_anthropic: FakeAnthropic
) -> None:
    fake = fake_anthropic
    home = tmp_path / "hermes-home"
    write_config(home, "models: [claude-opus-5-5]\nthinking_budgets: {low: 1500, medium: 8192, high: 32000}\n")
    fake.script(text_reply("Before the restart."))
    fake.script_auxiliary(text_reply("Choices"))
    async with running_agent(tmp_path, fake, home=home) as first:
        sid = await first.new_session()
        await first.conn.set_session_mode(session_id=sid, mode_id="accept-edits")
        await first.conn.set_config_option(config_id="model", session_id=sid, value="claude-opus-5-5")
        await first.conn.set_config_option(config_id="thought_level", session_id=sid, value="low")
        await first_exchange(first, sid, "remember my choices")
        workspace = first.workspace
    assert fake.requests[0]["model"] == "claude-opus-5-5"

    fake.script(text_reply("After the restart."))
    async with running_agent(tmp_path, fake, home=home, workspace=workspace) as second:
        loaded = await second.conn.load_session(cwd=str(workspace), session_id=sid, mcp_servers=[])
        current = {option.id: option.current_value for option in loaded.config_options or []}
        assert current == {"mode": "accept-edits", "model": "claude-opus-5-5", "thought_level": "low"}
        assert loaded.modes is not None and loaded.modes.current_mode_id == "accept-edits"
        assert await second.prompt(sid, "still the same choices?") == "end_turn"
        request = fake.stream_requests[-1]
        assert request["model"] == "claude-opus-5-5"
        assert request["thinking"] == {"type": "enabled", "budget_tokens": 1500}

        # A fork carries the choices over.
        forked = await second.conn.fork_session(session_id=sid, cwd=str(workspace))
        assert {option.id: option.current_value for option in forked.config_options or []} == current

        # accept-edits really is in force: a write goes through without a permission request.
        fake.script(tool_reply("write_file", {"path": "note.txt", "content": "x"}), text_reply("Written."))
        assert await second.prompt(sid, "write note.txt") == "end_turn"
        assert (workspace / "note.txt").read_text() == "x"
        assert second.client.permission_requests == []


@pytest.mark.anyio
async def test_titles_come_from_the_auxiliary_model_or_fall_back_to_the_first_user_line(
    tmp_path: Path, fake_anthropic: FakeAnthropic
) -> None:
    fake = fake_anthropic
    fake.script(text_reply("Sure."), text_reply("Okay."))
    fake.script_auxiliary(
        text_reply('"Fix the flaky login test."'), error_reply(400, message="title model unavailable")
    )
    async with running_agent(tmp_path, fake) as agent:
        named = await agent.new_session()
        assert await agent.prompt(named, "The login test fails randomly\nplease look") == "end_turn"
        info = await agent.wait_for_update(named, "session_info_update")
        assert info["title"] == "Fix the flaky login test"
        assert ISO_8601.match(info["updatedAt"])
        (title_request,) = fake.auxiliary_requests
        assert title_request["model"] == "claude-haiku-5-5"
        assert "The login test fails randomly" in title_request["messages"][0]["content"]
        assert "Sure." in title_request["messages"][0]["content"]

        fallback = await agent.new_session()
        assert await agent.prompt(fallback, "\n  Rename the config loader  \nand its tests") == "end_turn"
        info = await agent.wait_for_update(fallback, "session_info_update")
        assert info["title"] == "Rename the config loader"

        titles = {s.session_id: s.title for s in (await agent.conn.list_sessions(cwd=str(agent.workspace))).sessions}
        assert titles == {named: "Fix the flaky login test", fallback: "Rename the config loader"}
        assert fake.unused_replies == 0
