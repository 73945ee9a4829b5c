"""Real collaborators for driving tools directly in unit tests (no ACP involved)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from acp_hermes_tools.context import Gate, Permit, ToolContext, ToolScope, ToolState
from acp_hermes_tools.contracts import (
    Command,
    Edit,
    External,
    FileChange,
    JobInput,
    PermissionDenied,
    Read,
    Request,
    State,
    ToolEvent,
    ToolServices,
)
from acp_hermes_tools.local_io import LocalEditor
from acp_hermes_tools.sandbox import SessionSandbox


@dataclass(slots=True)
class EventLog:
    """A sink that keeps every event it is given, in order."""

    events: list[ToolEvent] = field(default_factory=list)

    async def emit(self, event: ToolEvent) -> None:
        self.events.append(event)


@dataclass
class RecordingGate:
    """A gate that records every authorization and allows or refuses all of them."""

    allow: bool = True
    sandboxed: bool = False  # permit commands to run in the scope's sandbox
    edits: list[list[FileChange]] = field(default_factory=list)
    commands: list[tuple[str, Path]] = field(default_factory=list)
    states: list[list[FileChange]] = field(default_factory=list)
    reads: list[list[Path]] = field(default_factory=list)
    external: list[tuple[str, str, dict[str, Any], bool]] = field(default_factory=list)
    job_inputs: list[tuple[str, str, bool]] = field(default_factory=list)  # (job id, text, eof), outside the sandbox

    def _decide(self) -> None:
        if not self.allow:
            raise PermissionDenied("The user declined this action.")

    async def authorize(self, ctx: ToolContext, request: Request) -> Permit:
        if isinstance(request, Read):
            self.reads.append(list(request.paths))  # reads are never refused here: the policy's tests cover that
            return Permit()
        if isinstance(request, Edit):
            self.edits.append(list(request.changes))
        elif isinstance(request, Command):
            self.commands.append((request.line, request.cwd))
        elif isinstance(request, State):
            self.states.append(list(request.changes))
        elif isinstance(request, External):
            self.external.append((request.server, request.tool, dict(request.arguments), request.read_only))
        elif isinstance(request, JobInput):
            self.job_inputs.append((request.job.job_id, request.text, request.eof))
        self._decide()
        return Permit(sandboxed=self.sandboxed) if isinstance(request, Command) else Permit()


def make_scope(
    cwd: Path,
    *,
    services: ToolServices | None = None,
    state: ToolState | None = None,
    extra_roots: Sequence[Path] = (),
    session_id: str = "session-test",
    sandbox: SessionSandbox | None = None,
) -> ToolScope:
    root = cwd.resolve()
    return ToolScope(
        session_id=session_id,
        cwd=root,
        roots=(root, *(r.resolve() for r in extra_roots)),
        services=services or ToolServices(),
        state=state if state is not None else ToolState(),
        sandbox=sandbox,
    )


def make_context(
    cwd: Path,
    *,
    gate: Gate | None = None,
    services: ToolServices | None = None,
    state: ToolState | None = None,
    call_id: str = "toolu_test",
    extra_roots: Sequence[Path] = (),
    session_id: str = "session-test",
    title: str = "",
    sandbox: SessionSandbox | None = None,
) -> ToolContext:
    """A ToolContext on local disk and subprocesses, collecting events in an EventLog."""
    scope = make_scope(cwd, services=services, state=state, extra_roots=extra_roots, session_id=session_id,
                       sandbox=sandbox)
    return ToolContext(
        call_id=call_id,
        scope=scope,
        editor=LocalEditor(),
        gate=gate or RecordingGate(),
        sink=EventLog(),
        title=title,
    )


def events_of(ctx: ToolContext) -> list[ToolEvent]:
    """What a context made by ``make_context`` has emitted so far."""
    assert isinstance(ctx.sink, EventLog)
    return ctx.sink.events
