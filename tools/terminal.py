"""The ``terminal`` tool: run a shell command in the session's workspace.

Foreground commands run through the editor (the client's terminal when it offers one, a local
subprocess otherwise) and show their output in the tool call while they run; a timeout or a
cancelled turn kills the whole process tree. Background commands are detached from the turn:
each is a job of the session (``job-1``, …) that writes to a log file and keeps running after the
turn ends, until the ``process`` tool stops it or the session ends (closed, deleted, or the editor
gone), which ends them and removes their logs. ``BackgroundJobs`` records each job's end on a
thread of its own and keeps what the model has not yet heard of for the core (``take_ended``).
Either way the gate sees the exact command and directory first, and a refused command never starts.
"""

from __future__ import annotations

import codecs
import logging
import math
import os
import re
import signal
import subprocess
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import anyio.from_thread
import anyio.lowlevel

from acp_hermes_memory.text import one_line
from acp_hermes_tools import temp_dirs
from acp_hermes_tools.context import StateKey, ToolContext, ToolScope
from acp_hermes_tools.contracts import (
    JOB_TAIL_LINES,
    CommandOutcome,
    CommandRequest,
    Display,
    JobEnded,
    TerminalDisplay,
    TextDisplay,
)
from acp_hermes_tools.local_io import close_process_input, signal_group
from acp_hermes_tools.process_trees import HeldGroup
from acp_hermes_tools.registry import Access, Guidance, Presentation, Tool, ToolError, ToolResult

log = logging.getLogger(__name__)

DEFAULT_TIMEOUT = 180.0
MIN_TIMEOUT = 1.0
MAX_TIMEOUT = 3600.0
_TITLE_CHARS = 80
_DISPLAY_CHARS = 60_000  # output shown in the tool call; the newest part is kept
STOP_GRACE_SECONDS = 2.0  # background jobs of an ended session: SIGTERM, then SIGKILL after this
_STOP_POLL_SECONDS = 0.05

DESCRIPTION = (
    "Run a shell command in the workspace and get its output (stdout and stderr together) and exit "
    "status. The shell is non-interactive: stdin is empty and there is no TTY, so pass flags like "
    "-y/--yes and never start editors, pagers or prompts. `workdir` (default: the session's working "
    "directory) may be relative to it. A foreground command is killed after `timeout` seconds "
    "(default 180, at most 3600) or when the user cancels. Very long output keeps its beginning and "
    "end; redirect it to a file and read that with read_file to see everything.\n"
    "For servers, watchers and other long-running processes set `background` to true: the command "
    "starts detached and the call returns at once with a job id (job-1, …), its pid and its log file "
    "(stdout and stderr); it keeps running after this turn and `timeout` does not apply. Manage it with "
    "the `process` tool: poll its new output, wait for it to end, kill it. Add `stdin: true` to give it "
    "a pipe for input that `process` can write to (otherwise its stdin is empty).\n"
    "Where the session has an OS sandbox, commands run inside it: only the workspace and $TMPDIR are "
    "writable and there is no network. Put temporary files under $TMPDIR. When a command really must "
    "write elsewhere or reach the network, set `outside_sandbox` to true: the user is asked first.\n"
    "Prefer read_file, search_files, write_file and patch over cat, grep, find, sed or echo for "
    "reading, searching and editing files."
)
SANDBOX_HINT = (
    "[This command ran in the OS sandbox, where only the workspace and $TMPDIR are writable and the "
    "network is off. Write temporary files under $TMPDIR; if the command must write elsewhere or use "
    "the network, run it again with outside_sandbox: true and the user will be asked.]"
)
_SANDBOX_FAILURES = ("Read-only file system", "Network is unreachable", "Could not resolve host",
                     "Temporary failure in name resolution", "Name or service not known", "getaddrinfo")

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "command": {"type": "string", "description": "The command line to run."},
        "workdir": {
            "type": "string",
            "description": "Directory to run in, absolute or relative to the session's working directory.",
        },
        "timeout": {
            "type": "number",
            "description": "Seconds before a foreground command is killed (default 180, clamped to 1-3600).",
        },
        "background": {
            "type": "boolean",
            "description": "Start detached and return at once with a job id (for the process tool), the pid "
                           "and a log file.",
            "default": False,
        },
        "stdin": {
            "type": "boolean",
            "description": "With background: give the command a pipe as stdin, which process(action=write) "
                           "writes to (default: empty stdin).",
            "default": False,
        },
        "outside_sandbox": {
            "type": "boolean",
            "description": "Run outside the OS sandbox (writes anywhere, network). The user is always asked.",
            "default": False,
        },
    },
    "required": ["command"],
    "additionalProperties": False,
}


