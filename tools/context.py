"""The tool context: everything a handler may touch, scoped to one call of one session.

Every side effect a tool has goes through a ``ToolContext`` method that refuses anything the
gate did not authorize for that very call: file writes and deletes, foreground and detached
commands, writes to the agent's own stores. A tool cannot mutate without the grant its mode
requires, whatever its code does with its arguments.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Generic, Protocol, TypeVar

import anyio

from acp_hermes_memory.values import value
from acp_hermes_tools.contracts import (
    Answer,
    Command,
    CommandFacts,
    CommandObserver,
    CommandOutcome,
    CommandRequest,
    Display,
    Edit,
    Editor,
    External,
    FileChange,
    JobAction,
    JobHandle,
    JobInput,
    Location,
    PermissionDenied,
    Question,
    Questioner,
    Read,
    ReadPurpose,
    Request,
    Restore,
    State,
    ToolCallUpdated,
    ToolEvent,
    ToolEventSink,
    ToolServices,
    job_command_line,
)
from acp_hermes_tools.local_io import close_process_input, stop_group, write_to_process
from acp_hermes_tools.paths import is_within, resolve_path

if TYPE_CHECKING:
    import subprocess

    from acp_hermes_tools.sandbox import SessionSandbox
    from acp_hermes_tools.secret_links import SecretLinks

log = logging.getLogger(__name__)
T = TypeVar("T")

JOB_STOP_GRACE_SECONDS = 2.0  # a stopped job: SIGTERM, then SIGKILL after this
JOB_WRITE_SECONDS = 10.0  # how long a write waits for a job to take its input


@value
class Permit:
    """What the gate allowed: for a command, whether it runs inside the session's sandbox (with the
    network or not) and its analysis, where the checkpoint layer reads whether it may write files."""

    sandboxed: bool = False
    network: bool = False
    analysis: CommandFacts | None = None

    @property
    def writes_files(self) -> bool:
        """Whether what was allowed may change files: anything not analysed as read-only may."""
        return self.analysis is None or self.analysis.writes_files


class Gate(Protocol):
    """Decides, asking the user when the mode requires it, whether a request may go ahead."""

    async def authorize(self, ctx: ToolContext, request: Request) -> Permit:
        """How the request may go ahead, or ``PermissionDenied`` with what the model is told (and
        ``shown``, what the user reads)."""
        ...


class StateKey(Generic[T]):
    """A typed slot in a session's ``ToolState``; the tool that declares it owns its contents, and
    ``close`` (when given) lets go of what they hold once the session ends."""

    def __init__(self, name: str, initial: Callable[[], T], close: Callable[[T], None] | None = None) -> None:
        self.name = name
        self.initial = initial
        self.close = close

    def __repr__(self) -> str:
        return f"StateKey({self.name!r})"


class ToolState:
    """What tools keep between calls of one session (a todo list, background jobs)."""

    def __init__(self) -> None:
        self._values: dict[StateKey[Any], Any] = {}

    def get(self, key: StateKey[T]) -> T:
        """The slot's value, made with its ``initial`` factory on first use."""
        if key not in self._values:
            self._values[key] = key.initial()
        value: T = self._values[key]
        return value

    def set(self, key: StateKey[T], value: T) -> None:
        self._values[key] = value

    def __contains__(self, key: StateKey[Any]) -> bool:
        return key in self._values

    def close(self) -> None:
        """The session ended: each slot in use whose key has ``close`` lets go of what it holds
        (background processes, temporary files). Must not block; safe to call twice."""
        for key, held in list(self._values.items()):
            if key.close is not None:
                try:
                    key.close(held)
                except Exception:  # one tool's failure must not keep the others' from closing
                    log.exception("closing the tool state %s failed", key.name)


