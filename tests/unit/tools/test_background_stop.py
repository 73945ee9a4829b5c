"""Background commands end with their session: ``ToolState.close`` and ``BackgroundJobs.close``."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from acp_hermes_tools import terminal
from acp_hermes_tools.context import StateKey, ToolState
from acp_hermes_tools.terminal import BACKGROUND_JOBS, BackgroundJob, BackgroundJobs


def started(jobs: BackgroundJobs, argv: list[str], session_id: str = "s") -> BackgroundJob:
    job_id = jobs.new_id()
    log_path = jobs.log_directory(session_id) / f"{job_id}.log"
    with open(log_path, "wb") as log_file:
        process = subprocess.Popen(argv, stdout=log_file, stderr=subprocess.STDOUT, start_new_session=True)
    job = BackgroundJob(process.pid, " ".join(argv), Path.cwd(), log_path, time.time(), process, job_id=job_id,
                        session_id=session_id)
    jobs.add(job)
    return job


def wait_until(condition: Any, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.02)


def test_closing_ends_the_process_group_even_one_that_ignores_sigterm_and_removes_the_logs(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(terminal, "STOP_GRACE_SECONDS", 0.3)
    jobs = BackgroundJobs()
    polite = started(jobs, ["sleep", "60"])
    stubborn = started(jobs, [sys.executable, "-c",
                              "import signal, sys, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); "
                              "print('ready', flush=True); time.sleep(60)"])
    wait_until(lambda: b"ready" in stubborn.log_path.read_bytes())
    directory = polite.log_path.parent
    jobs.close()
    assert polite.process.wait(timeout=10) == -signal.SIGTERM
    assert stubborn.process.wait(timeout=10) == -signal.SIGKILL
    wait_until(lambda: not directory.exists())
    assert jobs.jobs == []
    jobs.close()  # twice: nothing left to do


def test_a_job_that_already_ended_is_not_signalled(monkeypatch: pytest.MonkeyPatch) -> None:
    jobs = BackgroundJobs()
    done = started(jobs, ["true"])
    done.process.wait(timeout=10)
    sent: list[tuple[int, int]] = []
    monkeypatch.setattr(os, "killpg", lambda group, sig: sent.append((group, sig)))
    directory = done.log_path.parent
    jobs.close()
    wait_until(lambda: not directory.exists())
    assert [group for group, _ in sent if group == done.pid] == []  # its group id may be someone else's by now


def test_tool_state_closes_the_slots_in_use_and_one_failure_does_not_stop_the_rest() -> None:
    closed: list[str] = []

    def broken(value: list[str]) -> None:
        raise RuntimeError("boom")

    first = StateKey("first", list, close=broken)
    second = StateKey("second", lambda: ["x"], close=lambda value: closed.extend(value))
    unused = StateKey("unused", list, close=lambda value: closed.append("unused"))
    plain = StateKey("plain", list)
    state = ToolState()
    state.get(first)
    state.get(second)
    state.get(plain)
    state.close()
    assert closed == ["x"] and unused not in state
    assert BACKGROUND_JOBS.close is not None
