"""What tools and the agent that runs them agree on, with no protocol in it.

Display values describe what the user should see of a call (text, a diff, a live terminal);
tool events report progress; requests (``Request``: an edit, a command, a read …) are what a call
asks the permission gate for, each with what the user is shown of it; the ``Editor`` is the file
and process I/O a tool may use (an editor that can also put a question to the user is a
``Questioner``); the services are the session's shared stores. The agent core implements these interfaces and the
ACP adapter turns the values into wire shapes; tools never see either.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol, runtime_checkable

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


# --- what a tool asks the gate for -------------------------------------------------------------
#
# One request type per kind of access; ``tools.context.Gate.authorize`` takes any of them and the
# policy has one branch for each. A request carries what the user is shown of it: the question's
# ``title`` (the call's own title, ``given``, when it has one) and ``kind``, its ``display`` (the diff,
# the command, the exact input), whether an allowed call then shows that display (``shown``) and, for
# a question with words of its own, its ``choices``.

# Why a tool reads: a file's text, a whole directory (a search), or a file's old text for an edit
# (that edit's own question shows the user the diff, so only secrets ask twice).
ReadPurpose = Literal["file", "directory", "edit"]
# What a call may do to a background job this session started (reading its output asks nothing).
JobAction = Literal["kill", "write"]


@value
class Surroundings:
    """Where a session works, as the gate sees it when it decides: home, the agent's own home, the
    workspace roots and the session's directory (titles name paths relative to it); for a request that
    runs a shell line, whether commands can run in an OS sandbox and whether it lets them use the network."""

    home: Path
    hermes_home: Path
    roots: tuple[Path, ...]
    cwd: Path | None = None
    sandbox: bool = False
    network_allowed: bool = False


class CommandFacts(Protocol):
    """What the analysis of a shell line tells this layer (``permissions.shell.analysis.CommandAnalysis``):
    whether the line may write files, so a checkpoint comes before it."""

    @property
    def writes_files(self) -> bool: ...


@value
class Choices:
    """A question's own words: its one way to allow, its one way to reject, and what the user is told
    when it does not go ahead (they rejected it; the question was cancelled)."""

    allow: str
    reject: str
    rejected: str
    cancelled: str
    reject_first: bool = False  # allowing would replace the user's own work: the option clients pick first keeps it


class _Request:
    """What a request says of itself unless it says otherwise."""

    __slots__ = ()

    @property
    def shown(self) -> bool:
        """Whether the allowed call shows the request's display as its content."""
        return True

    @property
    def choices(self) -> Choices | None:
        """The question's own words (None: the usual "Allow once" and "Reject")."""
        return None


@value
class Edit(_Request):
    """Files a tool wants to create, change or delete (absolute, resolved paths)."""

    changes: tuple[FileChange, ...]

    @property
    def paths(self) -> tuple[Path, ...]:
        return tuple(change.path for change in self.changes)

    @property
    def kind(self) -> ToolKind:
        return "edit"

    def title(self, where: Surroundings, given: str = "") -> str:
        return given or _edit_title(self.changes, where.cwd)

    def display(self, where: Surroundings) -> tuple[Display, ...]:
        return _diffs(self.changes)


@value
class Restore(_Request):
    """Putting ``changes`` back from a checkpoint (``/rollback``), decided as the edit it is. Where the mode
    asks, the one way to allow it is named ``label`` (what it does) and the other keeps things as they
    are; ``requested``: the client asked for exactly this restore (the user asked there), so it holds
    unasked. ``preview`` is what the question shows; ``replaces_own_edits``: it puts back files the user
    changed after the agent (asked for by name, ``--include-edited``)."""

    changes: tuple[FileChange, ...]
    label: str
    preview: tuple[Display, ...]
    requested: bool = False
    replaces_own_edits: bool = False

    @property
    def paths(self) -> tuple[Path, ...]:
        return tuple(change.path for change in self.changes)

    @property
    def kind(self) -> ToolKind:
        return "edit"

    def title(self, where: Surroundings, given: str = "") -> str:
        return given or _edit_title(self.changes, where.cwd)

    def display(self, where: Surroundings) -> tuple[Display, ...]:
        return self.preview

    @property
    def shown(self) -> bool:
        return False

    @property
    def choices(self) -> Choices:
        return Choices(self.label, "Keep things as they are",
                       "Nothing was restored: you chose to keep things as they are.",
                       "Nothing was restored: the question was cancelled.", reject_first=self.replaces_own_edits)


