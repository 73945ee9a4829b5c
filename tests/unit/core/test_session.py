"""Sessions in-process: turns through the fake provider, stored in a real SessionDB and restored."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
import pytest

from acp_hermes.core.errors import InvalidInput, SessionNotFoundError
from acp_hermes.core.events import AgentText, ToolCallStarted, UsageReported
from acp_hermes.core.history import INTERRUPTED, repaired, unanswered_calls
from acp_hermes.core.session import Session
from acp_hermes.core.transcript import StoredPrompt, StoredReply, ToolOutcome, stored_messages
from acp_hermes.core.turn_input import PLAN_MODE_NOTE
from acp_hermes.core.user_prompt import LinkPart, ResourcePart, TextPart
from acp_hermes.model.types import ModelRequest, StreamEvent
from acp_hermes.permissions.modes import Mode
from acp_hermes_tools.contracts import TextDisplay
from tests.support.fake_provider import text, tool_call
from tests.support.sessions import Env
from tests.support.wire import blocks, wire

pytestmark = pytest.mark.anyio


async def ask(session: Session, prompt: str) -> str:
    return await session.prompt([TextPart(prompt)])


async def test_prompt_is_stored_and_restored_with_the_same_history(env: Env) -> None:
    (env.cwd / "a.txt").write_text("apple\n")
    env.provider.script(tool_call("read_file", {"path": "a.txt"}, preface="Looking."), text("It is apple."))
    session = await env.manager().create(env.cwd, ())
    assert await ask(session, "what is in a.txt?") == "end_turn"
    live = session.state.transcript.messages
    assert [m["role"] for m in wire(live)] == ["user", "assistant", "user", "assistant"]

    restored, rows = await env.manager().restore(session.id, env.cwd, ())
    assert restored is not session
    assert restored.state.transcript.messages == live
    assert restored.state.system_prompt == session.state.system_prompt != ""
    shown = list(stored_messages(rows))
    assert [type(m) for m in shown] == [StoredPrompt, StoredReply, ToolOutcome, StoredReply]
    prompt, first, call, last = shown
    assert isinstance(prompt, StoredPrompt) and prompt.parts == (TextPart("what is in a.txt?"),)
    assert isinstance(first, StoredReply) and first.text == "Looking."
    assert isinstance(call, ToolOutcome) and (call.name, call.ok, call.raw_input) == (
        "read_file", True, {"path": "a.txt"})
    assert "apple" in call.text and call.result_block() == live[2].blocks[0]  # as the model read it
    assert isinstance(last, StoredReply) and last.text == "It is apple."


async def test_restored_session_continues_the_conversation(env: Env) -> None:
    env.provider.script(text("first answer"), text("second answer"))
    session = await env.manager().create(env.cwd, ())
    await ask(session, "one")
    restored, _ = await env.manager().restore(session.id, env.cwd, ())
    assert await ask(restored, "two") == "end_turn"
    sent = wire(env.provider.requests[-1].messages)
    assert [m["role"] for m in sent] == ["user", "assistant", "user"]
    assert sent[1]["content"] == [{"type": "text", "text": "first answer"}]
    assert env.provider.requests[-1].system == session.state.system_prompt


async def test_turn_usage_is_recorded_and_reported(env: Env) -> None:
    env.provider.script(text("hi"))
    session = await env.manager().create(env.cwd, ())
    await ask(session, "hello")
    record = env.runtime.db.get_session(session.id)
    assert record is not None
    assert (record.input_tokens, record.output_tokens, record.api_call_count) == (10, 5, 1)
    [report] = [e for e in env.log.events if isinstance(e, UsageReported)]
    assert report.used == 15 and session.state.last_context_tokens == 15


async def test_set_choice_persists_and_survives_restore(env: Env) -> None:
    session = await env.manager().create(env.cwd, ())
    session.set_choice("mode", "plan")
    session.set_choice("model", "claude-other")
    session.set_choice("thought_level", "high")
    assert session.services.gate.mode is Mode.PLAN
    record = env.runtime.db.get_session(session.id)
    assert record is not None
    assert (record.mode, record.model, record.model_config) == ("plan", "claude-other", {"thought_level": "high"})
    restored, _ = await env.manager().restore(session.id, env.cwd, ())
    assert (restored.choices.mode, restored.choices.model, restored.choices.thought_level) == (
        Mode.PLAN, "claude-other", "high")


@pytest.mark.parametrize(("option", "value"), [
    ("mode", "yolo"), ("model", "claude-unknown"), ("thought_level", "extreme"), ("colour", "blue"), ("mode", 3),
])
async def test_invalid_choice_is_refused_and_not_persisted(env: Env, option: str, value: Any) -> None:
    session = await env.manager().create(env.cwd, ())
    with pytest.raises(InvalidInput):
        session.set_choice(option, value)
    record = env.runtime.db.get_session(session.id)
    assert record is not None
    assert (record.mode, record.model) == ("default", env.runtime.settings.model)


async def test_choices_shape_the_next_request(env: Env) -> None:
    env.provider.script(text("a plan"))
    session = await env.manager().create(env.cwd, ())
    session.set_choice("mode", "plan")
    session.set_choice("thought_level", "low")
    await ask(session, "plan it")
    request = env.provider.requests[0]
    assert request.thinking_budget == env.runtime.settings.thinking_budgets["low"]
    assert wire(request.messages)[0]["content"][-1] == {"type": "text", "text": PLAN_MODE_NOTE}


async def test_close_ends_the_session_and_refuses_later_prompts(env: Env) -> None:
    manager = env.manager()
    session = await manager.create(env.cwd, ())
    await manager.close(session.id)
    assert session.closed
    with pytest.raises(SessionNotFoundError):
        await manager.get(session.id)
    assert await ask(session, "still there?") == "cancelled"
    assert env.provider.requests == []
    await manager.close(session.id)  # stored but no longer live: closing again is harmless
    with pytest.raises(SessionNotFoundError):
        await manager.close("no-such-session")


async def test_cancel_stops_a_running_turn(env: Env) -> None:
    requested = anyio.Event()

    def reply(request: ModelRequest) -> list[StreamEvent]:
        requested.set()
        return text("never shown")

    env.provider.gate = anyio.Event()  # the stream never starts
    env.provider.script(reply)
    session = await env.manager().create(env.cwd, ())
    outcome: list[str] = []

    async def run() -> None:
        outcome.append(await ask(session, "slow"))

    async with anyio.create_task_group() as group:
        group.start_soon(run)
        await requested.wait()
        session.cancel()
    assert outcome == ["cancelled"]
    assert not [e for e in env.log.events if isinstance(e, AgentText)]
    assert [r.role for r in env.runtime.db.messages(session.id)] == ["user"]
    env.provider.gate = None
    env.provider.script(text("back"))
    assert await ask(session, "again") == "end_turn"  # a cancel stops only the turns before it


async def test_a_cancel_while_the_turn_is_prepared_stops_it_before_the_model_is_asked(
    env: Env, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A cancel (or the editor quitting, which closes the session) that comes before the turn's loop has
    begun — its prompt converted on a thread, say — is not lost: the model's answer is never read and
    the write it asks for, which accept-edits would make unasked, never happens."""
    from acp_hermes.core import attachments

    converting, release = threading.Event(), threading.Event()
    convert = attachments.convert_prompt

    def held(parts: Any, cwd: Path) -> Any:
        converting.set()
        release.wait(10)
        return convert(parts, cwd)

    monkeypatch.setattr(attachments, "convert_prompt", held)
    env.provider.script(tool_call("write_file", {"path": "ran", "content": "x"}), text("done"))
    session = await env.manager().create(env.cwd, ())
    session.set_choice("mode", "accept-edits")
    outcome: list[str] = []

    async def run() -> None:
        outcome.append(await ask(session, "run it"))

    try:
        async with anyio.create_task_group() as group:
            group.start_soon(run)
            with anyio.fail_after(10):
                await anyio.to_thread.run_sync(converting.wait)
            session.cancel()
            release.set()
    finally:
        release.set()
    assert outcome == ["cancelled"]
    assert not [e for e in env.log.events if isinstance(e, ToolCallStarted)] and not (env.cwd / "ran").exists()


