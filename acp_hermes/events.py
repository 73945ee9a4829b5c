"""Typed events the agent loop emits.

The loop knows nothing about ACP: it describes what happened with these plain values and
hands them to an ``EventSink``. ``acp_hermes.render`` turns them into ``session/update``s;
tests and the demo can consume them directly.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

ToolKind = Literal["read", "edit", "delete", "move", "search", "execute", "think", "fetch", "other"]
FinalStatus = Literal["completed", "failed"]
PlanStatus = Literal["pending", "in_progress", "completed"]
PlanPriority = Literal["high", "medium", "low"]


@dataclass(frozen=True, slots=True)
class Location:
    """A place in a file the editor can follow along to (absolute path, 1-based line)."""

    path: str
    line: int | None = None


@dataclass(frozen=True, slots=True)
class TextDisplay:
    """Text shown in a tool call. ``fence`` None means Markdown; a string means a fenced block
    with that info string (``""`` for plain text), so output is never rendered as Markdown."""

    text: str
    fence: str | None = None


@dataclass(frozen=True, slots=True)
class DiffDisplay:
    """A whole-file change: ``old_text`` None means a new file."""

    path: str
    old_text: str | None
    new_text: str


@dataclass(frozen=True, slots=True)
class TerminalDisplay:
    """A live terminal owned by the client (``terminal/create``)."""

    terminal_id: str


Display = TextDisplay | DiffDisplay | TerminalDisplay


@dataclass(frozen=True, slots=True)
class PlanEntry:
    content: str
    status: PlanStatus = "pending"
    priority: PlanPriority = "medium"


@dataclass(frozen=True, slots=True)
class AgentText:
    message_id: str
    text: str


@dataclass(frozen=True, slots=True)
class AgentThought:
    message_id: str
    text: str


@dataclass(frozen=True, slots=True)
class UserText:
    """Only used when replaying a stored conversation."""

    message_id: str
    text: str


@dataclass(frozen=True, slots=True)
class ToolCallStarted:
    """The model produced a tool call; it is pending until it runs or is refused."""

    call_id: str
    name: str
    title: str
    kind: ToolKind
    raw_input: Any
    locations: tuple[Location, ...] = ()


@dataclass(frozen=True, slots=True)
class ToolCallUpdated:
    """Progress on a running call. ``None`` fields are unchanged; collections replace."""

    call_id: str
    status: Literal["in_progress"] | None = "in_progress"
    display: tuple[Display, ...] | None = None
    locations: tuple[Location, ...] | None = None
    title: str | None = None


@dataclass(frozen=True, slots=True)
class ToolCallFinished:
    """Every started call ends with exactly one of these, whatever happened."""

    call_id: str
    status: FinalStatus
    display: tuple[Display, ...] = ()
    locations: tuple[Location, ...] | None = None
    raw_output: Any = None


@dataclass(frozen=True, slots=True)
class PlanUpdated:
    entries: tuple[PlanEntry, ...]


@dataclass(frozen=True, slots=True)
class UsageReported:
    """Tokens in context against the model's window, and the session's cost so far."""

    used: int
    size: int
    cost_usd: float | None = None


@dataclass(frozen=True, slots=True)
class TitleChanged:
    title: str
    updated_at: str | None = None


Event = (
    AgentText
    | AgentThought
    | UserText
    | ToolCallStarted
    | ToolCallUpdated
    | ToolCallFinished
    | PlanUpdated
    | UsageReported
    | TitleChanged
)


class EventSink(Protocol):
    """Where the loop reports what happened."""

    async def emit(self, event: Event) -> None: ...


@dataclass(slots=True)
class EventLog:
    """An in-memory sink: the demo and tests collect events with it."""

    events: list[Event] = field(default_factory=list)

    async def emit(self, event: Event) -> None:
        self.events.append(event)


def encode_display(items: tuple[Display, ...] | list[Display]) -> list[dict[str, Any]]:
    """Display values as JSON-able dicts (stored with tool results for replay)."""
    out: list[dict[str, Any]] = []
    for item in items:
        if isinstance(item, TextDisplay):
            out.append({"type": "text", "text": item.text, "fence": item.fence})
        elif isinstance(item, DiffDisplay):
            out.append({"type": "diff", "path": item.path, "old": item.old_text, "new": item.new_text})
        else:
            out.append({"type": "terminal", "id": item.terminal_id})
    return out


def decode_display(data: list[dict[str, Any]]) -> tuple[Display, ...]:
    items: list[Display] = []
    for item in data:
        kind = item.get("type")
        if kind == "text":
            items.append(TextDisplay(item["text"], item.get("fence")))
        elif kind == "diff":
            items.append(DiffDisplay(item["path"], item.get("old"), item["new"]))
        elif kind == "terminal":
            items.append(TerminalDisplay(item["id"]))
    return tuple(items)
