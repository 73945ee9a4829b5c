"""Local file and process I/O: the disk and subprocesses of this machine.

The editor bridge in the ACP adapter extends ``LocalEditor``, so whatever the client does not
offer (files, terminals, deletes, detached commands) falls back to these.
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import anyio
import anyio.abc

from acp_hermes_memory.fs import delete_exactly, write_text_exactly
from acp_hermes_tools.contracts import CommandObserver, CommandOutcome, CommandRequest
from acp_hermes_tools.process_trees import HeldGroup
from acp_hermes_tools.spawn import Launch

if TYPE_CHECKING:
    from acp_hermes_tools.sandbox import Confinement

log = logging.getLogger(__name__)
LAUNCHER = Path(__file__).with_name("launcher.py")  # a program under it ends with the agent (see there)


def user_shell() -> str:
    """The shell commands run in: ``$SHELL`` when it exists, else ``/bin/sh``."""
    shell = os.environ.get("SHELL")
    return shell if shell and os.path.exists(shell) else "/bin/sh"


class LocalEditor:
    """Disk and subprocess I/O, used when the client offers neither fs nor terminals."""

    def __init__(self, shell: str | None = None) -> None:
        self._shell = shell or user_shell()
        self.last_command_started: float | None = None

    async def read_text(self, path: Path) -> str:
        data = await anyio.Path(path).read_bytes()
        return data.decode("utf-8", errors="replace")

    async def write_text(self, path: Path, content: str) -> None:
        await anyio.to_thread.run_sync(write_text_exactly, path, content)

    async def delete_file(self, path: Path) -> None:
        await anyio.to_thread.run_sync(delete_exactly, path)

    def argv(self, command: str, confinement: Confinement | None) -> list[str]:
        """How the shell runs ``command`` when someone else starts it (an editor's terminal), inside the
        sandbox when it is confined."""
        argv = [self._shell, "-c", command]
        return confinement.wrap(argv) if confinement is not None else argv

    @contextlib.contextmanager
    def launch(self, command: str, confinement: Confinement | None) -> Iterator[Launch]:
        """How the shell runs ``command`` when this process starts it: spawn it inside the block. Confined,
        bubblewrap is started directly (``Confinement.launch``): nothing execs in front of it."""
        argv = [self._shell, "-c", command]
        if confinement is None:
            yield Launch(tuple(argv))
            return
        with confinement.launch(argv) as launch:
            yield launch

    def start_detached(
        self, command: str, cwd: Path, log_path: Path, confinement: Confinement | None = None, *,
        stdin: bool = False,
    ) -> subprocess.Popen[bytes]:
        """Start ``command`` in a process group of its own, under the launcher (on Linux): it and its
        group end when the agent does, even on ``kill -9``. Call it on the event loop's thread: the
        launcher's tie to the agent is to the thread that starts it (see ``launched``)."""
        with self.launch(command, confinement) as launch, open(log_path, "wb") as log_file:
            process = subprocess.Popen(
                launched(list(launch.argv)),
                env=launch.env,  # the launcher hands the program exactly this (see there)
                pass_fds=launch.pass_fds,
                cwd=cwd,
                stdin=subprocess.PIPE if stdin else subprocess.DEVNULL,
                stdout=log_file,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # its own process group: a cancelled turn does not reach it
            )
        if process.stdin is not None:  # written with os.write only (write_to_process): never blocks the agent
            os.set_blocking(process.stdin.fileno(), False)
        # Reap it when it exits so no zombie is left behind; the thread holds nothing else.
        threading.Thread(target=process.wait, name=f"detached-{process.pid}", daemon=True).start()
        self.last_command_started = time.time()  # files may now change on disk behind the editor's buffers
        return process

    async def run_command(self, request: CommandRequest, observer: CommandObserver) -> CommandOutcome:
        self.last_command_started = time.time()
        output = _BoundedOutput(request.output_limit)
        # Shielded: a cancel while it starts would kill the shell alone and leave what it already started
        # running; once it is open, the cancel arrives below and the whole group is stopped.
        with anyio.CancelScope(shield=True):
            with self.launch(request.command, request.confinement) as launch:
                process = await anyio.open_process(
                    launch.argv,
                    env=launch.env,
                    pass_fds=launch.pass_fds,
                    cwd=request.cwd,
                    stdin=subprocess.DEVNULL,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,
                )
        timed_out = False
        try:
            with anyio.move_on_after(request.timeout) as deadline:
                assert process.stdout is not None
                last_report = 0.0
                async for chunk in process.stdout:
                    output.add(chunk)
                    now = time.monotonic()
                    if now - last_report >= _REPORT_INTERVAL:
                        last_report = now
                        await observer.on_output(output.text())
                await process.wait()
            timed_out = deadline.cancelled_caught
        finally:
            if process.returncode is None:
                with anyio.CancelScope(shield=True):
                    await _kill_group(process)
        await observer.on_output(output.text())
        code = process.returncode
        signal_name = None
        if code is not None and code < 0:
            signal_name = signal.Signals(-code).name
            code = None
        return CommandOutcome(
            output=output.text(),
            exit_code=None if timed_out else code,
            signal=signal_name,
            timed_out=timed_out,
            truncated=output.truncated,
            sandboxed=request.confinement is not None,
        )


_REPORT_INTERVAL = 0.1


# -- background jobs: the process doors behind ToolContext.stop_job / write_job, and a session's end


def launched(argv: list[str]) -> list[str]:
    """``argv`` run under ``tools/launcher.py`` on Linux, so that it and its process group are killed when
    the thread that starts it ends (the event loop's: the agent's life, whatever ends it). The launcher
    leads the group and ends as ``argv`` does (its exit code or its signal). Unchanged elsewhere, and
    when its program is not found (starting it then fails as it would have)."""
    if not sys.platform.startswith("linux") or not sys.executable:
        return argv
    program = argv[0] if os.sep in argv[0] else shutil.which(argv[0])
    if program is None or not os.path.isfile(program):
        return argv
    return [sys.executable, "-I", "-S", str(LAUNCHER), str(os.getpid()), os.path.abspath(program), *argv]


def signal_group(group: int, sig: int) -> bool:
    """Send ``sig`` to process group ``group`` (0: only look); False once the group is gone."""
    try:
        os.killpg(group, sig)
    except (ProcessLookupError, PermissionError):  # gone (a PermissionError: the id is no longer ours)
        return False
    return True


_STOP_POLL_SECONDS = 0.05
_REAP_SECONDS = 5.0  # after SIGKILL: how long to wait for the leader's exit status


async def stop_group(process: subprocess.Popen[bytes], grace: float) -> None:
    """End a detached command and its process group: SIGTERM, then SIGKILL to whatever is left of the
    group after ``grace`` seconds; returns once its first process has ended (or after a few seconds
    more). Someone else must be reaping ``process`` (``start_detached`` starts a thread that does).

    What the command started outside its group (``tools.process_trees``: a daemon, bubblewrap's sandbox
    init) gets the same signals and is killed once the group has ended. A command whose first process
    has already ended is left alone: its group id may by now be someone else's (a finished group's id
    can be reused), so nothing is sent to it.
    """
    group = process.pid
    if process.poll() is not None:
        return
    held = HeldGroup(group)  # no await since the look: the id is still the leader's
    if not held.held:
        return
    try:
        await anyio.to_thread.run_sync(held.look)
        held.signal(signal.SIGTERM)
        with anyio.move_on_after(grace):
            while process.poll() is None or signal_group(group, 0):  # the leader, then what it left in the group
                await anyio.sleep(_STOP_POLL_SECONDS)
            return
        if held.signal(signal.SIGKILL):
            log.info("background command %d ignored SIGTERM: killed", group)
        with anyio.move_on_after(_REAP_SECONDS):
            while process.poll() is None:
                await anyio.sleep(_STOP_POLL_SECONDS)
    finally:
        held.finish()


async def write_to_process(process: subprocess.Popen[bytes], data: bytes, *, timeout: float) -> int:
    """Write ``data`` to the stdin pipe of a command started with ``stdin=True``, never blocking the event
    loop; the number of bytes written, fewer than ``len(data)`` when it did not take them all within
    ``timeout`` seconds. ``BrokenPipeError`` when nothing reads that pipe any more (it was closed, or ended)."""
    written = 0
    with anyio.move_on_after(timeout):
        while written < len(data):
            # Looked at again before each write, with no await in between: the pipe is closed only on the
            # event loop's thread (``close_process_input``), so its descriptor can never be someone else's.
            if process.stdin is None or process.stdin.closed:
                raise BrokenPipeError("the command's stdin is closed")
            try:
                written += os.write(process.stdin.fileno(), data[written:written + _WRITE_CHUNK])
            except BlockingIOError:  # the pipe is full: the command has not read what it was sent
                await anyio.sleep(_STOP_POLL_SECONDS)
    return written


_WRITE_CHUNK = 64 * 1024


def close_process_input(process: subprocess.Popen[bytes]) -> None:
    """Close the agent's end of the command's stdin pipe: it reads end of file once it has read the rest.
    Call it on the event loop's thread only (see ``write_to_process``)."""
    if process.stdin is not None and not process.stdin.closed:
        with contextlib.suppress(OSError):  # nothing buffered (writes go through os.write); a broken pipe is fine
            process.stdin.close()


async def _kill_group(process: anyio.abc.Process) -> None:
    """Stop the command and everything it started: TERM, then KILL if it lingers, to its process group and
    to what it started outside the group (``tools.process_trees``), which is killed once it has ended."""
    held = HeldGroup(process.pid)
    try:
        await anyio.to_thread.run_sync(held.look)
        for sig, grace in ((signal.SIGTERM, 2.0), (signal.SIGKILL, 5.0)):
            held.signal(sig)
            with anyio.move_on_after(grace):
                await process.wait()
                return
    finally:
        held.finish()


class _BoundedOutput:
    """Command output capped to a byte budget, keeping the head and the tail."""

    def __init__(self, limit: int) -> None:
        self._limit = max(limit, 1024)
        self._head = bytearray()
        self._tail = bytearray()
        self.truncated = False

    def add(self, chunk: bytes) -> None:
        room = self._limit // 2 - len(self._head)
        if room > 0:
            self._head += chunk[:room]
            chunk = chunk[room:]
        if chunk:
            self._tail += chunk
            excess = len(self._tail) - self._limit // 2
            if excess > 0:
                del self._tail[:excess]
                self.truncated = True

    def text(self) -> str:
        head = self._head.decode("utf-8", errors="replace")
        tail = self._tail.decode("utf-8", errors="replace")
        if self.truncated:
            return f"{head}\n[... output truncated ...]\n{tail}"
        return head + tail