def present_terminal(args: dict[str, Any], scope: ToolScope) -> Presentation:
    """``Run <command>``: its first line, whitespace collapsed, cut to about 80 characters."""
    return Presentation(f"Run {command_summary(str(args.get('command', '')))}")


def command_summary(command: str) -> str:
    """A command as a one-line title: first line, whitespace collapsed, about 80 characters."""
    lines = command.strip().splitlines()
    first = one_line(lines[0], _TITLE_CHARS) if lines else ""
    return f"{first} …" if len(lines) > 1 and not first.endswith("…") else first


async def terminal(args: dict[str, Any], ctx: ToolContext) -> ToolResult:
    command: str = args["command"]
    if not command.strip():
        raise ToolError("command is empty")
    background, stdin = bool(args.get("background", False)), bool(args.get("stdin", False))
    if stdin and not background:
        raise ToolError("stdin applies to background commands only (a foreground command's stdin is empty)")
    cwd = await _workdir(args.get("workdir"), ctx)
    timeout = clamp_timeout(args.get("timeout"))
    await ctx.authorize_command(command, cwd, outside_sandbox=bool(args.get("outside_sandbox", False)))
    if background:
        return _start_in_background(command, cwd, ctx, stdin=stdin)
    outcome = await ctx.run_command(CommandRequest(command, cwd, timeout), _LiveOutput(ctx, command))
    return _foreground_result(command, outcome, timeout)


async def _workdir(raw: str | None, ctx: ToolContext) -> Path:
    if not raw or not raw.strip():
        return ctx.cwd
    path = ctx.resolve(raw)
    if not await anyio.Path(path).is_dir():
        raise ToolError(f"workdir {path} is not an existing directory")
    return path


def clamp_timeout(raw: float | None) -> float:
    """The model's timeout, kept between 1 s and an hour (180 s when missing or not finite)."""
    if raw is None or not math.isfinite(raw):
        return DEFAULT_TIMEOUT
    return min(max(float(raw), MIN_TIMEOUT), MAX_TIMEOUT)


class _LiveOutput:
    """Shows the running command in its tool call: the client's terminal, or the output so far."""

    def __init__(self, ctx: ToolContext, command: str) -> None:
        self._ctx = ctx
        self._command = command

    async def on_terminal(self, terminal_id: str) -> None:
        await self._ctx.show([TerminalDisplay(terminal_id)])

    async def on_output(self, output: str) -> None:
        await self._ctx.show([TextDisplay(_transcript(self._command, output), fence="")])


def _transcript(command: str, output: str, status: str = "") -> str:
    if len(output) > _DISPLAY_CHARS:
        output = "[… earlier output not shown …]\n" + output[-_DISPLAY_CHARS:]
    if output and not output.endswith("\n") and status:
        output += "\n"
    return f"$ {command}\n{output}{status}"


def _seconds(value: float) -> str:
    return f"{value:g}s"


def _ending(outcome: CommandOutcome, timeout: float) -> tuple[str, str]:
    """How the command ended, worded for the model's status line and for the user."""
    if outcome.timed_out:
        ending = f"timed out after {_seconds(timeout)}; the command was killed"
    elif outcome.signal:
        ending = f"killed by signal {outcome.signal}"
    elif outcome.exit_code is not None:
        return f"exit code: {outcome.exit_code}", f"exit code {outcome.exit_code}"
    else:
        ending = "exit status unknown"
    return ending, ending


def _foreground_result(command: str, outcome: CommandOutcome, timeout: float) -> ToolResult:
    status, shown_status = _ending(outcome, timeout)
    note = (
        "; the middle of the output was cut: redirect it to a file and read that to see all of it"
        if outcome.truncated
        else ""
    )
    output = outcome.output if outcome.output.strip() else "(no output)\n"
    separator = "" if output.endswith("\n") else "\n"
    hint = ""
    if outcome.sandboxed and outcome.exit_code != 0 and any(sign in output for sign in _SANDBOX_FAILURES):
        hint = f"\n{SANDBOX_HINT}"
    moved = "".join(f"\n[⚠️ {line}]" for line in outcome.quarantined)
    display: tuple[Display, ...]
    if outcome.terminal_id is not None:
        display = (TerminalDisplay(outcome.terminal_id), TextDisplay(shown_status))
    else:
        display = (TextDisplay(_transcript(command, outcome.output, f"[{status}]"), fence=""),)
    display += tuple(TextDisplay(f"⚠️ {line}") for line in outcome.quarantined)
    return ToolResult(
        text=f"{output}{separator}[{status}{note}]{hint}{moved}",
        ok=outcome.exit_code == 0 and not outcome.timed_out,
        display=display,
        raw_output={"exit_code": outcome.exit_code, "timed_out": outcome.timed_out, "truncated": outcome.truncated},
    )


