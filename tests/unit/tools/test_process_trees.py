"""Ending a command ends what it started outside its process group too (``tools.process_trees``).

The shape that used to escape is bubblewrap's, reproduced without it: the command's first process
forks a child that moves to a session of its own (``setsid``) and would only end with its parent if
it had asked the kernel in time — here it never does, as bubblewrap's sandbox init does not when its
parent is killed while it starts. A group signal misses it; the held group does not. Real processes,
found in /proc; a process reports that it got somewhere through a FIFO, never a sleep.
"""

from __future__ import annotations

import os
import shlex
import signal
import subprocess
import sys
from pathlib import Path

import anyio
import anyio.to_thread
import pytest

from acp_hermes_tools.contracts import CommandRequest
from acp_hermes_tools.local_io import LocalEditor, stop_group
from acp_hermes_tools.process_trees import HeldGroup, ProcessEntry, descendants, processes
from acp_hermes_tools.terminal import BackgroundJob, BackgroundJobs
from tests.unit.tools.test_process_tool import WAIT_LIMIT, Ready, gone, until_gone

pytestmark = [pytest.mark.anyio, pytest.mark.skipif(not sys.platform.startswith("linux"), reason="needs /proc")]

# The first process forks an escaper (own session, the FIFO told its pid), then waits for ever.
ESCAPING = """
import os, sys, time
child = os.fork()
if child == 0:
    os.setsid()
    with open(sys.argv[1], "w") as ready:
        ready.write(f"{os.getpid()}\\n")
    time.sleep(300)
    os._exit(0)
time.sleep(300)
"""


def escaping_command(ready: Ready) -> str:
    return f"exec {shlex.quote(sys.executable)} -c {shlex.quote(ESCAPING)} {shlex.quote(str(ready.path))}"


async def escaper(ready: Ready) -> int:
    """The escaped process's pid, once it runs in its own session."""
    with anyio.fail_after(WAIT_LIMIT):
        text = await anyio.to_thread.run_sync(ready.path.read_text, abandon_on_cancel=True)
    pid = int(text)
    assert os.getsid(pid) == pid
    return pid


class Quiet:
    async def on_terminal(self, terminal_id: str) -> None: ...

    async def on_output(self, output: str) -> None: ...


async def test_a_cancelled_command_ends_what_it_started_outside_its_group(tmp_path: Path) -> None:
    ready = Ready(tmp_path)
    editor = LocalEditor(shell="/bin/sh")
    escaped: list[int] = []

    async def run() -> None:
        await editor.run_command(CommandRequest(escaping_command(ready), tmp_path, 300), Quiet())

    async with anyio.create_task_group() as group:
        group.start_soon(run)
        escaped.append(await escaper(ready))
        group.cancel_scope.cancel()  # the turn's cancel, or the editor gone
    await until_gone(escaped[0])


async def test_stopping_a_job_ends_what_it_started_outside_its_group(tmp_path: Path) -> None:
    ready = Ready(tmp_path)
    process = subprocess.Popen(["/bin/sh", "-c", escaping_command(ready)], start_new_session=True)
    try:
        pid = await escaper(ready)
        await stop_group(process, 2.0)
        assert process.poll() == -signal.SIGTERM
        await until_gone(pid)
    finally:
        process.kill()
        process.wait()


async def test_closing_a_session_ends_what_its_jobs_started_outside_their_groups(tmp_path: Path) -> None:
    ready = Ready(tmp_path)
    jobs = BackgroundJobs()
    log_path = jobs.log_directory("s") / "job-1.log"
    process = subprocess.Popen(["/bin/sh", "-c", escaping_command(ready)], start_new_session=True)
    jobs.add(BackgroundJob(process.pid, "escaping", tmp_path, log_path, 0.0, process, job_id="job-1", session_id="s"))
    pid = await escaper(ready)
    jobs.close()
    await until_gone(pid)
    await until_gone(process.pid)


async def test_a_noted_process_is_signalled_only_while_its_pid_is_still_it(tmp_path: Path) -> None:
    process = subprocess.Popen(["sleep", "300"], start_new_session=True)
    try:
        noted = processes()[process.pid]
        held = HeldGroup(process.pid)
        held.tree = [ProcessEntry(noted.pid, noted.ppid, noted.group, noted.state, noted.start + 1)]  # a later one
        held.finish()
        assert process.poll() is None and not gone(process.pid)  # a different start time: left alone
        held.tree = [noted]
        held.finish()
        assert process.wait(timeout=WAIT_LIMIT) == -signal.SIGKILL
    finally:
        process.kill()
        process.wait()


def test_descendants_are_found_below_a_process_whatever_their_group() -> None:
    table = {pid: ProcessEntry(pid, ppid, group, "S", 1) for pid, ppid, group in
             [(10, 1, 10), (11, 10, 10), (12, 11, 12), (13, 12, 12), (20, 1, 20), (21, 20, 20)]}
    assert sorted(entry.pid for entry in descendants(10, table)) == [11, 12, 13]
    assert descendants(13, table) == []
