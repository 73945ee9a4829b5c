"""Deeper checks of the SessionDB for ``doctor``: SQLite's full integrity check and the search index.

``PRAGMA integrity_check`` reads every page and index; FTS5's own ``integrity-check`` compares
each search index with the messages it should hold (SQLite before 3.44 leaves FTS5 out of the
pragma). An index out of step with its messages is rebuilt from them by ``doctor --repair``.
"""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from acp_hermes_memory.session_schema import TRIGRAM_INDEX, WORD_INDEX

INDEX_ROLES = {WORD_INDEX: "word search", TRIGRAM_INDEX: "substring search (CJK)"}
_BUSY_SECONDS = 5.0


@dataclass(frozen=True, slots=True)
class IndexState:
    table: str
    state: str  # "ok", "missing", "unusable", "damaged" or "busy"
    detail: str = ""

    @property
    def role(self) -> str:
        return INDEX_ROLES[self.table]


def integrity(path: Path) -> str:
    """``"ok"``, or what SQLite found wrong (read-only; the first few problems)."""
    try:
        with contextlib.closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True)) as conn:
            rows = conn.execute("PRAGMA integrity_check(5)").fetchall()
    except sqlite3.DatabaseError as exc:
        return str(exc)
    problems = [str(row[0]) for row in rows if row[0] != "ok"]
    return "; ".join(problems) if problems else "ok"


def search_indexes(path: Path) -> list[IndexState]:
    """Each search index of the file checked against its messages (the check changes nothing)."""
    with _connection(path) as conn:
        tables = {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        return [_index_state(conn, table, tables) for table in INDEX_ROLES]


def rebuild(path: Path, table: str) -> None:
    """Rebuild one search index from the messages table (doctor --repair)."""
    if table not in INDEX_ROLES:
        raise ValueError(f"not a search index: {table}")
    with _connection(path) as conn:
        conn.execute(f"INSERT INTO {table}({table}) VALUES('rebuild')")


def _index_state(conn: sqlite3.Connection, table: str, tables: set[str]) -> IndexState:
    if table not in tables:
        return IndexState(table, "missing")
    conn.execute("BEGIN")
    try:
        conn.execute(f"INSERT INTO {table}({table}, rank) VALUES('integrity-check', 1)")
    except sqlite3.OperationalError as exc:
        busy = "locked" in str(exc) or "busy" in str(exc)
        return IndexState(table, "busy" if busy else "unusable", str(exc))
    except sqlite3.DatabaseError as exc:
        return IndexState(table, "damaged", str(exc))
    finally:
        with contextlib.suppress(sqlite3.Error):  # SQLite may have rolled back already
            conn.execute("ROLLBACK")
    return IndexState(table, "ok")


@contextlib.contextmanager
def _connection(path: Path) -> Iterator[sqlite3.Connection]:
    with contextlib.closing(sqlite3.connect(path, timeout=_BUSY_SECONDS, isolation_level=None)) as conn:
        yield conn
