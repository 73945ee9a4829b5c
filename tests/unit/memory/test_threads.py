"""``memory.threads.on_thread``: slow work on a daemon thread of its own, its outcome in a future."""

from __future__ import annotations

import threading

import pytest

from acp_hermes_memory.threads import on_thread


def test_the_result_comes_from_a_named_daemon_thread() -> None:
    seen: list[threading.Thread] = []

    def work() -> int:
        seen.append(threading.current_thread())
        return 42

    assert on_thread("slow work", work).result(timeout=30) == 42
    (thread,) = seen
    assert thread is not threading.main_thread() and thread.name == "slow work" and thread.daemon


def test_what_the_work_raised_is_handed_to_whoever_waits() -> None:
    def work() -> None:
        raise SystemExit("even this")

    with pytest.raises(SystemExit, match="even this"):
        on_thread("failing work", work).result(timeout=30)
