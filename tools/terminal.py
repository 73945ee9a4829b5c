"""The ``terminal`` tool: run a shell command in the session's workspace.

Foreground commands run through the editor (the client's terminal when it offers one, a local
subprocess otherwise) and show their output in the tool call while they run; a timeout or a
cancelled turn kills the whole process tree. Background commands are detached from the turn:
they write to a log file the model can read later and keep running after the turn ends, until
the session ends (closed, deleted, or the editor gone), which ends them and removes their logs.
Either way the gate sees the exact command and directory first, and a refused command never starts.
"""

from __future__ import annotations

import logging
import math
import os
import re
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio

from acp_hermes_memory.text import one_line
from acp_hermes_tools.context import StateKey, ToolContext, ToolScope
from acp_hermes_tools.contracts import CommandOutcome, CommandRequest, Display, TerminalDisplay, TextDisplay
from acp_hermes_tools.registry import Access, Presentation, Tool, ToolError, ToolResult

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
    "starts detached and the call returns at once with its pid and a log file (stdout and stderr) "
    "to read later with read_file; it keeps running after this turn and `timeout` does not apply.\n"
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
            "description": "Start detached and return at once with the pid and a log file.",
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
    cwd = await _workdir(args.get("workdir"), ctx)
    timeout = clamp_timeout(args.get("timeout"))
    await ctx.authorize_command(command, cwd, outside_sandbox=bool(args.get("outside_sandbox", False)))
    if args.get("background", False):
        return _start_in_background(command, cwd, ctx)
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


@dataclass
class BackgroundJob:
    """A command started with ``background=true``; it outlives the turn that started it."""

    pid: int
    command: str
    cwd: Path
    log_path: Path
    started_at: float
    process: subprocess.Popen[bytes] = field(repr=False)

    @property
    def exit_code(self) -> int | None:
        """None while it runs; negative for a signal, like ``Popen.returncode``."""
        return self.process.poll()


@dataclass
class BackgroundJobs:
    """One session's background commands, so later tools can list or stop them."""

    jobs: list[BackgroundJob] = field(default_factory=list)
    _directory: Path | None = None

    def log_directory(self, session_id: str) -> Path:
        """A private temporary directory for this session's logs, made on first use."""
        if self._directory is None:
            tag = re.sub(r"[^A-Za-z0-9_-]", "", session_id)[:32] or "session"
            self._directory = Path(tempfile.mkdtemp(prefix=f"acp-hermes-{tag}-"))
        return self._directory

    def close(self) -> None:
        """The session ended: SIGTERM each running job's process group now; on a thread (not a daemon,
        so an exiting agent waits for it), SIGKILL what is left after ``STOP_GRACE_SECONDS``, then
        remove the log directory. Safe to call twice.

        A job whose first process has already exited is left alone: its group id may by now belong
        to someone else's processes (a finished group's id can be reused), so nothing is sent to it.
        """
        groups = [job.pid for job in self.jobs if job.exit_code is None]  # each job leads its own group
        directory, self.jobs, self._directory = self._directory, [], None
        if not groups and directory is None:
            return
        for group in groups:
            _signal_group(group, signal.SIGTERM)
        log.info("session ended: stopping %d background command(s)", len(groups))
        threading.Thread(target=_finish_stopping, args=(groups, directory), name="background-jobs-stop").start()


def _signal_group(group: int, sig: int) -> bool:
    """Send ``sig`` to process group ``group`` (0: only look); False once the group is gone."""
    try:
        os.killpg(group, sig)
    except (ProcessLookupError, PermissionError):  # gone (a PermissionError: the id is no longer ours)
        return False
    return True


def _finish_stopping(groups: list[int], directory: Path | None) -> None:
    deadline = time.monotonic() + STOP_GRACE_SECONDS
    alive = groups
    while alive and time.monotonic() < deadline:
        time.sleep(_STOP_POLL_SECONDS)
        alive = [group for group in alive if _signal_group(group, 0)]
    for group in alive:
        if _signal_group(group, signal.SIGKILL):
            log.info("background command %d ignored SIGTERM: killed", group)
    if directory is not None:
        shutil.rmtree(directory, ignore_errors=True)


BACKGROUND_JOBS = StateKey("terminal.background", BackgroundJobs, close=BackgroundJobs.close)


def _start_in_background(command: str, cwd: Path, ctx: ToolContext) -> ToolResult:
    jobs = ctx.state.get(BACKGROUND_JOBS)
    try:
        log_path = jobs.log_directory(ctx.session_id) / f"job-{len(jobs.jobs) + 1}.log"
        process = ctx.start_detached(command, cwd, log_path)
    except OSError as error:
        raise ToolError(f"could not start the command: {error}") from error
    job = BackgroundJob(process.pid, command, cwd, log_path, time.time(), process)
    jobs.jobs.append(job)
    log.info("background command started: pid %s, log %s", job.pid, job.log_path)
    status = f"running in the background: pid {job.pid}, log {job.log_path}"
    return ToolResult(
        text=(
            f"Started in the background (pid {job.pid}); it keeps running after this turn.\n"
            f"Its output (stdout and stderr) goes to {job.log_path}; read it with read_file."
        ),
        display=(TextDisplay(f"$ {command}\n[{status}]", fence=""),),
        raw_output={"pid": job.pid, "log": str(job.log_path), "background": True},
    )


TERMINAL_TOOL = Tool(
    name="terminal",
    description=DESCRIPTION,
    schema=SCHEMA,
    handler=terminal,
    kind="execute",
    access=Access.EXECUTE,
    parallel_safe=False,
    present=present_terminal,
)