# -- background commands -----------------------------------------------------------------------

POLL_BYTES = 32 * 1024  # the most new output one read of a job's log returns
_TAIL_BYTES = 8 * 1024  # how much of the log's end a JobEnded looks at for its last lines
_TAIL_CHARS = 2_000


# A plain class, not a dataclass: defining one costs about a millisecond before the first prompt.
class BackgroundJob:
    """A command started with ``background=true``; it outlives the turn that started it.

    Its end is recorded once, by a thread that waits for it (``BackgroundJobs.add``): ``end`` is None
    until then, and ``ended`` is set right after.
    """

    def __init__(self, pid: int, command: str, cwd: Path, log_path: Path,
                 started_at: float,  # wall-clock time
                 process: subprocess.Popen[bytes], job_id: str = "", session_id: str = "",
                 stdin: bool = False,  # started with a pipe for its input (``process`` may write to it)
                 sandboxed: bool = False) -> None:  # runs inside the session's OS sandbox (writes judged there)
        self.pid = pid
        self.command = command
        self.cwd = cwd
        self.log_path = log_path
        self.started_at = started_at
        self.process = process
        self.job_id = job_id
        self.session_id = session_id
        self.stdin = stdin
        self.sandboxed = sandboxed
        self.started_monotonic = time.monotonic()
        self.end: JobEnded | None = None
        self.ended = threading.Event()
        self.read_offset = 0  # how far ``read_new_output`` has read the log
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")

    @property
    def exit_code(self) -> int | None:
        """None while it runs; negative for a signal, like ``Popen.returncode``."""
        return self.process.poll()

    @property
    def runtime(self) -> float:
        """Seconds it has run: until its end once it ended."""
        return self.end.duration if self.end is not None else time.monotonic() - self.started_monotonic

    @property
    def input_open(self) -> bool:
        """Whether the agent can still write to its stdin."""
        return self.process.stdin is not None and not self.process.stdin.closed

    def read_new_output(self, limit: int = POLL_BYTES) -> tuple[str, int]:
        """The output it wrote since the last call, and how many bytes of it were skipped to keep to the
        newest ``limit`` bytes (0: none). Reads the log file; "" once the log is gone."""
        try:
            with open(self.log_path, "rb") as log_file:
                size = os.fstat(log_file.fileno()).st_size
                start = self.read_offset if self.read_offset <= size else 0  # a log cut short: from the top
                skipped = max(size - start - limit, 0)
                if skipped:
                    start += skipped
                    self._decoder.reset()  # a new place in the file: no half character carries over
                log_file.seek(start)
                data = log_file.read(size - start)
        except OSError:
            return "", 0
        self.read_offset = start + len(data)
        return self._decoder.decode(data, final=self.end is not None), skipped


def _log_tail(path: Path, lines: int = JOB_TAIL_LINES) -> str:
    """The last ``lines`` lines of a log (at most about 2,000 characters of them); "" when it is gone."""
    try:
        with open(path, "rb") as log_file:
            size = os.fstat(log_file.fileno()).st_size
            log_file.seek(max(size - _TAIL_BYTES, 0))
            data = log_file.read(_TAIL_BYTES)
    except OSError:
        return ""
    text = data.decode("utf-8", errors="replace")
    kept = text.splitlines()
    if size > _TAIL_BYTES and kept:
        kept = kept[1:]  # it began mid-line
    tail = "\n".join(kept[-lines:])
    return tail if len(tail) <= _TAIL_CHARS else "…" + tail[-_TAIL_CHARS:]


def _exit_status(process: subprocess.Popen[bytes]) -> tuple[int | None, str | None]:
    """(exit code, signal name) of a process that ended: one of them is None."""
    code = process.returncode
    if code is None or code >= 0:
        return code, None
    try:
        return None, signal.Signals(-code).name
    except ValueError:
        return None, f"signal {-code}"


OnEnd = Callable[[JobEnded], None]


