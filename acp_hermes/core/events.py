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


NoticeKind = Literal["compaction", "budget", "job", "trust", "hook", "info"]
Severity = Literal["info", "warning", "error"]


@value
class Notice:
    """Something the user should know that is not part of the conversation: compaction starting and
    ending, a budget nearly spent, a background job's end, a server's failure (and trust and hook
    messages). A client that shows notices gets ``title`` and ``description``; any other is shown
    ``text`` as an agent message (None: nothing, where it has its own rendering, as compaction's card)."""

    kind: NoticeKind
    severity: Severity
    title: str
    description: str | None = None
    text: str | None = None
    message_id: str = ""


@value
class QuotaMeter:
    """One limit the agent works under and how much of it is used (``core.quotas``)."""

    id: str
    title: str
    unit: str  # "requests", "tokens" or "usd"
    used: float
    limit: float
    window: str  # "minute" (the API's rate limits), "turn" or "session" (budgets)
    status: Literal["ok", "warning", "exceeded"]
    updated_at: str  # RFC 3339
    resets_at: str | None = None

    @property
    def used_percent(self) -> float:
        return round(min(100.0, 100.0 * self.used / self.limit), 1) if self.limit > 0 else 100.0


@value
class QuotaPool:
    """The meters of one source of limits: the model API's rate limits, or the user's budgets."""

    id: str
    title: str
    meters: tuple[QuotaMeter, ...]


@value
class QuotaChanged:
    """The quotas as they stand now (after a model call, a 429, a budget's change)."""

    pools: tuple[QuotaPool, ...]


@value
class JobFinished:
    """A background job ended (every end, heard of by the model or not): ``state`` as a task list shows it."""

    job_id: str
    state: Literal["completed", "failed", "stopped"]
    summary: str


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
    | Notice
    | QuotaChanged
    | JobFinished
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
