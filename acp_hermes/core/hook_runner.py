"""Running hooks: the user's own programs, with the user's environment, in the workspace, outside the
command sandbox, each under its timeout, several at once, never on the event loop's thread.

A hook is a shell command line (as Claude Code runs it), given the event as JSON on stdin. Whatever it
does — hang, crash, print megabytes, leave children behind — the turn goes on: a hook that outlives its
timeout is killed with its whole process group, and its run says so.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import signal
import subprocess
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import anyio
from anyio.abc import ByteReceiveStream

from acp_hermes.core.hook_config import Hook
from acp_hermes_memory.values import value

log = logging.getLogger(__name__)

OUTPUT_LIMIT = 256 * 1024  # what is kept of a hook's stdout and of its stderr


@value
class HookRun:
    """What one run of a hook did: its exit status (None: it never ended by itself), its output, its time."""

    hook: Hook
    exit_code: int | None
    stdout: str
    stderr: str
    seconds: float
    timed_out: bool = False
    start_failure: str | None = None  # why it could not start


async def run_hooks(hooks: Sequence[Hook], payload: Mapping[str, Any], cwd: Path) -> list[HookRun]:
    """Run ``hooks`` at once on ``payload``; their runs in the order given."""
    runs: list[HookRun | None] = [None] * len(hooks)
    data = json.dumps(payload, ensure_ascii=False, default=str).encode("utf-8")

    async def one(index: int, hook: Hook) -> None:
        runs[index] = await run_hook(hook, data, cwd)

    if len(hooks) == 1:
        await one(0, hooks[0])
    else:
        async with anyio.create_task_group() as group:
            for index, hook in enumerate(hooks):
                group.start_soon(one, index, hook)
    return [run for run in runs if run is not None]


async def run_hook(hook: Hook, stdin: bytes, cwd: Path) -> HookRun:
    """One run of ``hook`` with ``stdin``; never raises for what the hook does."""
    began = time.perf_counter()
    env = {**os.environ, "CLAUDE_PROJECT_DIR": str(cwd), "HERMES_PROJECT_DIR": str(cwd)}
    try:
        process = await anyio.open_process(hook.command, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                           stderr=subprocess.PIPE, cwd=cwd, env=env, start_new_session=True)
    except OSError as error:
        return HookRun(hook, None, "", "", time.perf_counter() - began, start_failure=str(error))
    out: list[bytes] = []
    err: list[bytes] = []
    timed_out = True
    try:
        with anyio.move_on_after(hook.timeout):
            async with anyio.create_task_group() as group:
                group.start_soon(_feed, process.stdin, stdin)
                if process.stdout is not None:
                    group.start_soon(_collect, process.stdout, out)
                if process.stderr is not None:
                    group.start_soon(_collect, process.stderr, err)
                await process.wait()
            timed_out = False
    finally:
        if timed_out or process.returncode is None:  # a timeout or a cancel: the hook and its children go
            _kill_group(process.pid)
            with anyio.CancelScope(shield=True):
                await process.wait()
                await process.aclose()
        else:
            await process.aclose()
    seconds = time.perf_counter() - began
    return HookRun(hook, None if timed_out else process.returncode, _text(out), _text(err), seconds,
                   timed_out=timed_out)


async def _feed(stream: Any, data: bytes) -> None:
    """Write the event to the hook's stdin and close it; a hook that never reads it is no failure."""
    if stream is None:
        return
    try:
        await stream.send(data)
    except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
        pass
    finally:
        await stream.aclose()


async def _collect(stream: ByteReceiveStream, into: list[bytes]) -> None:
    kept = 0
    try:
        async for chunk in stream:
            if kept < OUTPUT_LIMIT:
                into.append(chunk[: OUTPUT_LIMIT - kept])
                kept += len(chunk)
    except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
        pass


def _text(chunks: list[bytes]) -> str:
    return b"".join(chunks).decode("utf-8", errors="replace")


def _kill_group(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)