async def test_restore_closes_a_call_left_open_by_a_killed_process(env: Env) -> None:
    session = await env.manager().create(env.cwd, ())
    transcript = session.state.transcript
    await transcript.add_user(blocks({"type": "text", "text": "go"}), "go", [TextPart("go")])
    call = {"type": "tool_use", "id": "toolu_killed", "name": "terminal", "input": {"command": "make"}}
    await transcript.add_assistant(blocks(call), message_id="m1", text="", reasoning="", stop_reason="tool_use",
                                   output_tokens=3)

    restored, rows = await env.manager().restore(session.id, env.cwd, ())
    assert wire(restored.state.transcript.messages)[-1] == {"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": "toolu_killed", "content": INTERRUPTED, "is_error": True}]}
    assert unanswered_calls(restored.state.transcript.messages) == []
    assert rows[-1].role == "tool" and rows[-1].tool_call_id == "toolu_killed"
    assert env.runtime.db.messages(session.id)[-1].tool_call_id == "toolu_killed"  # stored, not only in memory
    [closed] = [m for m in stored_messages(rows) if isinstance(m, ToolOutcome)]
    assert (closed.name, closed.ok, closed.display) == ("terminal", False, (TextDisplay(INTERRUPTED),))

    env.provider.script(text("resumed"))
    assert await ask(restored, "continue") == "end_turn"
    assert env.provider.requests[-1].messages == restored.state.transcript.messages[:-1]  # sent as stored, unrepaired


