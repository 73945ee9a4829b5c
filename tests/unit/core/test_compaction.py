"""Compaction of a live session in-process: the hidden memory flush, the summary by the auxiliary
model, the continuation segment in the SessionDB, the visible card, and a restore afterwards."""

from __future__ import annotations

import pytest

from acp_hermes.core.compression import FLUSH_INSTRUCTION, SUMMARY_MARKER
from acp_hermes.core.events import ToolCallFinished, ToolCallStarted, UsageReported
from acp_hermes.core.session import Session
from acp_hermes.core.transcript import ToolOutcome, stored_messages
from acp_hermes.core.user_prompt import TextPart
from tests.support.fake_provider import text, tool_call
from tests.support.sessions import Env
from tests.support.wire import wire

pytestmark = pytest.mark.anyio
SUMMARY = "## Goal\nShip the parser.\n## Critical Context\nThe user is called Ada; config lives in conf/app.toml."


async def chat(env: Env, session: Session, turns: int) -> None:
    env.provider.script(*(text(f"answer {n} " + "detail " * 200) for n in range(turns)))
    for n in range(turns):
        assert await session.prompt([TextPart(f"question {n} " + "context " * 200)]) == "end_turn"


async def test_compact_flushes_memory_summarises_and_continues_in_a_child_segment(env: Env) -> None:
    session = await env.manager().create(env.cwd, ())
    await chat(env, session, 12)
    root = session.id
    session.set_choice("mode", "accept-edits")  # the flush's memory write needs no question then
    env.provider.script(tool_call("memory", {"action": "add", "target": "user", "content": "The user is Ada."}))
    env.provider.script_auxiliary(SUMMARY)

    compaction = await session.compact("the parser")

    assert compaction.done and compaction.after_tokens < compaction.before_tokens
    flush = env.provider.requests[-1]
    assert FLUSH_INSTRUCTION in str(wire(flush.messages)[-1]["content"])
    assert "The user is Ada." in (env.runtime.paths.memories / "USER.md").read_text()
    replayed = [m for m in stored_messages(env.runtime.db.conversation(root)) if isinstance(m, ToolOutcome)]
    assert [m.name for m in replayed] == ["memory", "compact"]  # the flush's write is replayed by a load too
    system, prompt = env.provider.auxiliary_prompts[-1]
    assert "Goal" in system + prompt and "the parser" in prompt
    history = wire(session.state.transcript.messages)
    assert any(SUMMARY_MARKER in str(m["content"]) and "Ada" in str(m["content"]) for m in history)
    assert FLUSH_INSTRUCTION not in str(history)  # the flush left no trace
    assert history[0]["content"][0]["text"].startswith("question 0")  # the first exchange is kept whole

    db = env.runtime.db
    segments = db.segments(root)
    assert segments[0].id == root and len(segments) == 2
    assert segments[0].end_reason == "compression" and segments[1].parent_session_id == root
    assert session.state.transcript.session_id == segments[1].id and session.id == root
    assert [s.id for s in db.list_sessions()[0]] == [root]  # the editor sees one session

    cards = [e for e in env.log.events if isinstance(e, ToolCallStarted) and e.name == "compact"]
    assert [c.title for c in cards] == ["Compacting conversation"]
    finished = [e for e in env.log.events if isinstance(e, ToolCallFinished) and e.call_id == cards[0].call_id]
    assert finished[0].status == "completed" and "Ada" in finished[0].display[0].text
    usage = [e for e in env.log.events if isinstance(e, UsageReported)][-1]
    assert usage.used == compaction.after_tokens  # the context now, not a running total

    env.provider.script(text("still with you"))
    assert await session.prompt([TextPart("what is my name?")]) == "end_turn"
    assert SUMMARY_MARKER in str(wire(env.provider.requests[-1].messages))


async def test_a_restored_session_continues_from_the_summary_and_replays_everything(env: Env) -> None:
    session = await env.manager().create(env.cwd, ())
    await chat(env, session, 12)
    env.provider.script(text("nothing to save"))
    env.provider.script_auxiliary(SUMMARY)
    assert (await session.compact()).done
    env.provider.script(text("after compaction"))
    assert await session.prompt([TextPart("one more")]) == "end_turn"
    compacted_history = session.state.transcript.messages

    restored, rows = await env.manager().restore(session.id, env.cwd, ())
    assert restored.state.transcript.messages == compacted_history
    shown = list(stored_messages(rows))
    prompts = [m for m in shown if not isinstance(m, ToolOutcome)]
    assert len(prompts) == 2 * 13  # every question and answer once, none of the carried copies
    assert [m.name for m in shown if isinstance(m, ToolOutcome)] == ["compact"]
    assert [row.id for row in env.runtime.db.conversation(session.id)] == [row.id for row in rows]


async def test_a_short_conversation_is_left_alone_and_a_failed_summary_changes_nothing(env: Env) -> None:
    session = await env.manager().create(env.cwd, ())
    await chat(env, session, 1)
    assert not (await session.compact()).done
    await chat(env, session, 11)
    env.provider.script(text("ok"))
    env.provider.script_auxiliary("")
    before = list(session.state.transcript.messages)
    result = await session.compact()
    assert not result.done and "unchanged" in result.message
    assert session.state.transcript.messages == before and len(env.runtime.db.segments(session.id)) == 1


async def test_a_full_context_is_compacted_before_the_next_turn(env: Env) -> None:
    session = await env.manager().create(env.cwd, ())
    await chat(env, session, 20)
    session.state.last_context_tokens = 600_000  # the last call reported a context past half the window (1M)
    env.provider.script(text("saved nothing"), text("fresh answer"))
    env.provider.script_auxiliary(SUMMARY)
    assert await session.prompt([TextPart("next")]) == "end_turn"
    assert len(env.runtime.db.segments(session.id)) == 2
    assert SUMMARY_MARKER in str(wire(env.provider.requests[-1].messages))


async def test_a_compaction_cut_short_by_a_kill_leaves_the_old_segment_current(env: Env) -> None:
    session = await env.manager().create(env.cwd, ())
    await chat(env, session, 3)
    db = env.runtime.db
    record = db.get_session(session.id)
    assert record is not None
    # What a process killed inside the compaction leaves: the child written, the switch not yet.
    db.create_session("half-done", cwd=record.cwd, model=record.model, mode=record.mode, model_config={},
                      system_prompt="new", parent_session_id=session.id, source="compression")
    db.append_message("half-done", "user", "", payload=[{"type": "text", "text": "partial"}],
                      display={"carried": True})
    assert [s.id for s in db.segments(session.id)] == [session.id]
    restored, _ = await env.manager().restore(session.id, env.cwd, ())
    assert restored.state.transcript.session_id == session.id and len(restored.state.transcript.messages) == 6


async def test_deleting_a_compacted_session_deletes_every_segment(env: Env) -> None:
    session = await env.manager().create(env.cwd, ())
    await chat(env, session, 12)
    env.provider.script(text("nothing to save"))
    env.provider.script_auxiliary(SUMMARY)
    assert (await session.compact()).done
    segments = [s.id for s in env.runtime.db.segments(session.id)]
    assert len(segments) == 2
    await env.manager().delete(session.id)
    assert [env.runtime.db.get_session(s) for s in segments] == [None, None]
    assert env.runtime.db.messages(segments[1]) == []
