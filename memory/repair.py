"""Checking a SessionDB file, and starting afresh from a damaged one with what can still be read.

Repair never deletes: the damaged file (with its -wal and -shm) is moved aside under a name that
says when, a fresh database takes its place, and every session and message row SQLite can still
read is copied into it, a page's worth at a time and then row by row where a range fails. Messages
whose session row was lost are kept under a placeholder session, so their text stays searchable.

The report counts rows, never probes: what was copied, and what is known to have existed but could
not be read. What existed is read from the old file's indexes, which live on pages of their own and
usually survive damage to a table's pages: every message id the session index or a search index
lists, every session id a session index or a message names. A session's message and tool-call
counters are counted again from the messages recovered.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sqlite3
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from acp_hermes_memory.session_db import SessionDB, is_corruption

log = logging.getLogger(__name__)

_CHUNK = 500
_SIDE_FILES = ("", "-wal", "-shm")

Rows = list[tuple[Any, ...]]


@dataclass(frozen=True, slots=True)
class RepairReport:
    damaged_copy: Path  # where the old file now is
    sessions: int  # session rows in the new database (placeholders included)
    messages: int  # message rows copied
    lost_sessions: int  # sessions known to have existed (by their ids) that could not be recovered
    lost_messages: int  # messages known to have existed (by their ids) that could not be read
    placeholder_sessions: int  # sessions whose own row was lost, rebuilt to hold their surviving messages
    counted: bool  # whether an index of the old file could be read, so the losses are known

    @property
    def unreadable_rows(self) -> int:
        return self.lost_sessions + self.lost_messages


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
        known_sessions, known_messages, counted = _known_ids(old)
        _copy_table(old, new, "sessions", _highest(old, "sessions", known_sessions.values()))
        placeholders = _add_placeholder_sessions(old, new, known_messages)
        _copy_table(old, new, "messages", _highest(old, "messages", known_messages))
        _recount(new, placeholders)
        sessions = {str(row[0]) for row in new.execute("SELECT id FROM sessions")}
        messages = {int(row[0]) for row in new.execute("SELECT id FROM messages")}
    return RepairReport(
        damaged_copy=kept,
        sessions=len(sessions),
        messages=len(messages),
        lost_sessions=len(set(known_sessions) - sessions),
        lost_messages=len(set(known_messages) - messages),
        placeholder_sessions=len(placeholders),
        counted=counted,
    )


def _known_ids(old: sqlite3.Connection) -> tuple[dict[str, int], dict[int, str | None], bool]:
    """Session ids (with their rowid where known: 0 if not) and message ids (with their session)
    the old file's indexes list, read from the index pages only; and whether any index could be read."""
    sessions: dict[str, int] = {}
    messages: dict[int, str | None] = {}
    counted = False
    for index in ("idx_sessions_recent", "idx_sessions_cwd_recent"):
        found = _all_rows(old, f"SELECT id, rowid FROM sessions INDEXED BY {index}")
        if found is not None:
            sessions.update((str(row[0]), int(row[1])) for row in found)
            counted = True
    found = _all_rows(old, "SELECT rowid, session_id FROM messages INDEXED BY idx_messages_session")
    if found is not None:
        messages.update((int(row[0]), str(row[1])) for row in found)
        for row in found:
            sessions.setdefault(str(row[1]), 0)
        counted = True
    for table in ("messages_fts_docsize", "messages_fts_trigram_docsize"):  # the search indexes' documents
        found = _all_rows(old, f"SELECT id FROM {table}")
        if found is not None:
            for row in found:
                messages.setdefault(int(row[0]), None)
    return sessions, messages, counted


def _all_rows(old: sqlite3.Connection, select: str) -> Rows | None:
    try:
        return old.execute(select).fetchall()
    except sqlite3.DatabaseError:  # damaged, or not in this file
        return None