@value
class State(_Request):
    """A change to the agent's own stores. ``subject`` is what "always" covers ("memory", or one skill
    as "skill <name>"): the gate, which knows where the stores are, finds it from the paths."""

    changes: tuple[FileChange, ...]
    subject: str = ""

    @property
    def kind(self) -> ToolKind:
        return "edit"

    def title(self, where: Surroundings, given: str = "") -> str:
        return given or f"Update {self.subject}"

    def display(self, where: Surroundings) -> tuple[Display, ...]:
        return _diffs(self.changes)


@value
class Read(_Request):
    """Paths a tool wants to read (absolute, resolved), and why. ``links``: those of ``paths`` that are hard
    links to a secret file, with its path; reading one is reading that secret (``read_paths``)."""

    paths: tuple[Path, ...]
    purpose: ReadPurpose = "file"
    links: tuple[tuple[Path, Path], ...] = ()

    @property
    def read_paths(self) -> tuple[Path, ...]:
        """What is read: each path, or the secret it is a hard link to."""
        secrets = dict(self.links)
        return tuple(secrets.get(path, path) for path in self.paths)

    @property
    def kind(self) -> ToolKind:
        return "read"

    def title(self, where: Surroundings, given: str = "") -> str:
        title = given or f"Read {one_line(', '.join(str(path) for path in self.paths), 80)}"
        if self.links:  # said whatever the call's own title: what is really read
            secrets = ", ".join(_home_relative(secret, where.home) for _, secret in self.links)
            title += f" — a hard link to {one_line(secrets, 80)}"
        return title

    def display(self, where: Surroundings) -> tuple[Display, ...]:
        notes = [f"{path} is a hard link to {secret}" for path, secret in self.links]
        return (TextDisplay("\n".join([f"Read {', '.join(str(path) for path in self.paths)}", *notes])),)

    @property
    def shown(self) -> bool:
        return False


@value
class External(_Request):
    """A tool of an MCP server (or of a memory provider) called with ``arguments``; ``read_only`` is what
    the server says of it."""

    server: str
    tool: str
    arguments: Mapping[str, Any]
    read_only: bool = False

    @property
    def kind(self) -> ToolKind:
        return "execute"

    def title(self, where: Surroundings, given: str = "") -> str:
        return given or f"Run {self.tool} ({self.server})"

    def display(self, where: Surroundings) -> tuple[Display, ...]:
        shown = json.dumps(self.arguments, ensure_ascii=False, indent=2) if self.arguments else "(no arguments)"
        return (TextDisplay(shown, fence="json"),)

    @property
    def shown(self) -> bool:
        return not self.read_only


@value
class Command(_Request):
    """A shell line to run in ``cwd``; ``outside_sandbox``: the agent asks to run it without the OS sandbox.
    ``analysis`` is what the line runs and does: the gate analyses the line once (``permissions.shell``)
    and carries it here, for the policy and the checkpoint layer to read."""

    line: str
    cwd: Path
    outside_sandbox: bool = False
    analysis: CommandFacts | None = None

    @property
    def kind(self) -> ToolKind:
        return "execute"

    def title(self, where: Surroundings, given: str = "") -> str:
        return given or f"Run {one_line(self.line, 80)}"

    def display(self, where: Surroundings) -> tuple[Display, ...]:
        elsewhere = where.cwd is not None and self.cwd != where.cwd
        return (TextDisplay(f"$ {self.line}" + (f"\n# in {self.cwd}" if elsewhere else ""), fence="sh"),)

    def analysed(self, analysis: CommandFacts) -> Command:
        return Command(self.line, self.cwd, self.outside_sandbox, analysis)


@value
class JobInput(_Request):
    """``text`` for the stdin of ``job``, which runs outside the sandbox (then its end of input when
    ``eof``). No rule sees what the job makes of it, so it is decided as a command outside the sandbox:
    its ``line`` is the job's command fed the text (``job_command_line``), rated for what it shows; the
    question shows the exact text. "Always" covers that one job of that one session (``key``)."""

    job: JobHandle
    text: str
    eof: bool = False
    analysis: CommandFacts | None = None

    @property
    def line(self) -> str:
        return job_command_line(self.job, "write", self.text)

    @property
    def cwd(self) -> Path:
        return self.job.cwd

    @property
    def key(self) -> str:
        """``<session id>/<job id>``: never a program, and never kept past the session."""
        return f"{self.job.session_id}/{self.job.job_id}"

    @property
    def kind(self) -> ToolKind:
        return "execute"

    def title(self, where: Surroundings, given: str = "") -> str:
        return given or f"Send input to {self.job.job_id}"

    def display(self, where: Surroundings) -> tuple[Display, ...]:
        return (job_input_display(self.job.job_id, self.job.command, self.text, eof=self.eof, sandbox=where.sandbox),)

    def analysed(self, analysis: CommandFacts) -> JobInput:
        return JobInput(self.job, self.text, self.eof, analysis)


