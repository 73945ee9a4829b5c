"""An in-process model provider for unit tests of the loop and sessions: no HTTP, same rules.

Each ``stream`` call takes the next scripted reply (a list of stream events, an exception to
raise, or a callable that decides from the request). Before replying it builds the exact request
body the real provider would send (``model.provider.request_body``) and refuses it the way the
real API does (``testing.request_checks.request_problem``: e.g. a ``tool_use`` without its
``tool_result``), so a history bug fails a unit test as it would fail in production.
Auxiliary ``complete`` calls have their own queue.
"""

from __future__ import annotations

import itertools
import threading
from collections import deque
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import anyio

from acp_hermes.model.messages import Block, Text, Thinking, ToolUse
from acp_hermes.model.provider import request_body
from acp_hermes.model.types import (
    Completed,
    ModelError,
    ModelRequest,
    StreamEvent,
    TextDelta,
    ThinkingDelta,
    ToolUseReady,
    Usage,
)
from acp_hermes.testing.request_checks import request_problem

Reply = Sequence[StreamEvent] | BaseException | Callable[[ModelRequest], "Sequence[StreamEvent] | BaseException"]

_ids = itertools.count(1)


def text(
    content: str, *, chunks: int = 1, usage: Usage | None = None, stop_reason: str = "end_turn"
) -> list[StreamEvent]:
    """A reply of plain text, streamed in ``chunks`` deltas."""
    size = max(1, -(-len(content) // chunks))
    deltas: list[StreamEvent] = [TextDelta(content[i : i + size]) for i in range(0, len(content), size)]
    return [*deltas, Completed((Text(content),), stop_reason, usage or Usage(10, 5))]


def thinking(thought: str, answer: str) -> list[StreamEvent]:
    return [ThinkingDelta(thought), TextDelta(answer),
            Completed((Thinking(thought, "sig"), Text(answer)), "end_turn", Usage(10, 5))]


def tool_calls(*calls: tuple[str, Mapping[str, Any]], preface: str = "") -> list[StreamEvent]:
    """One assistant message with these tool calls (stop reason ``tool_use``)."""
    events: list[StreamEvent] = [TextDelta(preface)] if preface else []
    content: list[Block] = [Text(preface)] if preface else []
    for name, arguments in calls:
        call_id = f"toolu_inproc_{next(_ids):04d}"
        events.append(ToolUseReady(call_id, name, dict(arguments), ""))
        content.append(ToolUse(call_id, name, dict(arguments)))
    return [*events, Completed(tuple(content), "tool_use", Usage(10, 5))]


def tool_call(name: str, arguments: Mapping[str, Any], *, preface: str = "") -> list[StreamEvent]:
    return tool_calls((name, arguments), preface=preface)


def _already_set() -> threading.Event:
    event = threading.Event()
    event.set()
    return event


@dataclass
class FakeProvider:
    """Implements ``acp_hermes.model.types.Provider`` from a script."""

    replies: deque[Reply] = field(default_factory=deque)
    auxiliary: deque[str | BaseException] = field(default_factory=deque)
    requests: list[ModelRequest] = field(default_factory=list)
    bodies: list[dict[str, Any]] = field(default_factory=list)
    auxiliary_prompts: list[tuple[str, str]] = field(default_factory=list)  # (system, prompt)
    gate: anyio.Event | None = None  # when set, each stream waits for it before its first event
    # As if a first response's output had been handled: the upkeep that waits for it
    # (Runtime.wait_for_first_response) runs at once here.
    responding: threading.Event = field(default_factory=_already_set)

    def script(self, *replies: Reply) -> FakeProvider:
        self.replies.extend(replies)
        return self

    def script_auxiliary(self, *answers: str | BaseException) -> FakeProvider:
        self.auxiliary.extend(answers)
        return self

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        self.requests.append(request)
        body = request_body(request)
        self.bodies.append(body)
        problem = request_problem(body)
        if problem is not None:
            raise ModelError(f"The model API returned an error (400): {problem}")
        if not self.replies:
            raise ModelError(f"fake provider: script exhausted (request {len(self.requests)} was not scripted)")
        item = self.replies.popleft()
        reply = item(request) if callable(item) else item
        if isinstance(reply, BaseException):
            raise reply
        if self.gate is not None:
            await self.gate.wait()
        for event in reply:
            await anyio.sleep(0)  # a real stream yields to the event loop between events
            yield event

    async def complete(self, *, model: str, system: str, prompt: str, max_tokens: int = 512) -> tuple[str, Usage]:
        self.auxiliary_prompts.append((system, prompt))
        if not self.auxiliary:
            raise ModelError("fake provider: no auxiliary answer scripted")
        answer = self.auxiliary.popleft()
        if isinstance(answer, BaseException):
            raise answer
        return answer, Usage(3, 2)