def _highest(old: sqlite3.Connection, table: str, known: Iterable[int]) -> int | None:
    """The highest rowid ``table`` may hold: its B-tree's last row, else what the indexes and the
    AUTOINCREMENT counter say (None when nothing says)."""
    guesses = [max(known, default=0)]
    for select in (f"SELECT max(rowid) FROM {table}", f"SELECT seq FROM sqlite_sequence WHERE name = '{table}'"):
        found = _all_rows(old, select)
        if found and found[0][0] is not None:
            guesses.append(int(found[0][0]))
    highest = max(guesses)
    return highest or None


def _columns(old: sqlite3.Connection, new: sqlite3.Connection, table: str) -> list[str]:
    try:
        present = [row[1] for row in old.execute(f"PRAGMA table_info({table})")]
    except sqlite3.DatabaseError:
        return []
    wanted = {row[1] for row in new.execute(f"PRAGMA table_info({table})")}
    return [name for name in present if name in wanted]


def _copy_table(old: sqlite3.Connection, new: sqlite3.Connection, table: str, highest: int | None) -> None:
    """Every readable row of ``table`` into the new file (a row the new schema refuses is left out)."""
    columns = _columns(old, new, table)
    if not columns:
        return
    listed = ", ".join(columns)
    insert = f"INSERT OR IGNORE INTO {table} ({listed}) VALUES ({', '.join('?' * len(columns))})"
    for rows in _readable_rows(old, f"SELECT rowid, {listed} FROM {table}", highest):
        new.execute("BEGIN")
        for row in rows:
            with contextlib.suppress(sqlite3.IntegrityError):
                new.execute(insert, row[1:])
        new.execute("COMMIT")


def _readable_rows(old: sqlite3.Connection, select: str, highest: int | None) -> Iterator[Rows]:
    """Rows a chunk at a time, in rowid order, stepping over damaged ranges."""
    if highest is None:
        highest = _CHUNK * 1000  # nothing says where the rows end: walk as far as they might plausibly go
    start = 0
    while start <= highest:
        end = start + _CHUNK
        try:
            yield old.execute(f"{select} WHERE rowid > ? AND rowid <= ? ORDER BY rowid", (start, end)).fetchall()
        except sqlite3.DatabaseError as exc:
            if not is_corruption(exc):
                raise
            yield _row_by_row(old, select, start, end)
        start = end


def _row_by_row(old: sqlite3.Connection, select: str, start: int, end: int) -> Rows:
    rows: Rows = []
    for rowid in range(start + 1, end + 1):
        with contextlib.suppress(sqlite3.DatabaseError):  # on a damaged page: among the losses the indexes count
            rows.extend(old.execute(f"{select} WHERE rowid = ?", (rowid,)).fetchall())
    return rows


def _add_placeholder_sessions(old: sqlite3.Connection, new: sqlite3.Connection,
                              known_messages: dict[int, str | None]) -> set[str]:
    """A session row for every session id that readable messages name but whose own row was lost."""
    if "session_id" not in _columns(old, new, "messages"):  # the schema itself is unreadable
        return set()
    known = {row[0] for row in new.execute("SELECT id FROM sessions")}
    orphans: set[str] = set()
    highest = _highest(old, "messages", known_messages)
    for rows in _readable_rows(old, "SELECT rowid, session_id FROM messages", highest):
        orphans.update(str(row[1]) for row in rows if row[1] not in known)
    now = time.time()
    for session_id in sorted(orphans):
        new.execute(
            "INSERT INTO sessions (id, started_at, updated_at, title) VALUES (?, ?, ?, ?)",
            (session_id, now, now, "(recovered messages)"),
        )
    return orphans


def _recount(new: sqlite3.Connection, placeholders: set[str]) -> None:
    """Each session's counters from the messages it now has; a placeholder's times from its messages."""
    new.execute("BEGIN")
    new.execute(
        "UPDATE sessions SET (message_count, tool_call_count) = "
        "(SELECT count(*), coalesce(sum(json_array_length(tool_calls)), 0) FROM messages "
        " WHERE messages.session_id = sessions.id)"
    )
    for session_id in placeholders:
        new.execute(
            "UPDATE sessions SET (started_at, updated_at) = (SELECT min(timestamp), max(timestamp) FROM messages "
            "WHERE session_id = ?) WHERE id = ?",
            (session_id, session_id),
        )
    new.execute("COMMIT")