async def test_restore_closes_a_call_whose_siblings_were_answered(env: Env) -> None:
    session = await env.manager().create(env.cwd, ())
    transcript = session.state.transcript
    await transcript.add_user(blocks({"type": "text", "text": "go"}), "go", [TextPart("go")])
    calls = [{"type": "tool_use", "id": f"toolu_{n}", "name": "read_file", "input": {"path": n}} for n in "ab"]
    await transcript.add_assistant(blocks(*calls), message_id="m1", text="", reasoning="", stop_reason="tool_use",
                                   output_tokens=3)
    done = ToolOutcome("toolu_a", "read_file", "Read a", "read", {"path": "a"}, "A", True, (TextDisplay("A"),), ())
    await transcript.add_tool_results([done])

    restored, _ = await env.manager().restore(session.id, env.cwd, ())
    assert unanswered_calls(restored.state.transcript.messages) == []
    assert repaired(restored.state.transcript.messages) == restored.state.transcript.messages


async def test_attached_files_count_as_touched_for_subdirectory_hints(env: Env, tmp_path: Path) -> None:
    (env.cwd / "api").mkdir()
    (env.cwd / "api" / "AGENTS.md").write_text("API rule: every handler validates its input.\n")
    (env.cwd / "api" / "routes.py").write_text("ROUTES = []\n")
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (outside / "AGENTS.md").write_text("never loaded\n")
    env.provider.script(text("noted"), text("again"))
    session = await env.manager().create(env.cwd, ())
    link = LinkPart(uri=f"file://{env.cwd}/api/routes.py", name="routes.py")
    far = ResourcePart(uri=f"file://{outside}/x.txt", text="x")
    assert await session.prompt([TextPart("look"), link, far]) == "end_turn"
    assert await session.prompt([TextPart("again"), link]) == "end_turn"
    first, second = (str(wire(request.messages)[-1]["content"]) for request in env.provider.requests)
    assert "API rule: every handler validates its input." in first and "never loaded" not in first
    assert "API rule" not in second  # once per directory
