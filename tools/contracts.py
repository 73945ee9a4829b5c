"""What tools and the agent that runs them agree on, with no protocol in it.

Display values describe what the user should see of a call (text, a diff, a live terminal);
tool events report progress; the ``Editor`` is the file and process I/O a tool may use (an
editor that can also put a question to the user is a ``Questioner``); the services are the
session's shared stores. The agent core implements these interfaces and the
ACP adapter turns the values into wire shapes; tools never see either.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal, Protocol, runtime_checkable

from acp_hermes_memory.text import one_line
from acp_hermes_memory.values import value

if TYPE_CHECKING:
    import subprocess

    from acp_hermes_memory.session_db import SessionDB
    from acp_hermes_memory.skills import SkillStore
    from acp_hermes_memory.store import MemoryStore
    from acp_hermes_tools.sandbox import Confinement

ToolKind = Literal["read", "edit", "delete", "move", "search", "execute", "think", "fetch", "other"]
PlanStatus = Literal["pending", "in_progress", "completed"]
PlanPriority = Literal["high", "medium", "low"]


# --- what the user sees of a call ------------------------------------------------------------


@value
class Location:
    """A place in a file the editor can follow along to (absolute path, 1-based line)."""

    path: str
    line: int | None = None


@value
class TextDisplay:
    """Text shown in a tool call. ``fence`` None means Markdown; a string means a fenced block
    with that info string (``""`` for plain text), so output is never rendered as Markdown."""

    text: str
    fence: str | None = None


@value
class DiffDisplay:
    """A whole-file change: ``old_text`` None means a new file."""

    path: str
    old_text: str | None
    new_text: str


@value
class TerminalDisplay:
    """A live terminal owned by the client."""

    terminal_id: str


Display = TextDisplay | DiffDisplay | TerminalDisplay


@value
class PlanEntry:
    content: str
    status: PlanStatus = "pending"
    priority: PlanPriority = "medium"


# --- what a running call reports ---------------------------------------------------------------


@value
class ToolCallUpdated:
    """Progress on a running call. ``None`` fields are unchanged; collections replace."""

    call_id: str
    status: Literal["in_progress"] | None = "in_progress"
    display: tuple[Display, ...] | None = None
    locations: tuple[Location, ...] | None = None
    title: str | None = None


@value
class PlanUpdated:
    """The session's whole plan, as it stands now."""

    entries: tuple[PlanEntry, ...]


ToolEvent = ToolCallUpdated | PlanUpdated


@value
class MemoryWritten:
    """A call's effect beyond its result (``ToolResult.effects``): the built-in memory was changed,
    ``action`` (add, replace, remove) on ``target`` (memory, user) with ``content``. The session passes
    it on to the external memory provider (``on_memory_write``)."""

    action: str
    target: str
    content: str


class ToolEventSink(Protocol):
    async def emit(self, event: ToolEvent) -> None: ...


# --- the I/O a tool may do ---------------------------------------------------------------------


@value
class FileChange:
    """A whole-file change a tool wants to make; ``new_text`` None deletes the file."""

    path: Path
    old_text: str | None
    new_text: str | None


class PermissionDenied(Exception):
    """The call may not run; the message is what the model is told, ``shown`` what the user reads.

    The two differ where the model's text carries instructions for it ("do not retry it"): the user
    is told what happened in their own terms. Without ``shown`` both read the message.
    """

    def __init__(self, message: str, shown: str | None = None) -> None:
        super().__init__(message)
        self.shown = message if shown is None else shown


class EditorRefused(Exception):
    """The editor answered a file or terminal request with an error; the message gives its reason.

    The tool fails with it: falling back to the disk or a local shell would do what the editor
    (and so the user) just declined.
    """


@dataclass(frozen=True, slots=True)
class CommandRequest:
    command: str
    cwd: Path
    timeout: float
    output_limit: int = 256 * 1024
    confinement: Confinement | None = None  # run inside this sandbox (set by the tool context, not tools)


@value
class CommandOutcome:
    output: str
    exit_code: int | None
    signal: str | None = None
    timed_out: bool = False
    truncated: bool = False
    terminal_id: str | None = None
    sandboxed: bool = False
    quarantined: tuple[str, ...] = ()  # what the sandbox moved out after it, one line each


class CommandObserver(Protocol):
    """Told about a running command so the tool call can show it live."""

    async def on_terminal(self, terminal_id: str) -> None:
        """The command runs in the client's terminal ``terminal_id``."""
        ...

    async def on_output(self, output: str) -> None:
        """The whole output so far (local runs only)."""
        ...


# --- background jobs ---------------------------------------------------------------------------


class JobHandle(Protocol):
    """What the tool context needs of a background job to stop it or write to it (``tools.terminal``'s
    ``BackgroundJob``): which session started it, its command, the process leading its group, and
    whether it runs in the sandbox (a write to it is judged where it runs)."""

    @property
    def job_id(self) -> str: ...

    @property
    def session_id(self) -> str: ...

    @property
    def command(self) -> str: ...

    @property
    def cwd(self) -> Path: ...

    @property
    def process(self) -> subprocess.Popen[bytes]: ...

    @property
    def sandboxed(self) -> bool:
        """Whether it runs inside the session's OS sandbox (its command's permit said so)."""
        ...


