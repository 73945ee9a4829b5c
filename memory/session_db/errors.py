"""What goes wrong in a SessionDB, and which SQLite errors mean what."""

from __future__ import annotations

import sqlite3
from pathlib import Path


class SessionDBError(Exception):
    """Base of the errors SessionDB raises on its own (SQLite errors pass through unchanged)."""


class SessionNotFound(SessionDBError, LookupError):
    """No session with this id (never created, or deleted, perhaps by another process).

    The one "not found" of the whole agent: the core raises it too (as
    ``acp_hermes.core.errors.SessionNotFoundError``), and the ACP adapter answers it with -32002.
    """

    def __init__(self, session_id: str) -> None:
        super().__init__(f"no session {session_id!r}")
        self.session_id = session_id


class SessionDBCorrupt(SessionDBError):
    """The file is not a readable SQLite database (damaged, or something else entirely)."""

    def __init__(self, path: Path, detail: str) -> None:
        super().__init__(f"{path} is damaged: {detail}")
        self.path = path
        self.detail = detail


class SessionExists(SessionDBError):
    """A session with this id already exists."""


def is_corruption(error: sqlite3.DatabaseError) -> bool:
    """Whether SQLite says the file itself is bad, as opposed to busy, locked or misused."""
    name = getattr(error, "sqlite_errorname", "")  # Python 3.11+
    if name in ("SQLITE_CORRUPT", "SQLITE_NOTADB"):
        return True
    message = str(error).lower()
    return "malformed" in message or "not a database" in message
