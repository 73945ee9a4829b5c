"""A SessionDB's messages: appended one at a time as they happen (invariant 5), read back in order."""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Iterable
from typing import Any

from acp_hermes_memory.session_db.database import Database
from acp_hermes_memory.session_db.records import CONTINUATION_SOURCE, ROLES, MessageRecord
from acp_hermes_memory.session_db.rows import MESSAGE_SELECT, dump_json, id_list, insert_message, message_from_row


class Messages(Database):
    """The ``messages`` table: appends (transcripts are append-only) and reads of a session's rows."""

    def append_message(
        self,
        session_id: str,
        role: str,
        content: str,
        *,
        tool_call_id: str | None = None,
        tool_calls: list[dict[str, Any]] | None = None,
        tool_name: str | None = None,
        payload: Any = None,
        display: Any = None,
        finish_reason: str | None = None,
        reasoning: str | None = None,
        token_count: int | None = None,
        timestamp: float | None = None,
    ) -> int:
        """Persist one message and bump the session's counters and activity time; returns its id.

        ``tool_calls`` is a list of ``{"id", "name", "arguments"}``; ``payload`` is the exact
        content blocks to resend to the model and ``display`` what the editor was shown.

        A segment a compaction has ended (``segments``) takes no more messages: they go to the
        continuation, where the conversation's history is now. So a process that still holds the old
        segment (another editor window on the same session, mid-turn) loses nothing it stores.
        """
        if role not in ROLES:
            raise ValueError(f"unknown message role {role!r}; expected one of {sorted(ROLES)}")
        when = time.time() if timestamp is None else timestamp
        row = (
            role,
            content,
            tool_call_id,
            dump_json(tool_calls),
            tool_name,
            when,
            token_count,
            finish_reason,
            reasoning,
            dump_json(payload),
            dump_json(display),
        )

        def work(conn: sqlite3.Connection) -> int:
            return insert_message(conn, _segment_in_use(conn, session_id), len(tool_calls or ()), when, row)

        return self._write(work)

    def messages(self, session_id: str, *, active_only: bool = True) -> list[MessageRecord]:
        """The session's messages in the order they were written."""
        sql = f"{MESSAGE_SELECT} WHERE m.session_id = ?{' AND m.active = 1' if active_only else ''} ORDER BY m.id"
        rows = self._read(lambda conn: conn.execute(sql, (session_id,)).fetchall())
        return [message_from_row(row) for row in rows]

    def message_named(self, session_id: str, name: str, keys: Iterable[str], row_id: int | None = None
                      ) -> tuple[int, str] | None:
        """(id, role) of the session's newest active message whose display record holds ``name`` under one
        of ``keys``, or, failing that, of its active message ``row_id``; None when there is neither.

        A lookup in SQLite, not a read of the rows: a fork at a message of a long session finds it
        in a few milliseconds."""
        keys = list(keys)
        # json_valid first: a row holding a NaN (which only Python's json writes) is no JSON to SQLite.
        matches = " OR ".join("CASE WHEN json_valid(display) THEN json_extract(display, ?) END = ?" for _ in keys)
        params: list[Any] = [session_id]
        for key in keys:
            params += [f"$.{key}", name]

        def work(conn: sqlite3.Connection) -> tuple[int, str] | None:
            found = conn.execute(
                f"SELECT id, role FROM messages WHERE session_id = ? AND active = 1 AND role != 'tool' "
                f"AND display IS NOT NULL AND ({matches}) ORDER BY id DESC LIMIT 1", params).fetchone()
            if found is None and row_id is not None:
                found = conn.execute("SELECT id, role FROM messages WHERE session_id = ? AND active = 1 AND id = ? "
                                     "AND role != 'tool'", (session_id, row_id)).fetchone()
            return None if found is None else (int(found[0]), str(found[1]))

        return self._read(work)

    def message_end(self, session_id: str, row_id: int) -> int:
        """The last row of message ``row_id`` with the tool results that answer it: the rows of role
        ``tool`` straight after it (none after a user's message)."""

        def work(conn: sqlite3.Connection) -> int:
            role = conn.execute("SELECT role FROM messages WHERE id = ?", (row_id,)).fetchone()
            if role is None or role[0] != "assistant":
                return row_id
            following = conn.execute(
                "SELECT min(id) FROM messages WHERE session_id = ? AND active = 1 AND id > ? AND role != 'tool'",
                (session_id, row_id)).fetchone()[0]
            last = conn.execute(
                "SELECT max(id) FROM messages WHERE session_id = ? AND active = 1 AND id >= ?"
                + ("" if following is None else " AND id < ?"),
                (session_id, row_id) if following is None else (session_id, row_id, following)).fetchone()[0]
            return int(last if last is not None else row_id)

        return self._read(work)

    def messages_around(self, session_id: str, message_ids: Iterable[int], window: int) -> list[MessageRecord]:
        """Messages within ``window`` positions of any of ``message_ids``, in order.

        Positions count the session's searchable messages (active or compacted), so the cut is
        the same conversation search found the hits in.
        """
        sql = f"""
            WITH ordered AS (
                SELECT id, row_number() OVER (ORDER BY id) AS position FROM messages
                WHERE session_id = ? AND (active = 1 OR compacted = 1)
            ),
            anchors AS (
                SELECT position FROM ordered WHERE id IN (SELECT value FROM json_each(?))
            )
            {MESSAGE_SELECT} JOIN ordered AS o ON o.id = m.id
            WHERE EXISTS (
                SELECT 1 FROM anchors AS a WHERE o.position BETWEEN a.position - ? AND a.position + ?
            )
            ORDER BY m.id
        """
        params = (session_id, id_list(message_ids), window, window)
        rows = self._read(lambda conn: conn.execute(sql, params).fetchall())
        return [message_from_row(row) for row in rows]


def _segment_in_use(conn: sqlite3.Connection, session_id: str) -> str:
    """The segment that takes a conversation's new messages: ``session_id``, or, when a compaction
    ended it, the newest segment that continues it."""
    segment = session_id
    while True:
        row = conn.execute("SELECT end_reason FROM sessions WHERE id = ?", (segment,)).fetchone()
        if row is None or row[0] != CONTINUATION_SOURCE:
            return segment
        following = conn.execute(
            f"SELECT id FROM sessions WHERE parent_session_id = ? AND source = '{CONTINUATION_SOURCE}' "
            "ORDER BY started_at DESC, id LIMIT 1",
            (segment,),
        ).fetchone()
        if following is None:
            return segment
        segment = following[0]