@value
class JobEnded:
    """A background job's end, reported once: the core tells the model (and the user) about it.

    ``exit_code`` is None when a signal ended it (``signal``, e.g. ``"SIGTERM"``); ``tail`` is the end
    of its output (at most ``JOB_TAIL_LINES`` lines); ``duration`` is seconds from start to end.
    """

    job_id: str
    command: str
    pid: int
    exit_code: int | None
    signal: str | None
    duration: float
    tail: str
    log_path: Path

    @property
    def status(self) -> str:
        """How it ended, as a phrase: ``exited with code 0``, ``was killed by SIGTERM``."""
        return job_status(self.exit_code, self.signal)

    def note(self) -> str:
        """A short note for the model: what ended, how, after how long, and its last output.

        The output is data from the job: scanned like any tool output (a warning in front when it carries
        injection patterns) and framed in ``<job-output>``, which nothing in it can close."""
        from acp_hermes_memory.frames import framed
        from acp_hermes_memory.scan import warned

        lines = self.command.strip().splitlines()
        command = one_line(lines[0], 80) if lines else ""
        if len(lines) > 1 and not command.endswith("…"):
            command += " …"
        head = (f"[Background job {self.job_id} (`{command}`) {self.status} after {duration_text(self.duration)}."
                f" Use process(action=\"poll\", job_id=\"{self.job_id}\") for output not shown here.")
        if not self.tail.strip():
            return f"{head} It printed nothing.]"
        output = framed(JOB_OUTPUT_FRAME, self.tail.rstrip(), job=self.job_id)
        return warned("background job's output", f"{head} Its last output:]\n{output}")


JOB_TAIL_LINES = 20
JOB_OUTPUT_FRAME = "job-output"


def job_status(exit_code: int | None, signal: str | None) -> str:
    if signal:
        return f"was killed by {signal}"
    if exit_code is not None:
        return f"exited with code {exit_code}"
    return "ended"


def duration_text(seconds: float) -> str:
    """``0.4s``, ``12s``, ``3m05s``, ``2h01m``."""
    if seconds < 10:
        return f"{max(seconds, 0.0):.1f}s"
    whole = int(seconds)
    if whole < 60:
        return f"{whole}s"
    if whole < 3600:
        return f"{whole // 60}m{whole % 60:02d}s"
    return f"{whole // 3600}h{whole % 3600 // 60:02d}m"


class Editor(Protocol):
    """File and command I/O as a tool sees it. Paths are absolute and already checked."""

    async def read_text(self, path: Path) -> str:
        """Current text of ``path`` (an editor's unsaved buffer when there is one)."""
        ...

    async def write_text(self, path: Path, content: str) -> None:
        """Replace the whole text of ``path``, creating parent directories."""
        ...

    async def delete_file(self, path: Path) -> None:
        """Remove ``path`` (nothing happens when it is already gone)."""
        ...

    async def run_command(self, request: CommandRequest, observer: CommandObserver) -> CommandOutcome:
        """Run a shell command to completion, timeout or cancellation (which kills it)."""
        ...

    def start_detached(
        self, command: str, cwd: Path, log_path: Path, confinement: Confinement | None = None, *,
        stdin: bool = False,
    ) -> subprocess.Popen[bytes]:
        """Start a shell command that outlives the turn, its output going to ``log_path``; its stdin
        is a pipe the agent holds (``process.stdin``) when ``stdin``, else empty (``/dev/null``)."""
        ...


@value
class Question:
    """A question for the user, asked by tool call ``call_id``; ``choices`` are suggested answers."""

    call_id: str
    text: str
    choices: tuple[str, ...] = ()


@value
class Answer:
    """What the user did with a question: answered it (``text``), declined it, or dismissed it."""

    outcome: Literal["answered", "declined", "dismissed"]
    text: str = ""


@runtime_checkable
class Questioner(Protocol):
    """An editor that can put a question to the user while the turn waits (an editor's form)."""

    async def ask_user(self, question: Question) -> Answer | None:
        """The user's answer, or None when the question cannot be asked this way (the client
        offers no forms, or refused this one): then it must be asked in the conversation."""
        ...


# --- the session's services --------------------------------------------------------------------


class AuxiliaryModel(Protocol):
    """The cheap model for side jobs (recaps, titles), its cost charged to the session."""

    async def complete(self, *, system: str, prompt: str, max_tokens: int) -> str: ...


@dataclass(frozen=True, slots=True)
class ToolServices:
    """The stores and models a session's tools share; None where this session has none."""

    memory: MemoryStore | None = None
    sessions: SessionDB | None = None
    auxiliary: AuxiliaryModel | None = None
    skills: SkillStore | None = None
    secrets: tuple[str, ...] = ()  # values never shown to the model (the API key): tool output is redacted
