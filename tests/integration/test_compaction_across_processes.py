"""One session open in two server processes on one HERMES_HOME (two editor windows), compacted by
either or both: the model's history never loses a message either stored.

Each test runs two real servers, each with its own scripted model. Window A makes the session and
talks; window B loads it. Then: A compacts and B, which read the conversation before that, goes on
(from A's summary, and A then sees B's exchange); B stores an exchange while A is still summarising
(A's summary is held until B is done: A's new segment carries B's exchange); B's turn is still
running when A's compaction ends B's segment (B's answer goes to the continuation); both compact at
once (one continuation, and the window that finished second goes on from it).
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
import pytest

from acp_hermes.core.compactor import ADOPTED
from acp_hermes.core.compression import SUMMARY_MARKER
from acp_hermes.core.transcript import history_from_rows
from acp_hermes.testing.scripted_model import ModelRequest, Reply
from acp_hermes_memory.session_db import SessionDB
from tests.support.acp_harness import AgentProcess, PromptTask, running_agent, write_config
from tests.support.fake_anthropic import FakeAnthropic, text_reply, texts_of
from tests.support.wire import wire

pytestmark = pytest.mark.anyio

SUMMARY_A = "## Goal\nShip the parser (summary written in window A)."
SUMMARY_B = "## Goal\nShip the parser (summary written in window B)."


def held(release: threading.Event, reply: Reply) -> Callable[[ModelRequest], Reply]:
    """``reply`` once the test sets ``release`` (bounded, so a failing test cannot hang the fake)."""

    def answer(request: ModelRequest) -> Reply:
        release.wait(timeout=15)
        return reply

    return answer


async def chat(agent: AgentProcess, fake: FakeAnthropic, sid: str, turns: int) -> None:
    for n in range(turns):
        fake.script(text_reply(f"answer {n} " + "detail " * 150))
        assert await agent.prompt(sid, f"question {n} " + "context " * 150) == "end_turn"


async def exchange(agent: AgentProcess, fake: FakeAnthropic, sid: str, question: str, answer: str) -> list[str]:
    """One prompt and its answer; the texts of the history the model was sent with it."""
    fake.script(text_reply(answer))
    assert await agent.prompt(sid, question) == "end_turn"
    return texts_of(fake.stream_requests[-1]["messages"])


def stored_history(home: Path, sid: str) -> list[str]:
    """The texts of the history a process that loads the session now sends the model."""
    with SessionDB(home / "acp-hermes" / "state.db") as db:
        return texts_of(wire(history_from_rows(db.messages(db.segments(sid)[-1].id))))


def continuations(home: Path, segment: str) -> int:
    with sqlite3.connect(home / "acp-hermes" / "state.db") as conn:
        return int(conn.execute("SELECT count(*) FROM sessions WHERE parent_session_id = ? AND source = "
                                "'compression'", (segment,)).fetchone()[0])


def holds(texts: list[str], *wanted: str) -> bool:
    """Whether each of ``wanted`` begins one of ``texts``."""
    return all(any(text.startswith(w) for text in texts) for w in wanted)


def mentions(texts: list[str], wanted: str) -> bool:
    return any(wanted in text for text in texts)


@asynccontextmanager
async def two_windows(tmp_path: Path, fake_a: FakeAnthropic,
                      fake_b: FakeAnthropic) -> AsyncIterator[tuple[AgentProcess, AgentProcess, str]]:
    """Window A with a session of 8 exchanges (titled), and window B with it loaded."""
    home, workspace = tmp_path / "hermes-home", tmp_path / "workspace"
    write_config(home, "memory_flush: false\n")  # /compact then makes one model call: the summary
    async with (
        running_agent(tmp_path, fake_a, home=home, workspace=workspace) as window_a,
        running_agent(tmp_path, fake_b, home=home, workspace=workspace) as window_b,
    ):
        sid = await window_a.new_session()
        await chat(window_a, fake_a, sid, 8)
        await window_a.wait_for_update(sid, "session_info_update")  # its title's request is done
        await window_b.conn.load_session(cwd=str(workspace), session_id=sid, mcp_servers=[])
        yield window_a, window_b, sid


async def compact_held(window: AgentProcess, fake: FakeAnthropic, sid: str, group: anyio.abc.TaskGroup) -> PromptTask:
    """Start ``/compact`` in ``window`` and return once its summary request is in (and held)."""
    task = PromptTask(window, sid)
    expected = len(fake.requests) + 1
    group.start_soon(task.run, "/compact")
    await fake.wait_for_request_async(expected)
    return task


async def test_after_one_window_compacts_the_other_goes_on_from_its_summary(tmp_path: Path) -> None:
    with FakeAnthropic() as fake_a, FakeAnthropic() as fake_b:
        fake_a.script_auxiliary(text_reply("Parser work"), text_reply(SUMMARY_A))
        async with two_windows(tmp_path, fake_a, fake_b) as (window_a, window_b, sid):
            assert await window_a.prompt(sid, "/compact") == "end_turn"
            assert "Compacted the conversation" in window_a.agent_text(sid)

            sent_b = await exchange(window_b, fake_b, sid, "question from window B", "answer in window B")
            assert holds(sent_b, SUMMARY_MARKER, "question 0 ", "question from window B")
            assert not holds(sent_b, "question 2 ")  # the summarised middle is not sent again

            sent_a = await exchange(window_a, fake_a, sid, "question from window A", "answer in window A")
            assert holds(sent_a, SUMMARY_MARKER, "question from window B", "answer in window B",
                         "question from window A")
        home = tmp_path / "hermes-home"
        assert holds(stored_history(home, sid), SUMMARY_MARKER, "question from window B", "answer in window B",
                     "question from window A", "answer in window A")
        assert continuations(home, sid) == 1


async def test_what_one_window_stores_while_the_other_summarises_is_carried_into_the_summary(
    tmp_path: Path,
) -> None:
    release = threading.Event()
    with FakeAnthropic() as fake_a, FakeAnthropic() as fake_b:
        fake_a.script_auxiliary(text_reply("Parser work"), held(release, text_reply(SUMMARY_A)))
        try:
            async with two_windows(tmp_path, fake_a, fake_b) as (window_a, window_b, sid):
                async with anyio.create_task_group() as group:
                    compaction = await compact_held(window_a, fake_a, sid, group)
                    # A has read the conversation and waits for its summary; B has a whole exchange.
                    await exchange(window_b, fake_b, sid, "question from window B meanwhile", "answer in window B")
                    release.set()
                    with anyio.fail_after(10):
                        await compaction.done.wait()
                assert compaction.stop_reason == "end_turn"
                assert "Compacted the conversation" in window_a.agent_text(sid)

                sent_a = await exchange(window_a, fake_a, sid, "question from window A", "answer in window A")
                assert holds(sent_a, SUMMARY_MARKER, "question from window B meanwhile", "answer in window B",
                             "question from window A")
                sent_b = await exchange(window_b, fake_b, sid, "question from window B after", "answer B after")
                assert holds(sent_b, SUMMARY_MARKER, "question from window B meanwhile", "answer in window B",
                             "question from window A", "answer in window A", "question from window B after")
        finally:
            release.set()
        home = tmp_path / "hermes-home"
        assert holds(stored_history(home, sid), SUMMARY_MARKER, "question from window B meanwhile",
                     "answer in window B", "question from window A", "answer in window A",
                     "question from window B after", "answer B after")
        # What B stored before A's compaction ended is replayed once (from the old segment), not twice.
        async with running_agent(tmp_path, fake_a, home=home, workspace=tmp_path / "workspace") as window_c:
            await window_c.conn.load_session(cwd=str(window_c.workspace), session_id=sid, mcp_servers=[])
            shown = [u["content"]["text"] for u in window_c.updates(sid, "user_message_chunk")]
            assert shown.count("question from window B meanwhile") == 1


async def test_a_turn_running_in_one_window_while_the_other_compacts_lands_in_the_summary(tmp_path: Path) -> None:
    release = threading.Event()
    with FakeAnthropic() as fake_a, FakeAnthropic() as fake_b:
        fake_a.script_auxiliary(text_reply("Parser work"), text_reply(SUMMARY_A))
        try:
            async with two_windows(tmp_path, fake_a, fake_b) as (window_a, window_b, sid):
                fake_b.script(held(release, text_reply("answer from the turn in window B")))
                turn_b = PromptTask(window_b, sid)
                async with anyio.create_task_group() as group:
                    expected = len(fake_b.requests) + 1
                    group.start_soon(turn_b.run, "question from the turn in window B")
                    await fake_b.wait_for_request_async(expected)  # B's prompt is stored, its answer held
                    assert await window_a.prompt(sid, "/compact") == "end_turn"
                    release.set()  # B's answer is stored after A's compaction ended B's segment
                    with anyio.fail_after(10):
                        await turn_b.done.wait()
                assert turn_b.stop_reason == "end_turn"

                sent_a = await exchange(window_a, fake_a, sid, "question from window A", "answer in window A")
                assert holds(sent_a, SUMMARY_MARKER, "question from the turn in window B",
                             "answer from the turn in window B", "question from window A")
                sent_b = await exchange(window_b, fake_b, sid, "question from window B", "answer in window B")
                assert holds(sent_b, SUMMARY_MARKER, "question from window A", "answer in window A")
                assert sent_b.count("answer from the turn in window B") == 1
        finally:
            release.set()
        assert holds(stored_history(tmp_path / "hermes-home", sid), "answer from the turn in window B",
                     "answer in window A", "answer in window B")


async def test_two_windows_compacting_at_once_leave_one_continuation(tmp_path: Path) -> None:
    release = threading.Event()
    with FakeAnthropic() as fake_a, FakeAnthropic() as fake_b:
        fake_a.script_auxiliary(text_reply("Parser work"), held(release, text_reply(SUMMARY_A)))
        fake_b.script_auxiliary(text_reply(SUMMARY_B))
        try:
            async with two_windows(tmp_path, fake_a, fake_b) as (window_a, window_b, sid):
                async with anyio.create_task_group() as group:
                    compaction = await compact_held(window_a, fake_a, sid, group)
                    assert await window_b.prompt(sid, "/compact") == "end_turn"  # B finishes first
                    assert "Compacted the conversation" in window_b.agent_text(sid)
                    release.set()
                    with anyio.fail_after(10):
                        await compaction.done.wait()
                assert ADOPTED in window_a.agent_text(sid)
                card = next(u for u in window_a.updates(sid, "tool_call") if u["title"] == "Compacting conversation")
                assert window_a.tool_updates(sid, card["toolCallId"])[-1]["status"] == "completed"

                sent_a = await exchange(window_a, fake_a, sid, "question from window A", "answer in window A")
                assert mentions(sent_a, SUMMARY_B) and not mentions(sent_a, SUMMARY_A)
                sent_b = await exchange(window_b, fake_b, sid, "question from window B", "answer in window B")
                assert holds(sent_b, SUMMARY_MARKER, "question from window A", "answer in window A",
                             "question from window B")
        finally:
            release.set()
        home = tmp_path / "hermes-home"
        assert continuations(home, sid) == 1
        with SessionDB(home / "acp-hermes" / "state.db") as db:
            assert len(db.segments(sid)) == 2
        assert holds(stored_history(home, sid), "question from window A", "answer in window A",
                     "question from window B", "answer in window B")