# A plain class, not a dataclass: defining one costs about a millisecond before the first prompt.
class BackgroundJobs:
    """One session's background commands: their ids, their ends, and what the model has not heard of yet.

    Each job's end is recorded by a thread of its own that waits for it; that thread then calls
    ``on_end`` (once per job, never after ``close``) and, unless the model has already seen the job end
    through the ``process`` tool, queues the ``JobEnded`` for ``take_ended``. ``on_end`` runs on that
    thread, not on the event loop: see ``on_event_loop`` to get there.
    """

    __slots__ = ("_closed", "_count", "_directory", "_lock", "_reported", "_unreported", "jobs", "on_end")

    def __init__(self) -> None:
        self.jobs: list[BackgroundJob] = []
        self.on_end: OnEnd | None = None
        self._directory: Path | None = None
        self._count = 0  # ids handed out: job-1, job-2, … never reused in a session
        self._unreported: list[JobEnded] = []
        self._reported: set[str] = set()
        self._lock = threading.Lock()
        self._closed = False

    def log_directory(self, session_id: str) -> Path:
        """A private temporary directory for this session's logs, made on first use and named after this
        process (``tools.temp_dirs``), so a later start removes it if this process is killed."""
        if self._directory is None:
            tag = re.sub(r"[^A-Za-z0-9_-]", "", session_id)[:32] or "session"
            self._directory = temp_dirs.make("jobs", tag)
        return self._directory

    def new_id(self) -> str:
        """The next job id of this session: ``job-1``, ``job-2``, …"""
        self._count += 1
        return f"job-{self._count}"

    def ids_used(self, count: int) -> None:
        """A restored session used ids up to ``job-<count>``: new jobs get later ones."""
        self._count = max(self._count, count)

    def add(self, job: BackgroundJob) -> None:
        """Keep ``job`` and start the thread that records its end."""
        self.jobs.append(job)
        threading.Thread(target=self._watch, args=(job,), name=f"background-job-{job.pid}", daemon=True).start()

    def find(self, job_id: str) -> BackgroundJob | None:
        return next((job for job in self.jobs if job.job_id == job_id), None)

    def take_ended(self) -> list[JobEnded]:
        """The jobs that ended since the last call and that the model has not seen end, oldest first;
        each is handed out once (thread-safe; never blocks)."""
        with self._lock:
            ended, self._unreported = self._unreported, []
            self._reported.update(item.job_id for item in ended)
        return ended

    def mark_reported(self, job: BackgroundJob) -> None:
        """The model has been told ``job`` ended (by the ``process`` tool): no notice for it."""
        with self._lock:
            self._reported.add(job.job_id)
            self._unreported = [item for item in self._unreported if item.job_id != job.job_id]

    def _watch(self, job: BackgroundJob) -> None:
        job.process.wait()
        exit_code, signal_name = _exit_status(job.process)
        ended = JobEnded(job.job_id, job.command, job.pid, exit_code, signal_name,
                         time.monotonic() - job.started_monotonic, _log_tail(job.log_path), job.log_path)
        with self._lock:
            job.end = ended
            hook = None if self._closed else self.on_end
            if not self._closed and job.job_id not in self._reported:
                self._unreported.append(ended)
        job.ended.set()
        log.info("background command %s (pid %d) %s", job.job_id, job.pid, ended.status)
        if hook is not None:
            try:
                hook(ended)
            except Exception:  # the session's hook must not take the thread's report with it
                log.exception("the end-of-job hook failed for %s", job.job_id)

    def close(self) -> None:
        """The session ended: stop (SIGSTOP) each running job's process group now; on a thread (not a
        daemon, so an exiting agent waits for it), note what each started outside its group, SIGTERM
        them all, SIGKILL what is left after ``STOP_GRACE_SECONDS`` (``tools.process_trees``), then remove
        the log directory. No ``on_end`` call and no queued notice after this. Safe to call twice.

        A job whose first process has already exited is left alone: its group id may by now belong
        to someone else's processes (a finished group's id can be reused), so nothing is sent to it.
        """
        with self._lock:
            self._closed = True
            self.on_end = None
            self._unreported = []
        jobs, self.jobs = self.jobs, []
        # Each job leads its own group; held (stopped) with no wait since its leader was seen running.
        held = [HeldGroup(job.pid) for job in jobs if job.exit_code is None]
        directory, self._directory = self._directory, None
        for job in jobs:  # the agent's ends of their stdin pipes (closed on this thread only)
            close_process_input(job.process)
        if not held and directory is None:
            return
        log.info("session ended: stopping %d background command(s)", len(held))
        try:
            threading.Thread(target=_finish_stopping, args=(held, directory), name="background-jobs-stop").start()
        except RuntimeError:  # no new thread (the interpreter is ending): the held groups must not stay stopped
            _finish_stopping(held, directory)


