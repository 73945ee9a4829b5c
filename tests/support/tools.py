"""Real collaborators for driving tools directly in unit tests (no ACP involved)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from acp_hermes_tools.context import CommandPermit, Gate, ReadPurpose, ToolContext, ToolScope, ToolState
from acp_hermes_tools.contracts import FileChange, JobHandle, PermissionDenied, ToolEvent, ToolServices
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

    async def authorize_edits(self, ctx: ToolContext, changes: Sequence[FileChange]) -> None:
        self.edits.append(list(changes))
        self._decide()

    async def authorize_command(
        self, ctx: ToolContext, command: str, cwd: Path, *, outside_sandbox: bool = False
    ) -> CommandPermit:
        self.commands.append((command, cwd))
        self._decide()
        return CommandPermit(sandboxed=self.sandboxed)

    async def authorize_state(self, ctx: ToolContext, changes: Sequence[FileChange]) -> None:
        self.states.append(list(changes))
        self._decide()

    async def authorize_read(self, ctx: ToolContext, paths: Sequence[Path], purpose: ReadPurpose = "file", *,
                             links: Mapping[Path, Path] | None = None) -> None:
        self.reads.append(list(paths))  # reads are never refused here: the policy's tests cover that

    async def authorize_external(self, ctx: ToolContext, server: str, tool: str, arguments: dict[str, Any], *,
                                 read_only: bool) -> None:
        self.external.append((server, tool, dict(arguments), read_only))
        self._decide()

    async def authorize_job_input(self, ctx: ToolContext, job: JobHandle, text: str, *, eof: bool = False) -> None:
        self.job_inputs.append((job.job_id, text, eof))
        self._decide()


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