@dataclass(frozen=True)
class ToolScope:
    """What every call of one session shares: where it works and what it may use."""

    session_id: str
    cwd: Path
    roots: tuple[Path, ...]
    services: ToolServices = field(default_factory=ToolServices)
    state: ToolState = field(default_factory=ToolState)
    sandbox: SessionSandbox | None = None  # None: this session has no sandbox at all
    secret_links: SecretLinks | None = None  # None: hard links to secrets are not looked for
    # Awaited once a change to the workspace is allowed, before it is made: the session's checkpoint.
    before_change: Callable[[], Awaitable[None]] | None = None

    def resolve(self, raw: str) -> Path:
        return resolve_path(raw, self.cwd)

    def in_workspace(self, path: Path) -> bool:
        return is_within(path, self.roots)


# A plain class, not a dataclass: defining one costs about a millisecond before the first prompt.
class ToolContext:
    """One call's view of its session, with the checked doors to the world."""

    __slots__ = ("_authorized_commands", "_authorized_external", "_authorized_jobs", "_authorized_paths",
                 "_authorized_reads", "_authorized_state", "call_id", "editor", "gate", "scope", "sink", "title")

    def __init__(self, call_id: str, scope: ToolScope, editor: Editor, gate: Gate, sink: ToolEventSink,
                 title: str = "") -> None:  # the title the editor shows for this call
        self.call_id = call_id
        self.scope = scope
        self.editor = editor
        self.gate = gate
        self.sink = sink
        self.title = title
        # What this call was allowed so far: never given, only earned through the gate.
        self._authorized_paths: set[Path] = set()
        self._authorized_commands: dict[str, Permit] = {}
        self._authorized_state: set[Path] = set()
        self._authorized_reads: set[Path] = set()
        self._authorized_external: set[tuple[str, str]] = set()
        self._authorized_jobs: set[tuple[str, str, str, bool]] = set()  # (job id, action, input, eof)

    @property
    def session_id(self) -> str:
        return self.scope.session_id

    @property
    def cwd(self) -> Path:
        return self.scope.cwd

    @property
    def roots(self) -> tuple[Path, ...]:
        return self.scope.roots

    @property
    def services(self) -> ToolServices:
        return self.scope.services

    @property
    def state(self) -> ToolState:
        return self.scope.state

    def resolve(self, raw: str) -> Path:
        return self.scope.resolve(raw)

    def in_workspace(self, path: Path) -> bool:
        return self.scope.in_workspace(path)

    async def emit(self, event: ToolEvent) -> None:
        await self.sink.emit(event)

    async def show(self, display: Sequence[Display], locations: Sequence[Location] | None = None) -> None:
        """Replace the call's live content (status in_progress)."""
        await self.sink.emit(
            ToolCallUpdated(
                self.call_id,
                display=tuple(display),
                locations=None if locations is None else tuple(locations),
            )
        )

    # -- the user

    async def ask_user(self, question: Question) -> Answer | None:
        """The user's answer through the editor; None when it cannot ask this way (ask in the chat)."""
        if not isinstance(self.editor, Questioner):
            return None
        return await self.editor.ask_user(question)

    # -- asking: each door puts its request to the gate's one door (``Gate.authorize``)

    async def authorize_edits(self, changes: Sequence[FileChange]) -> None:
        await self.gate.authorize(self, Edit(tuple(changes)))
        await self._before_change()
        self._authorized_paths.update(change.path for change in changes)

    async def authorize_restore(self, changes: Sequence[FileChange], label: str, display: Sequence[Display], *,
                                requested: bool = False, replaces_own_edits: bool = False) -> None:
        """Ask to put ``changes`` back (a rollback), the answer that allows it named ``label``."""
        await self.gate.authorize(self, Restore(tuple(changes), label, tuple(display), requested, replaces_own_edits))
        self._authorized_paths.update(change.path for change in changes)

    async def authorize_command(self, command: str, cwd: Path, *, outside_sandbox: bool = False) -> None:
        """Ask for ``command``; ``outside_sandbox`` asks to run it without the OS sandbox."""
        permit = await self.gate.authorize(self, Command(command, cwd, outside_sandbox))
        if permit.writes_files:  # as the command's analysis says
            await self._before_change()
        self._authorized_commands[command] = permit

    async def authorize_state(self, changes: Sequence[FileChange]) -> None:
        await self.gate.authorize(self, State(tuple(changes)))
        if any(self.in_workspace(change.path) for change in changes):
            await self._before_change()
        self._authorized_state.update(change.path for change in changes)

    async def _before_change(self) -> None:
        if self.scope.before_change is not None:
            await self.scope.before_change()

    async def authorize_read(self, paths: Sequence[Path], purpose: ReadPurpose = "file") -> None:
        """Ask to read ``paths`` (see ``ReadPurpose``); ``read_text`` asks by itself. A path that is a
        hard link to a secret file is asked for as that secret."""
        finder = self.scope.secret_links
        links = await finder.secrets_behind(paths) if finder is not None else {}
        await self.gate.authorize(self, Read(tuple(paths), purpose, tuple(links.items())))
        self._authorized_reads.update(paths)

    async def authorize_external(self, server: str, tool: str, arguments: dict[str, Any], *,
                                 read_only: bool) -> None:
        """Ask to run ``tool`` of MCP server ``server`` with ``arguments``."""
        await self.gate.authorize(self, External(server, tool, arguments, read_only))
        if not read_only:  # a server's tool may write the workspace as well as anything
            await self._before_change()
        self._authorized_external.add((server, tool))

    async def authorize_job(self, job: JobHandle, action: JobAction, text: str = "", *, eof: bool = False) -> None:
        """Ask to stop ``job`` (``"kill"``) or to send ``text`` to its stdin (``"write"``, then close it when
        ``eof``); only a job this session started. A write is judged where the job runs: to a sandboxed job
        as the command line that does the same (see ``job_command_line``), so it follows the mode and the
        sandbox exactly as a command would; to a job outside the sandbox as a command outside it
        (``JobInput``). Stopping is asked as ``kill``."""
        self._require_own(job)
        if action == "write" and not job.sandboxed:
            await self.gate.authorize(self, JobInput(job, text, eof))
            changes = True
        else:
            permit = await self.gate.authorize(self, Command(job_command_line(job, action, text), job.cwd))
            changes = permit.writes_files
        if action == "write" and changes:  # what a job does with its input may change files
            await self._before_change()
        self._authorized_jobs.add((job.job_id, action, text, eof and action == "write"))

    # -- doing: each refuses what was not authorized for this call

    async def read_text(self, path: Path, purpose: ReadPurpose = "file") -> str:
        """The file's text (the editor's buffer where it has one), read only as the policy allows."""
        if path not in self._authorized_reads:
            await self.authorize_read((path,), purpose)
        return await self.editor.read_text(path)

    async def write_text(self, path: Path, content: str) -> None:
        self._require(path in self._authorized_paths, f"write to {path} was not authorized")
        await self.editor.write_text(path, content)

    async def delete_file(self, path: Path) -> None:
        self._require(path in self._authorized_paths, f"deleting {path} was not authorized")
        await self.editor.delete_file(path)

    async def restore_files(self, paths: Sequence[Path], restore: Callable[[], T]) -> T:
        """Run ``restore``, a blocking put-back of ``paths`` from a checkpoint, once each was authorized."""
        for path in paths:
            self._require(path in self._authorized_paths, f"restoring {path} was not authorized")
        with anyio.CancelScope(shield=True):  # a restore runs to its end: each file before or after
            done = await anyio.to_thread.run_sync(restore)
        return done

    async def run_command(self, request: CommandRequest, observer: CommandObserver) -> CommandOutcome:
        """Run an authorized command; a sandboxed one is audited after it (see ``SessionSandbox.audit``)."""
        sandbox = self._sandbox_for(request.command)
        if sandbox is None:
            return await self.editor.run_command(replace(request, confinement=None), observer)
        confinement = await anyio.to_thread.run_sync(sandbox.confinement, self._permit(request.command).network)
        try:
            outcome = await self.editor.run_command(replace(request, confinement=confinement), observer)
        finally:
            with anyio.CancelScope(shield=True):  # a cancelled command is audited all the same
                moved = await anyio.to_thread.run_sync(sandbox.audit, confinement)
        moved += sandbox.take_pending()  # what a background command that ended meanwhile left behind
        if not moved:
            return outcome
        return CommandOutcome(outcome.output, outcome.exit_code, outcome.signal, outcome.timed_out,
                              outcome.truncated, outcome.terminal_id, outcome.sandboxed,
                              tuple(item.line() for item in moved))

    def runs_sandboxed(self, command: str) -> bool:
        """Whether the authorized ``command`` runs inside the session's sandbox (what a job remembers)."""
        return self._permit(command).sandboxed

    def start_detached(self, command: str, cwd: Path, log_path: Path, *,
                       stdin: bool = False) -> subprocess.Popen[bytes]:
        """Start an authorized command detached from the turn (``stdin``: with a pipe for its input);
        a sandboxed one is audited when it ends."""
        sandbox = self._sandbox_for(command)
        if sandbox is None:
            return self.editor.start_detached(command, cwd, log_path, None, stdin=stdin)
        confinement = sandbox.confinement(self._permit(command).network)
        process = self.editor.start_detached(command, cwd, log_path, confinement, stdin=stdin)
        sandbox.audit_when_done(process, confinement)
        return process

    async def stop_job(self, job: JobHandle) -> None:
        """SIGTERM the job's process group, SIGKILL what is left of it after ``JOB_STOP_GRACE_SECONDS``;
        returns once its first process has ended. A job that already ended is left alone."""
        self._require_own(job)
        self._require((job.job_id, "kill", "", False) in self._authorized_jobs,
                      f"stopping {job.job_id} was not authorized")
        await stop_group(job.process, JOB_STOP_GRACE_SECONDS)

    async def write_job(self, job: JobHandle, text: str, *, eof: bool = False) -> int:
        """Send exactly the authorized ``text`` (UTF-8) to the job's stdin, then close it when ``eof``; the
        bytes written (fewer when the job did not take it all within ``JOB_WRITE_SECONDS``: its stdin then
        stays open). ``BrokenPipeError`` when the job no longer reads its stdin."""
        self._require_own(job)
        self._require((job.job_id, "write", text, eof) in self._authorized_jobs,
                      f"writing to {job.job_id} was not authorized")
        data = text.encode("utf-8")
        written = await write_to_process(job.process, data, timeout=JOB_WRITE_SECONDS) if data else 0
        if eof and written == len(data):
            close_process_input(job.process)
        return written

    def _require_own(self, job: JobHandle) -> None:
        self._require(job.session_id == self.session_id, f"{job.job_id} belongs to another session")

    def _permit(self, command: str) -> Permit:
        permit = self._authorized_commands.get(command)
        self._require(permit is not None, f"command {command!r} was not authorized")
        assert permit is not None
        return permit

    def _sandbox_for(self, command: str) -> SessionSandbox | None:
        """The sandbox the gate's permit puts ``command`` in (None: it runs unconfined)."""
        if not self._permit(command).sandboxed:
            return None
        sandbox = self.scope.sandbox
        self._require(sandbox is not None and sandbox.available, f"command {command!r} may only run sandboxed")
        assert sandbox is not None
        return sandbox

    async def call_external(self, server: str, tool: str, call: Callable[[], Awaitable[T]]) -> T:
        """Run ``call``, the MCP call of ``tool`` on ``server``, once the gate has allowed it."""
        self._require((server, tool) in self._authorized_external, f"MCP tool {tool} of {server} was not authorized")
        return await call()

    async def write_state(self, path: Path, write: Callable[..., T], *args: Any) -> T:
        """Run ``write(*args)``, a blocking change to the agent's own store file ``path``, in a thread."""
        self._require(path in self._authorized_state, f"change to {path} was not authorized")
        return await anyio.to_thread.run_sync(functools.partial(write, *args))

    @staticmethod
    def _require(authorized: bool, refusal: str) -> None:
        if not authorized:
            raise PermissionDenied(refusal)
