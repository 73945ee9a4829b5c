"""The launcher background commands run under (``tools/launcher.py``, through ``local_io.launched``).

It ends as its program ended, so a job's status is the program's; and the program's whole process
group dies when the thread that started the launcher ends — the agent's event loop in real use, a
short-lived thread here, which the kernel treats the same way as the agent killed with ``kill -9``.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from acp_hermes_tools.local_io import LAUNCHER, LocalEditor, launched
from acp_hermes_tools.process_trees import processes
from tests.unit.tools.test_process_tool import WAIT_LIMIT, Ready, gone

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the launcher is Linux's")


@pytest.mark.parametrize(("script", "status"), [("exit 3", 3), ("kill -TERM $$", -signal.SIGTERM),
                                                 ("kill -KILL $$", -signal.SIGKILL), ("true", 0)])
def test_the_launcher_ends_as_its_program_ended(script: str, status: int) -> None:
    argv = launched(["/bin/sh", "-c", script])
    assert argv[:4] == [sys.executable, "-I", "-S", str(LAUNCHER)]
    assert subprocess.run(argv, check=False).returncode == status


def test_a_program_that_is_not_there_is_left_for_popen_to_refuse() -> None:
    assert launched(["no-such-program-here", "x"]) == ["no-such-program-here", "x"]
    with pytest.raises(FileNotFoundError):
        subprocess.run(launched(["no-such-program-here"]), check=False)


def test_a_detached_command_and_its_group_end_when_the_thread_that_started_it_ends(tmp_path: Path) -> None:
    ready = Ready(tmp_path)
    started: list[subprocess.Popen[bytes]] = []
    command = f"sleep 300 & echo $! > {tmp_path}/child.pid; {ready.signal}; wait"

    def start() -> None:  # ends once the command runs: as the agent's loop thread does when it is killed
        started.append(LocalEditor(shell="/bin/sh").start_detached(command, tmp_path, tmp_path / "log"))
        assert ready.path.read_text() == "ready\n"

    thread = threading.Thread(target=start)
    thread.start()
    thread.join(WAIT_LIMIT)
    (process,) = started
    try:
        child = int((tmp_path / "child.pid").read_text())
        assert process.wait(timeout=WAIT_LIMIT) == -signal.SIGKILL  # the launcher ends its group, and itself too
        deadline = time.monotonic() + WAIT_LIMIT  # a killed process takes a moment to be gone from /proc
        while not gone(child):
            assert time.monotonic() < deadline, f"{child} still runs"
            time.sleep(0.01)
        left = [entry for entry in processes().values() if entry.group == process.pid and entry.state not in "ZX"]
        assert left == []  # nothing of the group runs (what is left is exit statuses for their parents to collect)
    finally:
        if process.poll() is None:  # the launcher did not end its group: the test failed, and leaves nothing running
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(process.pid, signal.SIGKILL)
            process.wait()
