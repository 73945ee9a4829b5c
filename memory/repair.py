"""Checking a SessionDB file, and starting afresh from a damaged one with what can still be read.

Repair never deletes: the damaged file (with its -wal and -shm) is moved aside under a name that
says when, a fresh database takes its place, and every session and message row SQLite can still
read is copied into it, a page's worth at a time and then row by row where a range fails. Messages
whose session row was lost are kept under a placeholder session, so their text stays searchable.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sqlite3
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from acp_hermes_memory.session_db import SessionDB, is_corruption

log = logging.getLogger(__name__)

_CHUNK = 500
_SIDE_FILES = ("", "-wal", "-shm")

Rows = list[tuple[object, ...]]


@dataclass(frozen=True, slots=True)
class RepairReport:
    damaged_copy: Path  # where the old file now is
    sessions: int  # rows copied
    messages: int
    unreadable_rows: int  # rows (or ranges counted as one) that could not be read


def repair(path: Path) -> RepairReport:
    """Move ``path`` aside and build a fresh database there from its readable rows."""
    stamp = time.strftime("%Y%m%d-%H%M%S")
    kept = path.with_name(f"{path.name}.damaged-{stamp}")
    for suffix in _SIDE_FILES:
        source = Path(f"{path}{suffix}")
        if source.exists():
            os.replace(source, Path(f"{kept}{suffix}"))
    SessionDB(path).close()  # the current schema, empty
    log.warning("moved the damaged session database to %s; recovering its rows into %s", kept, path)
    with contextlib.closing(sqlite3.connect(f"file:{kept}?mode=ro", uri=True)) as old, \
            contextlib.closing(sqlite3.connect(path, isolation_level=None)) as new:
        new.execute("PRAGMA foreign_keys=ON")
        copied_sessions, lost_sessions = _copy_table(old, new, "sessions")
        _add_placeholder_sessions(old, new)
        copied_messages, lost_messages = _copy_table(old, new, "messages")
    return RepairReport(kept, copied_sessions, copied_messages, lost_sessions + lost_messages)


def _columns(old: sqlite3.Connection, new: sqlite3.Connection, table: str) -> list[str]:
    try:
        present = [row[1] for row in old.execute(f"PRAGMA table_info({table})")]
    except sqlite3.DatabaseError:
        return []
    wanted = {row[1] for row in new.execute(f"PRAGMA table_info({table})")}
    return [name for name in present if name in wanted]


def _copy_table(old: sqlite3.Connection, new: sqlite3.Connection, table: str) -> tuple[int, int]:
    columns = _columns(old, new, table)
    if not columns:
        return 0, 0
    listed = ", ".join(columns)
    insert = f"INSERT OR IGNORE INTO {table} ({listed}) VALUES ({', '.join('?' * len(columns))})"
    copied = lost = 0
    for rows, failed in _readable_rows(old, f"SELECT rowid, {listed} FROM {table}"):
        lost += failed
        new.execute("BEGIN")
        for row in rows:
            try:
                new.execute(insert, row[1:])
                copied += 1
            except sqlite3.IntegrityError:
                lost += 1
        new.execute("COMMIT")
    return copied, lost


def _readable_rows(old: sqlite3.Connection, select: str) -> Iterator[tuple[Rows, int]]:
    """(rows, unreadable count) a chunk at a time, in rowid order, stepping over damaged ranges."""
    try:
        highest = old.execute(f"SELECT max(rowid) FROM ({select})").fetchone()[0] or 0
    except sqlite3.DatabaseError:
        highest = _CHUNK * 1000  # the index is damaged: walk as far as rows might plausibly go
    start = 0
    while start <= highest:
        end = start + _CHUNK
        try:
            rows = old.execute(f"{select} WHERE rowid > ? AND rowid <= ? ORDER BY rowid", (start, end)).fetchall()
            yield rows, 0
        except sqlite3.DatabaseError as exc:
            if not is_corruption(exc):
                raise
            yield from _row_by_row(old, select, start, end)
        start = end


def _row_by_row(old: sqlite3.Connection, select: str, start: int, end: int) -> Iterator[tuple[Rows, int]]:
    rows: Rows = []
    failed = 0
    for rowid in range(start + 1, end + 1):
        try:
            rows.extend(old.execute(f"{select} WHERE rowid = ?", (rowid,)).fetchall())
        except sqlite3.DatabaseError:
            failed += 1
    yield rows, failed


def _add_placeholder_sessions(old: sqlite3.Connection, new: sqlite3.Connection) -> None:
    """A session row for every session id that messages name but whose own row was lost."""
    known = {row[0] for row in new.execute("SELECT id FROM sessions")}
    orphans: set[str] = set()
    for rows, _ in _readable_rows(old, "SELECT rowid, session_id FROM messages"):
        orphans.update(str(row[1]) for row in rows if row[1] not in known)
    now = time.time()
    for session_id in sorted(orphans):
        new.execute(
            "INSERT INTO sessions (id, started_at, updated_at, title) VALUES (?, ?, ?, ?)",
            (session_id, now, now, "(recovered messages)"),
        )
