"""Typed events the agent loop and its sessions emit.

The core knows nothing about ACP: it describes what happened with these plain values and hands
them to an ``EventSink``. The ACP adapter turns them into ``session/update``s; tests and the
demo can consume them directly. Tools report through the subset in ``tools.contracts``
(``ToolCallUpdated``, ``PlanUpdated``).

``SessionEvent``s are the other stream: what happened in a session that the user is not shown but
an external memory provider hears of (``Session.publish``). ``core.memory_providers`` translates
each into the provider's hook of Hermes's name.
"""

from __future__ import annotations

from typing import Any, Literal, Protocol

from acp_hermes.model.messages import Message
from acp_hermes.model.types import Usage
from acp_hermes_memory.values import value
from acp_hermes_tools.contracts import Display, Location, MemoryWritten, PlanUpdated, ToolCallUpdated, ToolKind

FinalStatus = Literal["completed", "failed"]


@value
class AgentText:
    message_id: str
    text: str


@value
class UserText:
    """Words of the user's that reached the model mid-turn (a steer), shown where the model read them."""

    message_id: str
    text: str


@value
class AgentThought:
    message_id: str
    text: str


@value
class ToolCallStarted:
    """The model produced a tool call; it is pending until it runs or is refused."""

    call_id: str
    name: str
    title: str
    kind: ToolKind
    raw_input: Any
    locations: tuple[Location, ...] = ()


@value
class ToolCallFinished:
    """Every started call ends with exactly one of these, whatever happened."""

    call_id: str
    status: FinalStatus
    display: tuple[Display, ...] = ()
    locations: tuple[Location, ...] | None = None
    raw_output: Any = None


@value
class UsageReported:
    """Tokens in context against the model's window, and the session's cost so far."""

    used: int
    size: int
    cost_usd: float | None = None


@value
class TitleChanged:
    title: str
    updated_at: str | None = None


@value
class ChildStarted:
    """A delegated task's child session starts (``core.delegation``), announced on its parent before
    anything that names it. ``call_id`` is the parent's ``delegate_task`` call."""

    call_id: str
    child_id: str
    title: str
    description: str


@value
class ChildEvent:
    """Something that happened in child session ``child_id``, reported on its parent's sink: a client
    that shows child sessions gets it as that session's update; any other has the delegate card."""

    child_id: str
    event: Event


@value
class ChildEnded:
    """A child session's work is over: exactly one per ``ChildStarted``. ``failure`` says why a child
    whose model failed stopped (its ``stop_reason`` is then ``end_turn``)."""

    child_id: str
    stop_reason: str
    usage: Usage
    failure: str | None = None


Event = (
    AgentText
    | UserText
    | AgentThought
    | ToolCallStarted
    | ToolCallUpdated
    | ToolCallFinished
    | PlanUpdated
    | UsageReported
    | TitleChanged
    | ChildStarted
    | ChildEvent
    | ChildEnded
)


class EventSink(Protocol):
    """Where the loop and the session report what happened."""

    async def emit(self, event: Event) -> None: ...


@value
class TurnEnded:
    """A model turn ended (not cancelled): what the user said and what the agent answered."""

    user_text: str
    answer: str


@value
class CompactionStarting:
    """The conversation is about to be summarised: ``messages`` as the model saw them."""

    messages: list[Message]


@value
class TaskDelegated:
    """A delegated task's child ended: its ``task`` (goal), its answer and its session."""

    task: str
    result: str
    child_session_id: str


@value
class SessionEnded:
    """The session closes: its conversation as the model saw it."""

    messages: list[Message]


# ``MemoryWritten`` comes from a tool's result (``ToolResult.effects``).
SessionEvent = TurnEnded | CompactionStarting | TaskDelegated | SessionEnded | MemoryWritten
