"""The cards a session makes itself: tool calls outside the model's history.

An export, a rollback, a review's held proposal put to the user, the memory flush's writes before a
compaction: each is shown as a tool call (started, then finished exactly once, also when something
breaks on the way), asks through the same checked doors as a model's call, and never reaches the
model. ``SideCall`` is that card; ``run_beside_turn`` runs a tool as one and stores it for replay.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from types import TracebackType
from typing import Any

import anyio

from acp_hermes.core.events import EventSink, ToolCallFinished, ToolCallStarted
from acp_hermes.core.transcript import ToolOutcome, Transcript
from acp_hermes_tools.context import ToolContext
from acp_hermes_tools.contracts import Display, Location, TextDisplay, ToolEventSink, ToolKind
from acp_hermes_tools.registry import ToolCall, ToolRegistry, ToolResult

ContextFactory = Callable[[str, str, ToolEventSink], ToolContext]  # (call id, title, sink)
BROKE_OFF = "This stopped before it finished."


class SideCall:
    """One card: shown when entered, with the checked doors of its call (``ctx``); ``finish`` ends it,
    and leaving it unfinished (an error, a cancel) ends it as failed. ``store_in``: kept for replay."""

    def __init__(self, sink: EventSink, make_context: ContextFactory, call_id: str, name: str, title: str,
                 kind: ToolKind, raw_input: Any, locations: Sequence[Location] = (), *,
                 store_in: Transcript | None = None) -> None:
        self._sink = sink
        self._started = ToolCallStarted(call_id, name, title, kind, raw_input, tuple(locations))
        self._store_in = store_in
        self._finished = False
        self.ctx = make_context(call_id, title, sink)

    async def __aenter__(self) -> SideCall:
        await self._sink.emit(self._started)
        return self

    async def __aexit__(self, kind: type[BaseException] | None, error: BaseException | None,
                        trace: TracebackType | None) -> None:
        if not self._finished:
            with anyio.CancelScope(shield=True):
                await self.finish(False, (TextDisplay(BROKE_OFF),), BROKE_OFF)

    async def finish(self, ok: bool, display: tuple[Display, ...], text: str = "") -> None:
        """End the card: ``display`` is what it shows; ``text``, what is stored as its output."""
        self._finished = True
        started = self._started
        await self._sink.emit(ToolCallFinished(started.call_id, "completed" if ok else "failed", display))
        if self._store_in is not None:
            await self._store_in.add_side_call(ToolOutcome(
                call_id=started.call_id, name=started.name, title=started.title, kind=started.kind,
                raw_input=started.raw_input, text=text, ok=ok, display=display, locations=(),
            ))


async def run_beside_turn(call: ToolCall, title: str, kind: ToolKind, *, registry: ToolRegistry,
                          sink: EventSink, make_context: ContextFactory, transcript: Transcript) -> ToolResult:
    """One call the agent makes outside the model's history (a review's held proposal, the memory
    flush before a compaction): shown like any call, stored for replay, never sent to the model."""
    async with SideCall(sink, make_context, call.id, call.name, title, kind, call.arguments,
                        store_in=transcript) as card:
        result = await registry.dispatch(call, card.ctx)
        await card.finish(result.ok, result.display or (TextDisplay(result.text, ""),), result.text)
    return result
