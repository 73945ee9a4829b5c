"""The agent loop in-process: model → tools → model, driven by the fake provider (no HTTP)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import pytest

from acp_hermes.core.events import AgentText, AgentThought, ToolCallFinished, ToolCallStarted
from acp_hermes.core.history import repaired, unanswered_calls
from acp_hermes.core.loop import (
    CANCELLED_RESULT,
    NOT_RUN_AFTER_QUESTION,
    AgentLoop,
    TurnControls,
    TurnResult,
    TurnSettings,
)
from acp_hermes.core.steering import Steer, Steering
from acp_hermes.core.transcript import StoredReply, Transcript, history_from_rows, stored_messages
from acp_hermes.core.turn_input import TurnInput, UserPrompt
from acp_hermes.core.user_prompt import TextPart
from acp_hermes.model.messages import Message, Text
from acp_hermes.model.types import Completed, ModelError, ModelRequest, StreamEvent, TextDelta, ToolUseReady, Usage
from acp_hermes_memory.session_db import SessionDB
from acp_hermes_tools.clarify import ASKED_IN_CHAT, CLARIFY_TOOL
from acp_hermes_tools.context import ToolContext
from acp_hermes_tools.contracts import ToolEventSink
from acp_hermes_tools.files import FILE_TOOLS
from acp_hermes_tools.local_io import LocalEditor
from acp_hermes_tools.registry import Access, Tool, ToolRegistry, ToolResult
from acp_hermes_tools.todo import TODO_TOOL
from tests.support.fake_provider import FakeProvider, text, thinking, tool_call, tool_calls
from tests.support.tools import EventLog, RecordingGate, make_scope
from tests.support.wire import blocks, wire

pytestmark = pytest.mark.anyio

SESSION = "session-loop"


@dataclass
class Rig:
    loop: AgentLoop
    provider: FakeProvider
    log: EventLog
    transcript: Transcript
    db: SessionDB
    hints: Any = None

    async def turn(self, prompt: str = "hello", max_iterations: int = 10) -> TurnResult:
        settings = TurnSettings(model="claude-test", max_tokens=1024, thinking_budget=None,
                                max_iterations=max_iterations, cache_ttl="5m")
        turn_input = TurnInput(UserPrompt((Text(prompt),), prompt, (TextPart(prompt),)), hints=self.hints)
        return await self.loop.run_turn(turn_input, settings)

    def of(self, kind: type) -> list[Any]:
        return [e for e in self.log.events if isinstance(e, kind)]

    def shown_text(self) -> str:
        return "".join(e.text for e in self.of(AgentText))

    def last_results(self, request: int) -> list[dict[str, Any]]:
        """The tool_result blocks of the last message of the ``request``-th model request."""
        last = wire(self.provider.requests[request].messages)[-1]
        assert last["role"] == "user"
        return [b for b in last["content"] if b["type"] == "tool_result"]


class SignalLog(EventLog):
    """An event log that says when a call finished, and can cancel a scope when one starts."""

    def __init__(self, cancel_on_start: anyio.CancelScope | None = None) -> None:
        super().__init__()
        self.finished = anyio.Event()
        self._cancel_on_start = cancel_on_start

    async def emit(self, event: Any) -> None:
        await super().emit(event)
        if isinstance(event, ToolCallFinished):
            self.finished.set()
        if isinstance(event, ToolCallStarted) and self._cancel_on_start is not None:
            self._cancel_on_start.cancel()


class Hints:
    def check_tool_call(self, tool_name: str, args: dict[str, Any]) -> str:
        return f"\n[hint for {tool_name}]"


def blocking_tool(started: anyio.Event, *, parallel_safe: bool = False) -> Tool:
    async def handler(args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        started.set()
        await anyio.sleep_forever()
        raise AssertionError("unreachable")

    return Tool(name="wait", description="Waits forever.", schema={"type": "object", "properties": {}},
                handler=handler, kind="other", access=Access.READ, parallel_safe=parallel_safe)


@pytest.fixture
def db(tmp_path: Path) -> Iterator[SessionDB]:
    store = SessionDB(tmp_path / "state" / "state.db")
    store.create_session(SESSION, cwd=str(tmp_path), model="claude-test", mode="default", model_config={},
                         system_prompt="sys")
    yield store
    store.close()


def make_rig(
    tmp_path: Path, db: SessionDB, provider: FakeProvider, *extra: Tool, hints: Any = None, log: EventLog | None = None,
    controls: TurnControls | None = None,
) -> Rig:
    scope = make_scope(tmp_path, session_id=SESSION)
    log = log or EventLog()

    def context(call_id: str, title: str, sink: ToolEventSink) -> ToolContext:
        return ToolContext(call_id=call_id, scope=scope, editor=LocalEditor(), gate=RecordingGate(), sink=sink,
                           title=title)

    transcript = Transcript(SESSION, db)
    loop = AgentLoop(provider=provider, registry=ToolRegistry([*FILE_TOOLS, TODO_TOOL, *extra]), sink=log,  # type: ignore[arg-type]
                     transcript=transcript, system_prompt="You are a test.", make_context=context, scope=scope,
                     controls=controls)
    return Rig(loop, provider, log, transcript, db, hints)


def assert_valid_as_stored(messages: list[Message]) -> None:
    """The history needs no repair: every tool_use already has its result."""
    assert unanswered_calls(messages) == []
    assert repaired(messages) == messages


async def test_plain_text_turn_streams_text_and_ends(tmp_path: Path, db: SessionDB) -> None:
    rig = make_rig(tmp_path, db, FakeProvider().script(text("Hello there, friend", chunks=3)))
    result = await rig.turn("hi")
    assert result.stop_reason == "end_turn"
    assert result.model_calls == 1
    assert [e.text for e in rig.of(AgentText)] == ["Hello t", "here, f", "riend"]
    assert len({e.message_id for e in rig.of(AgentText)}) == 1
    request = rig.provider.requests[0]
    assert request.system == "You are a test."
    assert wire(request.messages) == [{"role": "user", "content": [{"type": "text", "text": "hi"}]}]
    assert {t["name"] for t in request.tools} >= {"read_file", "todo"}
    assert wire(rig.transcript.messages)[-1] == {"role": "assistant",
                                                 "content": [{"type": "text", "text": "Hello there, friend"}]}
    assert [r.role for r in db.messages(SESSION)] == ["user", "assistant"]


async def test_thinking_is_reported_and_stored(tmp_path: Path, db: SessionDB) -> None:
    rig = make_rig(tmp_path, db, FakeProvider().script(thinking("let me see", "42")))
    await rig.turn()
    assert [e.text for e in rig.of(AgentThought)] == ["let me see"]
    assert rig.shown_text() == "42"
    assert db.messages(SESSION)[-1].reasoning == "let me see"
    assert wire(rig.transcript.messages)[-1]["content"][0]["type"] == "thinking"


@pytest.mark.parametrize(("api_reason", "expected"), [
    ("end_turn", "end_turn"), ("stop_sequence", "end_turn"), ("max_tokens", "max_tokens"),
    ("refusal", "refusal"), ("model_context_window_exceeded", "max_tokens"),
])
async def test_model_stop_reason_maps_to_turn_stop_reason(
    tmp_path: Path, db: SessionDB, api_reason: str, expected: str
) -> None:
    rig = make_rig(tmp_path, db, FakeProvider().script(text("x", stop_reason=api_reason)))
    assert (await rig.turn()).stop_reason == expected


async def test_tool_round_trip_sends_result_in_next_request(tmp_path: Path, db: SessionDB) -> None:
    (tmp_path / "notes.txt").write_text("alpha\nbeta\n")
    provider = FakeProvider().script(tool_call("read_file", {"path": "notes.txt"}, preface="Reading."),
                                     text("It says alpha and beta."))
    rig = make_rig(tmp_path, db, provider)
    result = await rig.turn("what is in notes.txt?")
    assert result.stop_reason == "end_turn"
    assert result.model_calls == 2
    [started] = rig.of(ToolCallStarted)
    [finished] = rig.of(ToolCallFinished)
    assert (started.name, started.kind, started.raw_input) == ("read_file", "read", {"path": "notes.txt"})
    assert finished.call_id == started.call_id and finished.status == "completed"
    [block] = rig.last_results(1)
    assert block["tool_use_id"] == started.call_id
    assert "alpha" in block["content"] and "beta" in block["content"]
    assert not block.get("is_error")
    assert rig.shown_text() == "Reading.It says alpha and beta."
    assert [r.role for r in db.messages(SESSION)] == ["user", "assistant", "tool", "assistant"]
    assert_valid_as_stored(rig.transcript.messages)


async def test_several_calls_in_one_message_are_all_answered_in_order(tmp_path: Path, db: SessionDB) -> None:
    (tmp_path / "a.txt").write_text("AAA\n")
    (tmp_path / "b.txt").write_text("BBB\n")
    todos = [{"id": "1", "content": "Read files", "status": "in_progress"}]
    provider = FakeProvider().script(
        tool_calls(("read_file", {"path": "a.txt"}), ("read_file", {"path": "b.txt"}), ("todo", {"todos": todos})),
        text("done"))
    rig = make_rig(tmp_path, db, provider)
    await rig.turn()
    ids = [e.call_id for e in rig.of(ToolCallStarted)]
    results = rig.last_results(1)
    assert [b["tool_use_id"] for b in results] == ids
    assert "AAA" in results[0]["content"] and "BBB" in results[1]["content"]
    assert "Read files" in results[2]["content"]
    assert all(e.status == "completed" for e in rig.of(ToolCallFinished))


UNPARSED: list[StreamEvent] = [
    ToolUseReady("toolu_unparsed", "read_file", None, '{"path": '),
    Completed(blocks({"type": "tool_use", "id": "toolu_unparsed", "name": "read_file", "input": {}}), "tool_use",
              Usage()),
]


@pytest.mark.parametrize(("reply", "message"), [
    (tool_call("no_such_tool", {}), "unknown tool 'no_such_tool'"),
    (tool_call("read_file", {}), "invalid arguments for read_file"),
    (tool_call("read_file", {"path": 7}), "invalid arguments for read_file"),
    (UNPARSED, "the arguments for read_file are not valid JSON"),
])
async def test_bad_call_gives_error_result_and_turn_continues(
    tmp_path: Path, db: SessionDB, reply: list[StreamEvent], message: str
) -> None:
    provider = FakeProvider().script(reply, text("Sorry, let me fix that."))
    rig = make_rig(tmp_path, db, provider)
    result = await rig.turn()
    assert result.stop_reason == "end_turn" and result.model_calls == 2
    [block] = rig.last_results(1)
    assert block["is_error"] is True
    assert message in block["content"]
    [finished] = rig.of(ToolCallFinished)
    assert finished.status == "failed"
    assert rig.shown_text() == "Sorry, let me fix that."


async def test_hints_are_appended_and_usage_is_accumulated(tmp_path: Path, db: SessionDB) -> None:
    (tmp_path / "f.txt").write_text("x\n")
    provider = FakeProvider().script(tool_call("read_file", {"path": "f.txt"}),
                                     text("ok", usage=Usage(100, 7, cache_read_tokens=50, cache_write_tokens=3)))
    rig = make_rig(tmp_path, db, provider, hints=Hints())
    result = await rig.turn()
    [block] = rig.last_results(1)
    assert block["content"].endswith("\n[hint for read_file]")
    assert result.usage == Usage(110, 12, 50, 3)
    assert result.context_tokens == 100 + 50 + 3 + 7  # the last call's prompt and output


async def test_iteration_budget_stops_the_turn(tmp_path: Path, db: SessionDB) -> None:
    (tmp_path / "f.txt").write_text("x\n")
    provider = FakeProvider().script(*(tool_call("read_file", {"path": "f.txt"}) for _ in range(3)))
    rig = make_rig(tmp_path, db, provider)
    result = await rig.turn(max_iterations=2)
    assert result.stop_reason == "max_turn_requests"
    assert result.model_calls == 2
    assert len(provider.requests) == 2 and len(provider.replies) == 1  # the third call was never made
    assert len(rig.of(ToolCallFinished)) == 2
    assert_valid_as_stored(rig.transcript.messages)


async def test_budget_pressure_notes_ride_on_the_next_tool_result(tmp_path: Path, db: SessionDB) -> None:
    (tmp_path / "f.txt").write_text("x\n")
    provider = FakeProvider().script(*(tool_call("read_file", {"path": "f.txt"}) for _ in range(9)), text("done"))
    rig = make_rig(tmp_path, db, provider)
    result = await rig.turn(max_iterations=10)
    assert result.stop_reason == "end_turn" and result.model_calls == 10
    notes = {n: rig.last_results(n)[0]["content"] for n in range(1, 10)}  # request n carries call n's result
    noted = {n for n, content in notes.items() if "[Turn budget:" in content}
    assert noted == {7, 9}  # 70 % and 90 %, once each
    assert notes[7].endswith("7 of 10 model calls used (70%). Start wrapping up: finish the current step, "
                             "then report what is done and what is left.]")
    assert "9 of 10 model calls used (90%). Wrap up now" in notes[9]
    assert all(m["role"] != "user" or isinstance(m["content"], list) or "budget" not in m["content"]
               for m in wire(rig.transcript.messages))  # no extra message: the note is inside a tool result


class BreakingProvider(FakeProvider):
    """Streams ``events``, then fails with ``error`` instead of completing the message."""

    def __init__(self, events: list[StreamEvent], error: BaseException) -> None:
        super().__init__()
        self._events = events
        self._error = error

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        self.requests.append(request)
        for event in self._events:
            await anyio.sleep(0)
            yield event
        raise self._error


async def test_model_error_ends_the_turn_with_a_clear_message(tmp_path: Path, db: SessionDB) -> None:
    provider = FakeProvider().script(ModelError("The model API is overloaded (529)."))
    rig = make_rig(tmp_path, db, provider)
    result = await rig.turn()
    assert result.model_calls == 1
    assert result.usage == Usage()
    assert "⚠️ The model API is overloaded (529)." in rig.shown_text()
    assert [r.role for r in db.messages(SESSION)] == ["user"]  # nothing was shown, nothing kept
    assert wire(rig.transcript.messages) == [{"role": "user", "content": [{"type": "text", "text": "hello"}]}]


async def test_model_error_mid_message_keeps_partial_and_closes_announced_calls(
    tmp_path: Path, db: SessionDB
) -> None:
    events: list[StreamEvent] = [TextDelta("Let me look"), ToolUseReady("toolu_cut", "read_file", {"path": "x"}, "")]
    rig = make_rig(tmp_path, db, BreakingProvider(events, ModelError("The connection broke.")))
    await rig.turn()
    [finished] = rig.of(ToolCallFinished)
    assert (finished.call_id, finished.status) == ("toolu_cut", "failed")
    assert rig.shown_text().startswith("Let me look") and "The connection broke." in rig.shown_text()
    last = db.messages(SESSION)[-1]
    assert (last.role, last.content, last.finish_reason) == ("assistant", "Let me look", "incomplete")
    assert wire(rig.transcript.messages)[-1] == {"role": "assistant",
                                                 "content": [{"type": "text", "text": "Let me look"}]}
    assert_valid_as_stored(rig.transcript.messages)


async def test_stream_without_completion_ends_the_turn(tmp_path: Path, db: SessionDB) -> None:
    rig = make_rig(tmp_path, db, FakeProvider().script([TextDelta("half")]))
    result = await rig.turn()
    assert result.model_calls == 1
    assert "The model stream ended unexpectedly." in rig.shown_text()
    assert db.messages(SESSION)[-1].finish_reason == "incomplete"


async def test_model_stopping_before_its_calls_run_closes_them(tmp_path: Path, db: SessionDB) -> None:
    reply = tool_call("read_file", {"path": "f.txt"})
    done = reply[-1]
    assert isinstance(done, Completed)
    reply[-1] = Completed(done.content, "max_tokens", done.usage)
    rig = make_rig(tmp_path, db, FakeProvider().script(reply))
    result = await rig.turn()
    assert result.stop_reason == "max_tokens"
    [finished] = rig.of(ToolCallFinished)
    assert finished.status == "failed"
    results = wire(rig.transcript.messages)[-1]["content"]
    assert results[0]["tool_use_id"] == finished.call_id and results[0]["is_error"] is True
    assert_valid_as_stored(rig.transcript.messages)


async def test_pause_turn_continues_with_another_model_call(tmp_path: Path, db: SessionDB) -> None:
    provider = FakeProvider().script(text("Working", stop_reason="pause_turn"), text(" done"))
    rig = make_rig(tmp_path, db, provider)
    result = await rig.turn()
    assert (result.stop_reason, result.model_calls) == ("end_turn", 2)
    assert wire(provider.requests[1].messages)[-1]["role"] == "assistant"


async def test_cancel_while_a_tool_runs_answers_every_call(tmp_path: Path, db: SessionDB) -> None:
    started = anyio.Event()
    provider = FakeProvider().script(tool_call("wait", {}), text("after the cancel"))
    rig = make_rig(tmp_path, db, provider, blocking_tool(started))
    async with anyio.create_task_group() as group:
        group.start_soon(rig.turn)
        await started.wait()
        group.cancel_scope.cancel()
    [finished] = rig.of(ToolCallFinished)
    assert finished.status == "failed"
    [block] = wire(rig.transcript.messages)[-1]["content"]
    assert block == {"type": "tool_result", "tool_use_id": finished.call_id, "content": CANCELLED_RESULT,
                     "is_error": True}
    assert db.messages(SESSION)[-1].role == "tool"
    assert rig.loop.result.model_calls == 1 and rig.loop.result.usage == Usage(10, 5)
    assert_valid_as_stored(rig.transcript.messages)
    # The next turn's request is accepted as it is (the fake refuses unanswered tool_use).
    await rig.turn("again")
    assert rig.provider.requests[-1].messages == rig.transcript.messages[:-1]


async def test_cancel_in_a_parallel_batch_keeps_finished_results(tmp_path: Path, db: SessionDB) -> None:
    (tmp_path / "f.txt").write_text("finished\n")
    started = anyio.Event()
    provider = FakeProvider().script(tool_calls(("read_file", {"path": "f.txt"}), ("wait", {})))
    log = SignalLog()
    rig = make_rig(tmp_path, db, provider, blocking_tool(started, parallel_safe=True), log=log)
    async with anyio.create_task_group() as group:
        group.start_soon(rig.turn)
        await started.wait()
        await log.finished.wait()  # read_file is done while "wait" still runs
        group.cancel_scope.cancel()
    assert_valid_as_stored(rig.transcript.messages)
    read_id, wait_id = (e.call_id for e in rig.of(ToolCallStarted))
    first, second = wire(rig.transcript.messages)[-1]["content"]
    assert first["tool_use_id"] == read_id and "finished" in first["content"] and not first.get("is_error")
    assert second["tool_use_id"] == wait_id and second["content"] == CANCELLED_RESULT
    assert {e.call_id: e.status for e in rig.of(ToolCallFinished)} == {read_id: "completed", wait_id: "failed"}
    assert_valid_as_stored(rig.transcript.messages)


async def test_cancel_while_streaming_keeps_what_was_shown(tmp_path: Path, db: SessionDB) -> None:
    scope = anyio.CancelScope()
    reply = tool_call("read_file", {"path": "f.txt"}, preface="Checking")
    rig = make_rig(tmp_path, db, FakeProvider().script(reply), log=SignalLog(cancel_on_start=scope))
    with scope:
        await rig.turn()
    assert scope.cancelled_caught
    [started] = rig.of(ToolCallStarted)
    [finished] = rig.of(ToolCallFinished)
    assert finished.call_id == started.call_id and finished.status == "failed"
    last = db.messages(SESSION)[-1]
    assert (last.role, last.content, last.finish_reason) == ("assistant", "Checking", "cancelled")
    assert wire(rig.transcript.messages)[-1] == {"role": "assistant", "content": [{"type": "text", "text": "Checking"}]}
    assert_valid_as_stored(rig.transcript.messages)


async def test_a_question_for_the_chat_ends_the_turn_after_its_round(tmp_path: Path, db: SessionDB) -> None:
    (tmp_path / "a.txt").write_text("AAA\n")
    provider = FakeProvider().script(
        tool_calls(("read_file", {"path": "a.txt"}), ("clarify", {"question": "Which one?", "choices": ["a", "b"]}),
                   ("write_file", {"path": "b.txt", "content": "x"}), preface="Let me check."),
        text("Going with b."),
    )
    rig = make_rig(tmp_path, db, provider, CLARIFY_TOOL)
    result = await rig.turn("fix it")
    assert (result.stop_reason, result.model_calls) == ("end_turn", 1)
    read_id, ask_id, write_id = (e.call_id for e in rig.of(ToolCallStarted))
    assert {e.call_id: e.status for e in rig.of(ToolCallFinished)} == {
        read_id: "completed", ask_id: "completed", write_id: "failed"}
    assert not (tmp_path / "b.txt").exists()  # planned after the question: it waits for the answer
    question = "\n\nWhich one?\n\n1. a\n2. b\n\nReply with a number or in your own words."
    assert rig.shown_text() == "Let me check." + question
    results = {b["tool_use_id"]: b["content"] for b in wire(rig.transcript.messages)[-1]["content"]}
    assert results[ask_id] == ASKED_IN_CHAT and results[write_id] == NOT_RUN_AFTER_QUESTION
    assert_valid_as_stored(rig.transcript.messages)
    rows = db.messages(SESSION)
    assert [r.role for r in rows] == ["user", "assistant", "tool", "tool", "tool", "assistant"]
    assert history_from_rows(rows) == rig.transcript.messages  # the question said in the chat is not history
    assert isinstance(last := list(stored_messages(rows))[-1], StoredReply) and last.text == question

    await rig.turn("b please")  # the answer: the next request pairs every call and ends with it
    sent = rig.provider.requests[1].messages
    assert wire(sent)[-1] == {"role": "user", "content": [{"type": "text", "text": "b please"}]}
    assert_valid_as_stored(list(sent))


# -- steering and budgets (TurnControls)


def steer_of(text: str) -> Steer:
    return Steer(blocks({"type": "text", "text": text}), text, (TextPart(text),))


def steering_tool(steering: Steering, text: str) -> Tool:
    """A tool during whose run the user steers."""

    async def handler(args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        assert steering.offer(steer_of(text))
        return ToolResult("looked")

    return Tool(name="look", description="Looks.", schema={"type": "object", "properties": {}}, handler=handler,
                kind="read", access=Access.READ)


def test_the_steering_box_takes_words_only_while_a_turn_runs() -> None:
    steering = Steering()
    assert not steering.offer(steer_of("too early"))
    steering.open()
    assert steering.offer(steer_of("one")) and steering.offer(steer_of("two"))
    assert [s.plain_text for s in steering.take()] == ["one", "two"]
    assert steering.offer(steer_of("late"))
    assert [s.plain_text for s in steering.close()] == ["late"]  # handed back, not lost
    assert not steering.accepting and not steering.offer(steer_of("after"))


async def test_a_steer_joins_the_results_the_next_request_carries(tmp_path: Path, db: SessionDB) -> None:
    from acp_hermes.core.events import UserText

    steering = Steering()
    steering.open()
    provider = FakeProvider().script(tool_call("look", {}), text("Changed course."))
    rig = make_rig(tmp_path, db, provider, steering_tool(steering, "use the other table"),
                   controls=TurnControls(steering=steering))
    result = await rig.turn("find the rows")
    assert result.model_calls == 2  # no extra request
    last = wire(provider.requests[1].messages)[-1]
    assert [b["type"] for b in last["content"]] == ["tool_result", "text", "text"]
    assert last["content"][-1]["text"] == "use the other table"
    assert provider.requests[1].messages[0] == provider.requests[0].messages[0]  # what came before is unchanged
    assert [e.text for e in rig.of(UserText)] == ["use the other table"]
    assert_valid_as_stored(rig.transcript.messages)
    # Read back from its rows, the history is the one that was sent (a reload keeps the cached prefix).
    assert history_from_rows(db.messages(SESSION)) == rig.transcript.messages
    assert [type(m).__name__ for m in stored_messages(db.messages(SESSION))] == [
        "StoredPrompt", "StoredReply", "ToolOutcome", "StoredPrompt", "StoredReply"]


async def test_a_steer_waiting_when_the_model_ends_gets_one_more_request(tmp_path: Path, db: SessionDB) -> None:
    steering = Steering()
    steering.open()

    class SteeringLog(EventLog):
        async def emit(self, event: Any) -> None:
            await super().emit(event)
            if isinstance(event, AgentText) and event.text == "First.":
                steering.offer(steer_of("and shorter"))

    provider = FakeProvider().script(text("First."), text("Short."))
    rig = make_rig(tmp_path, db, provider, log=SteeringLog(), controls=TurnControls(steering=steering))
    result = await rig.turn()
    assert result.stop_reason == "end_turn" and result.model_calls == 2
    assert [m["role"] for m in wire(provider.requests[1].messages)] == ["user", "assistant", "user"]
    assert rig.shown_text() == "First.Short."


async def test_a_spent_budget_ends_the_turn_before_the_next_request(tmp_path: Path, db: SessionDB) -> None:
    spent: list[Usage] = []
    stop = "Budget reached."
    provider = FakeProvider().script(tool_call("read_file", {"path": "x.txt"}), text("never asked"))
    (tmp_path / "x.txt").write_text("x", encoding="utf-8")
    rig = make_rig(tmp_path, db, provider, controls=TurnControls(
        stop_before_request=lambda: stop if spent else None, spent=spent.append))
    result = await rig.turn()
    assert len(provider.requests) == 1 and len(spent) == 1
    assert result.stop_reason == "end_turn" and result.failure == stop
    assert stop in rig.shown_text()
    assert_valid_as_stored(rig.transcript.messages)  # the results of the call that ran are kept
    assert stop in db.messages(SESSION)[-1].content  # shown again on replay, never sent to the model
    assert all(stop not in str(m) for m in wire(rig.transcript.messages))
