"""Slow work begun on a thread of its own, its outcome awaited later (the bottom layer: every layer
uses it).

Start-up begins what it will need soon — opening state.db, trying the OS sandbox, the model client's
TLS context — on threads, so the requests that come meanwhile are answered; whoever needs the
result waits on the future then, and gets what the work raised if it failed.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import Future
from typing import TypeVar

T = TypeVar("T")


def on_thread(name: str, work: Callable[[], T]) -> Future[T]:
    """``work()`` run on a daemon thread called ``name`` (it cannot keep the process from exiting);
    its result, or what it raised, in the future returned."""
    outcome: Future[T] = Future()

    def run() -> None:
        outcome.set_running_or_notify_cancel()
        try:
            outcome.set_result(work())
        except BaseException as exc:  # handed to whoever waits for it
            outcome.set_exception(exc)

    threading.Thread(target=run, name=name, daemon=True).start()
    return outcome
