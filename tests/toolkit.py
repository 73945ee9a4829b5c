"""Real collaborators for driving tools directly in unit tests (no ACP involved)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from acp_hermes.editor import LocalEditor
from acp_hermes.events import Display, EventLog
from tools.registry import FileChange, PermissionDenied, ToolContext


@dataclass
class RecordingGate:
    """A gate that records every authorization and allows or refuses all of them."""

    allow: bool = True
    edits: list[list[FileChange]] = field(default_factory=list)
    commands: list[tuple[str, Path]] = field(default_factory=list)
    states: list[tuple[str, list[Display]]] = field(default_factory=list)

    def _decide(self) -> None:
        if not self.allow:
            raise PermissionDenied("The user declined this action.")

    async def authorize_edits(self, ctx: ToolContext, changes: Sequence[FileChange]) -> None:
        self.edits.append(list(changes))
        self._decide()

    async def authorize_command(self, ctx: ToolContext, command: str, cwd: Path) -> None:
        self.commands.append((command, cwd))
        self._decide()

    async def authorize_state(self, ctx: ToolContext, title: str, display: Sequence[Display]) -> None:
        self.states.append((title, list(display)))
        self._decide()


def make_context(
    cwd: Path,
    *,
    gate: RecordingGate | None = None,
    services: dict[str, Any] | None = None,
    call_id: str = "toolu_test",
    extra_roots: Sequence[Path] = (),
) -> ToolContext:
    """A ToolContext on local disk and subprocesses, collecting events in an EventLog."""
    root = cwd.resolve()
    return ToolContext(
        call_id=call_id,
        session_id="session-test",
        cwd=root,
        roots=(root, *(r.resolve() for r in extra_roots)),
        editor=LocalEditor(),
        gate=gate or RecordingGate(),
        sink=EventLog(),
        services=services or {},
    )