@value
class Confirm(_Request):
    """A question put for its own sake: a hook asks the user to confirm a call, or a project's hook
    command waits for the user's approval. It always asks (``reason`` in its title), whatever the mode."""

    title_text: str
    reason: str
    shown_text: str
    own_choices: Choices | None = None

    @property
    def kind(self) -> ToolKind:
        return "execute"

    def title(self, where: Surroundings, given: str = "") -> str:
        return self.title_text

    def display(self, where: Surroundings) -> tuple[Display, ...]:
        return (TextDisplay(self.reason), TextDisplay(self.shown_text, fence="text"))

    @property
    def shown(self) -> bool:
        return False

    @property
    def choices(self) -> Choices | None:
        return self.own_choices


Request = Edit | Restore | State | Read | External | Command | JobInput | Confirm


def _diffs(changes: Sequence[FileChange]) -> tuple[Display, ...]:
    return tuple(DiffDisplay(str(change.path), change.old_text, change.new_text or "") for change in changes)


def _edit_title(changes: Sequence[FileChange], cwd: Path | None) -> str:
    if len(changes) != 1:
        return f"Edit {len(changes)} files"
    path = changes[0].path
    try:
        shown = str(path.relative_to(cwd)) if cwd is not None else str(path)
    except ValueError:
        shown = str(path)
    verb = "Delete" if changes[0].new_text is None else ("Create" if changes[0].old_text is None else "Edit")
    return f"{verb} {shown}"


def _home_relative(path: Path, home: Path) -> str:
    """``path`` as ``~/...`` when it is under ``home``: shorter in a question's title."""
    try:
        return f"~/{path.relative_to(home)}"
    except ValueError:
        return str(path)


def job_command_line(job: JobHandle, action: JobAction, text: str = "") -> str:
    """The shell line that would do to ``job`` what ``action`` does, as the gate is asked about it.

    Stopping it is ``kill -TERM -- -<group>`` (a normal command: no grant covers it, so the default mode
    asks each time). Writing to it is its own command fed ``text`` as a here-document: what the job does
    with its input is what that command does with it, so a shell reading commands has them judged as
    commands (``rm -rf ~`` is refused, a download asks) and any other program is judged as itself.
    """
    if action == "kill":
        return f"kill -TERM -- -{job.process.pid}"
    delimiter = "EOF"
    lines = set(text.splitlines())
    while delimiter in lines:
        delimiter += "_"
    command = job.command.strip()
    if any(mark in command for mark in "\n#;&|"):  # the here-document feeds all of it, past any comment
        command = f"{{\n{command}\n}}"
    body = text if not text or text.endswith("\n") else text + "\n"
    return f"{command} <<'{delimiter}'\n{body}{delimiter}"


_KEPT = frozenset("\n\t")


def job_input_display(job_id: str, job_command: str, text: str, *, eof: bool, sandbox: bool) -> TextDisplay:
    """The job (its whole command), where it runs, and the text it will read, exactly (as a plain block,
    never Markdown): control characters (an escape sequence that would redraw a terminal, a carriage
    return that would hide the start of a line) are written out as ``\\x1b``, ``\\x0d``, … so nothing in it
    is invisible, and a missing final newline or the end of input that follows is said in words."""
    where = "outside the sandbox" if sandbox else "without an OS sandbox"
    size = len(text.encode("utf-8"))
    lines = [f"{job_id} runs {where}: $ {job_command.strip()}"]
    if not text:
        lines.append("It is sent nothing; its stdin is closed (end of input)." if eof else "It is sent nothing.")
        return TextDisplay("\n".join(lines), fence="")
    shown, escaped = visible(text)
    lines.append(f"It reads these {size:,} byte{'s' if size != 1 else ''} on its stdin:")
    lines.append(shown.removesuffix("\n"))
    notes = []
    if escaped:
        notes.append("characters that do not show are written out as \\x.. or \\u.... escapes, a backslash as \\\\")
    if not text.endswith("\n"):
        notes.append("no newline at the end")
    if eof:
        notes.append("then its stdin is closed (end of input)")
    if notes:
        lines.append(f"[{'; '.join(notes)}]")
    return TextDisplay("\n".join(lines), fence="")


def visible(text: str) -> tuple[str, bool]:
    """``text`` with every character that does not show itself (controls but newline and tab, format
    characters such as bidi overrides, line separators) written out as ``\\x1b``, ``\\u202e``, …; once any
    is, a backslash is doubled so the escapes cannot be confused with text. Whether any was."""
    if all(char in _KEPT or char.isprintable() for char in text):
        return text, False
    out = []
    for char in text:
        if char == "\\":
            out.append("\\\\")
        elif char in _KEPT or char.isprintable():
            out.append(char)
        else:
            code = ord(char)
            out.append(f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}")
    return "".join(out), True


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
