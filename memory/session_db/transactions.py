"""How every write to state.db runs: one BEGIN IMMEDIATE transaction, retried only when another
connection holds the lock."""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def run_in_transaction(conn: sqlite3.Connection, work: Callable[[sqlite3.Connection], T]) -> T:
    """Run ``work`` in one BEGIN IMMEDIATE transaction on ``conn``; roll back on any error."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        result = work(conn)
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            with contextlib.suppress(sqlite3.Error):
                conn.execute("ROLLBACK")
        raise
    return result


def is_contention(exc: sqlite3.OperationalError) -> bool:
    """Whether another connection holds the lock: worth waiting for, unlike every other failure."""
    message = str(exc).lower()
    return "locked" in message or "busy" in message
