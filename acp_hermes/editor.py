"""Editor bridge: file and shell I/O for tools.

Interface first (``Editor``), then the local implementation. The ACP client bridge, which
routes reads and writes through the editor's buffers and commands through its terminals,
extends the local one so every capability the client lacks falls back to disk/subprocess.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import anyio
import anyio.abc

from acp_hermes.atomic import atomic_write_text

log = logging.getLogger(__name__)


class CommandObserver(Protocol):
    """Told about a running command so the tool call can show it live."""

    async def on_terminal(self, terminal_id: str) -> None:
        """The command runs in the client's terminal ``terminal_id``."""
        ...

    async def on_output(self, output: str) -> None:
        """The whole output so far (local runs only)."""
        ...


@dataclass(frozen=True, slots=True)
class CommandRequest:
    command: str
    cwd: Path
    timeout: float
    output_limit: int = 256 * 1024


@dataclass(frozen=True, slots=True)
class CommandOutcome:
    output: str
    exit_code: int | None
    signal: str | None = None
    timed_out: bool = False
    truncated: bool = False
    terminal_id: str | None = None


class Editor(Protocol):
    """File and command I/O as a tool sees it. Paths are absolute and already checked."""

    async def read_text(self, path: Path) -> str:
        """Current text of ``path`` (an editor's unsaved buffer when there is one)."""
        ...

    async def write_text(self, path: Path, content: str) -> None:
        """Replace the whole text of ``path``, creating parent directories."""
        ...

    async def run_command(self, request: CommandRequest, observer: CommandObserver) -> CommandOutcome:
        """Run a shell command to completion, timeout or cancellation (which kills it)."""
        ...


class LocalEditor:
    """Disk and subprocess I/O, used when the client offers neither fs nor terminals."""

    def __init__(self, shell: str | None = None) -> None:
        self._shell = shell or os.environ.get("SHELL") or "/bin/sh"
        if not os.path.exists(self._shell):
            self._shell = "/bin/sh"
        self.last_command_started: float | None = None

    async def read_text(self, path: Path) -> str:
        data = await anyio.Path(path).read_bytes()
        return data.decode("utf-8", errors="replace")

    async def write_text(self, path: Path, content: str) -> None:
        await anyio.to_thread.run_sync(atomic_write_text, path, content)

    async def run_command(self, request: CommandRequest, observer: CommandObserver) -> CommandOutcome:
        self.last_command_started = time.time()
        output = _BoundedOutput(request.output_limit)
        process = await anyio.open_process(
            [self._shell, "-c", request.command],
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
        )


_REPORT_INTERVAL = 0.1


async def _kill_group(process: anyio.abc.Process) -> None:
    """Stop the command and everything it started: TERM, then KILL if it lingers."""
    for sig, grace in ((signal.SIGTERM, 2.0), (signal.SIGKILL, 5.0)):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, sig)
        with anyio.move_on_after(grace):
            await process.wait()
            return


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


class Requester(Protocol):
    """Sends a JSON-RPC request to the client and returns its result."""

    async def request(self, method: str, params: dict[str, Any]) -> Any: ...


@dataclass(frozen=True, slots=True)
class ClientAbilities:
    """What the client said it can do in ``initialize``."""

    read_files: bool = False
    write_files: bool = False
    terminals: bool = False


class ClientEditor(LocalEditor):
    """Routes I/O through the ACP client where it offers to, else falls back to local.

    Reads through ``fs/read_text_file`` see unsaved buffers; writes through
    ``fs/write_text_file`` land in the editor's buffers and review UI; commands run in the
    client's terminals. One catch: after our own shell command changes a file on disk, the
    editor's buffer may still hold the old text. So a file is read from disk when a command
    started after we last saw it through the editor and the file changed on disk since.
    """

    def __init__(self, client: Requester, session_id: str, abilities: ClientAbilities) -> None:
        super().__init__()
        self._client = client
        self._session_id = session_id
        self.abilities = abilities
        self._seen: dict[Path, float] = {}  # when we last read or wrote the file via the editor

    def _changed_by_command(self, path: Path) -> bool:
        started = self.last_command_started
        if started is None or self._seen.get(path, float("-inf")) > started:
            return False
        try:
            return path.stat().st_mtime >= started - _MTIME_SLACK
        except OSError:
            return False

    async def read_text(self, path: Path) -> str:
        if not self.abilities.read_files or self._changed_by_command(path):
            return await super().read_text(path)
        try:
            result = await self._client.request(
                "fs/read_text_file", {"sessionId": self._session_id, "path": str(path)}
            )
        except Exception as exc:
            if not path.exists():
                raise FileNotFoundError(2, "No such file", str(path)) from exc
            log.warning("fs/read_text_file failed for %s (%s); reading from disk", path, exc)
            return await super().read_text(path)
        self._seen[path] = time.time()
        return str((result or {}).get("content", ""))

    async def write_text(self, path: Path, content: str) -> None:
        if not self.abilities.write_files:
            await super().write_text(path, content)
            return
        path.parent.mkdir(parents=True, exist_ok=True)
        await self._client.request(
            "fs/write_text_file", {"sessionId": self._session_id, "path": str(path), "content": content}
        )
        self._seen[path] = time.time()

    async def run_command(self, request: CommandRequest, observer: CommandObserver) -> CommandOutcome:
        if not self.abilities.terminals:
            return await super().run_command(request, observer)
        self.last_command_started = time.time()
        created = await self._client.request(
            "terminal/create",
            {
                "sessionId": self._session_id,
                "command": self._shell,
                "args": ["-c", request.command],
                "cwd": str(request.cwd),
                "outputByteLimit": request.output_limit,
            },
        )
        terminal = {"sessionId": self._session_id, "terminalId": created["terminalId"]}
        await observer.on_terminal(created["terminalId"])
        timed_out = False
        try:
            with anyio.move_on_after(request.timeout) as deadline:
                exit_status = await self._client.request("terminal/wait_for_exit", terminal)
            if deadline.cancelled_caught:
                timed_out = True
                await self._client.request("terminal/kill", terminal)
            output = await self._client.request("terminal/output", terminal)
        except BaseException:
            with anyio.CancelScope(shield=True), anyio.move_on_after(5):
                await self._client.request("terminal/kill", terminal)
            raise
        finally:
            with anyio.CancelScope(shield=True), anyio.move_on_after(5):
                try:
                    await self._client.request("terminal/release", terminal)
                except Exception as exc:
                    log.debug("terminal/release failed: %s", exc)
        status = output.get("exitStatus") or (exit_status if not timed_out else None) or {}
        return CommandOutcome(
            output=output.get("output", ""),
            exit_code=None if timed_out else status.get("exitCode"),
            signal=status.get("signal"),
            timed_out=timed_out,
            truncated=bool(output.get("truncated")),
            terminal_id=created["terminalId"],
        )


_MTIME_SLACK = 1.0