def on_event_loop(callback: OnEnd) -> OnEnd:
    """An ``on_end`` hook that runs ``callback`` on the event loop this is called from (in its thread),
    for a core that wants to emit events when a job ends. A loop that has finished is not called."""
    token = anyio.lowlevel.current_token()

    def hook(ended: JobEnded) -> None:
        try:
            anyio.from_thread.run_sync(callback, ended, token=token)
        except RuntimeError:  # the loop has ended (anyio's RunFinishedError is a RuntimeError)
            log.debug("job %s ended after the event loop", ended.job_id)

    return hook


def _finish_stopping(held: list[HeldGroup], directory: Path | None) -> None:
    for group in held:
        group.look()
        group.signal(signal.SIGTERM)
    deadline = time.monotonic() + STOP_GRACE_SECONDS
    alive = [group for group in held if group.held]
    while alive and time.monotonic() < deadline:
        time.sleep(_STOP_POLL_SECONDS)
        alive = [group for group in alive if signal_group(group.group, 0)]
    for group in alive:
        if group.signal(signal.SIGKILL):
            log.info("background command %d ignored SIGTERM: killed", group.group)
    for group in held:
        group.finish()
    if directory is not None:
        temp_dirs.release(directory)


BACKGROUND_JOBS = StateKey("terminal.background", BackgroundJobs, close=BackgroundJobs.close)


def background_jobs(scope: ToolScope) -> BackgroundJobs:
    """The session's background jobs (made on first use): where the core installs ``on_end`` and
    drains ``take_ended``."""
    return scope.state.get(BACKGROUND_JOBS)


def _start_in_background(command: str, cwd: Path, ctx: ToolContext, *, stdin: bool) -> ToolResult:
    jobs = ctx.state.get(BACKGROUND_JOBS)
    job_id = jobs.new_id()
    try:
        log_path = jobs.log_directory(ctx.session_id) / f"{job_id}.log"
        process = ctx.start_detached(command, cwd, log_path, stdin=stdin)
    except OSError as error:
        raise ToolError(f"could not start the command: {error}") from error
    job = BackgroundJob(process.pid, command, cwd, log_path, time.time(), process, job_id=job_id,
                        session_id=ctx.session_id, stdin=stdin, sandboxed=ctx.runs_sandboxed(command))
    jobs.add(job)
    log.info("background command started: %s, pid %s, log %s", job_id, job.pid, job.log_path)
    status = f"running in the background as {job_id}: pid {job.pid}, log {job.log_path}"
    actions = "poll for new output, wait for it to end, kill to stop it" + (", write to send it input"
                                                                              if stdin else "")
    return ToolResult(
        text=(
            f"Started in the background as {job_id} (pid {job.pid}); it keeps running after this turn.\n"
            f"Its output (stdout and stderr) goes to {job.log_path}.\n"
            f'Use the process tool with job_id "{job_id}": {actions}.'
        ),
        display=(TextDisplay(f"$ {command}\n[{status}]", fence=""),),
        raw_output={"pid": job.pid, "log": str(job.log_path), "background": True, "job_id": job_id,
                    "stdin": stdin},
    )


def restore_terminal(scope: ToolScope, raw_output: Any) -> None:
    """A reloaded session's new background jobs get ids after those its stored calls used."""
    if isinstance(raw_output, dict) and isinstance(raw_output.get("job_id"), str):
        found = re.fullmatch(r"job-(\d{1,9})", raw_output["job_id"])
        if found:
            scope.state.get(BACKGROUND_JOBS).ids_used(int(found.group(1)))


TERMINAL_TOOL = Tool(
    name="terminal",
    description=DESCRIPTION,
    schema=SCHEMA,
    handler=terminal,
    kind="execute",
    access=Access.EXECUTE,
    parallel_safe=False,
    present=present_terminal,
    restore=restore_terminal,
    guidance=Guidance(40, "Check your work: run tests, builds and linters with `terminal`, and report failures.",
                      previewed=True),
    toolsets=("terminal",),
    command_arg="command",
    claude_names=("Bash",),
)
