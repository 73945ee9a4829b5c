"""A SessionDB's sessions one by one: create, read, update, count usage, list, delete.

How sessions hang together (continuations, forks, rewinds, subagents) is ``memory.session_db.tree``.
"""

from __future__ import annotations

import base64
import binascii
import json
import sqlite3
import time
from collections.abc import Iterable, Sequence
from typing import Any

from acp_hermes_memory.session_db.database import Database
from acp_hermes_memory.session_db.errors import SessionExists, SessionNotFound
from acp_hermes_memory.session_db.records import (
    CONTINUATION_SOURCE,
    REWOUND_SOURCE,
    SUBAGENT_SOURCE,
    SessionRecord,
)
from acp_hermes_memory.session_db.rows import (
    SESSION_SELECT,
    dump_json,
    fetch_session,
    id_list,
    insert_session,
    require_session,
    session_from_row,
)

_UPDATABLE_SESSION_FIELDS = frozenset(
    {
        "title",
        "mode",
        "model",
        "model_config",
        "system_prompt",
        "ended_at",
        "end_reason",
        "archived",
        "additional_directories",
        "cwd",
    }
)


class Sessions(Database):
    """The ``sessions`` table, a row at a time (and a page of rows for listings)."""

    def create_session(
        self,
        session_id: str,
        *,
        cwd: str | None,
        model: str | None,
        mode: str | None,
        model_config: dict[str, Any],
        system_prompt: str | None,
        parent_session_id: str | None = None,
        additional_directories: Sequence[str] = (),
        title: str | None = None,
        source: str = "acp",
    ) -> SessionRecord:
        now = time.time()

        def work(conn: sqlite3.Connection) -> SessionRecord:
            if fetch_session(conn, session_id) is not None:
                raise SessionExists(session_id)
            if parent_session_id is not None and fetch_session(conn, parent_session_id) is None:
                raise SessionNotFound(parent_session_id)
            insert_session(
                conn,
                session_id=session_id,
                source=source,
                model=model,
                mode=mode,
                cwd=cwd,
                title=title,
                parent_session_id=parent_session_id,
                now=now,
                additional_directories=list(additional_directories),
                model_config=model_config,
                system_prompt=system_prompt,
            )
            return require_session(conn, session_id)

        return self._write(work)

    def get_session(self, session_id: str) -> SessionRecord | None:
        return self._read(lambda conn: fetch_session(conn, session_id))

    def update_session(self, session_id: str, **fields: Any) -> None:
        """Set metadata columns; unknown names raise ValueError. Does not count as activity."""
        unknown = set(fields) - _UPDATABLE_SESSION_FIELDS
        if unknown:
            raise ValueError(f"cannot update session field(s): {', '.join(sorted(unknown))}")
        if not fields:
            return
        values = dict(fields)
        if "model_config" in values:
            values["model_config"] = dump_json(values["model_config"] or {})
        if "additional_directories" in values:
            values["additional_directories"] = dump_json(list(values["additional_directories"]))
        if "archived" in values:
            values["archived"] = int(bool(values["archived"]))
        assignments = ", ".join(f"{name} = ?" for name in values)

        def work(conn: sqlite3.Connection) -> None:
            cursor = conn.execute(f"UPDATE sessions SET {assignments} WHERE id = ?", (*values.values(), session_id))
            if cursor.rowcount == 0:
                raise SessionNotFound(session_id)

        self._write(work)

    def add_usage(
        self,
        session_id: str,
        *,
        input_tokens: int = 0,
        output_tokens: int = 0,
        cache_read_tokens: int = 0,
        cache_write_tokens: int = 0,
        reasoning_tokens: int = 0,
        cost_usd: float = 0.0,
        api_calls: int = 0,
    ) -> None:
        """Add to the session's token, cost and API-call counters."""

        def work(conn: sqlite3.Connection) -> None:
            cursor = conn.execute(
                "UPDATE sessions SET input_tokens = input_tokens + ?, output_tokens = output_tokens + ?, "
                "cache_read_tokens = cache_read_tokens + ?, cache_write_tokens = cache_write_tokens + ?, "
                "reasoning_tokens = reasoning_tokens + ?, estimated_cost_usd = estimated_cost_usd + ?, "
                "api_call_count = api_call_count + ? WHERE id = ?",
                (
                    input_tokens,
                    output_tokens,
                    cache_read_tokens,
                    cache_write_tokens,
                    reasoning_tokens,
                    cost_usd,
                    api_calls,
                    session_id,
                ),
            )
            if cursor.rowcount == 0:
                raise SessionNotFound(session_id)

        self._write(work)

    def list_sessions(
        self,
        *,
        cwd: str | None = None,
        limit: int = 50,
        cursor: str | None = None,
        include_empty: bool = False,
        include_subagents: bool = False,
    ) -> tuple[list[SessionRecord], str | None]:
        """Newest activity first; returns a page and the cursor of the next one (None at the end).

        Keyset paging on (updated_at, id): a page never repeats or skips a session that did not
        change between calls, however deep the page. Subagent sessions are left out unless asked
        for: they are their parent's work, not conversations of the editor's (ACP session/list). Neither
        are continuation segments (their conversation is listed under its first segment) nor a rewind's
        branches (what the conversation let go of: found by search, not resumed).
        """
        if limit < 1:
            raise ValueError("limit must be at least 1")
        conditions: list[str] = [f"source NOT IN ('{CONTINUATION_SOURCE}', '{REWOUND_SOURCE}')"]
        if not include_subagents:
            conditions.append(f"source != '{SUBAGENT_SOURCE}'")
        params: list[Any] = []
        if cwd is not None:
            conditions.append("cwd = ?")
            params.append(cwd)
        if not include_empty:
            conditions.append("message_count > 0")
        if cursor is not None:
            conditions.append("(updated_at, id) < (?, ?)")
            params.extend(_decode_cursor(cursor))
        where = f" WHERE {' AND '.join(conditions)}" if conditions else ""
        sql = f"{SESSION_SELECT}{where} ORDER BY updated_at DESC, id DESC LIMIT ?"
        rows = self._read(lambda conn: conn.execute(sql, (*params, limit + 1)).fetchall())
        records = [session_from_row(row) for row in rows[:limit]]
        next_cursor = None
        if len(rows) > limit:
            last = records[-1]
            next_cursor = _encode_cursor(last.updated_at, last.id)
        return records, next_cursor

    def recent_sessions(self, *, limit: int = 10, exclude: Iterable[str] = frozenset()) -> list[SessionRecord]:
        """The most recently active sessions that have messages, leaving out ``exclude``.

        Subagent sessions are left out: this list answers "what were we working on", and one
        delegation batch would push the conversations themselves off it with its children (the
        parent's row stands for their work; a search still finds their messages). So are a rewind's
        branches: the conversation went on without them.
        """
        sql = (
            f"{SESSION_SELECT} WHERE message_count > 0 AND source NOT IN ('{SUBAGENT_SOURCE}', '{REWOUND_SOURCE}') "
            "AND id NOT IN (SELECT value FROM json_each(?)) ORDER BY updated_at DESC, id DESC LIMIT ?"
        )
        rows = self._read(lambda conn: conn.execute(sql, (id_list(exclude), limit)).fetchall())
        return [session_from_row(row) for row in rows]

    def delete_session(self, session_id: str) -> bool:
        """Delete a session, its messages and their index entries, and the branches its rewinds set aside
        (its messages too); other children lose their parent link."""

        def work(conn: sqlite3.Connection) -> bool:
            conn.execute(
                f"DELETE FROM sessions WHERE parent_session_id = ? AND source = '{REWOUND_SOURCE}'", (session_id,)
            )
            return conn.execute("DELETE FROM sessions WHERE id = ?", (session_id,)).rowcount > 0

        return self._write(work)


def _encode_cursor(updated_at: float, session_id: str) -> str:
    raw = json.dumps([updated_at, session_id], separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).decode("ascii")


def _decode_cursor(cursor: str) -> tuple[float, str]:
    try:
        updated_at, session_id = json.loads(base64.urlsafe_b64decode(cursor.encode("ascii")))
    except (ValueError, TypeError, binascii.Error, UnicodeEncodeError) as exc:
        raise ValueError(f"invalid session list cursor: {cursor!r}") from exc
    if not isinstance(updated_at, (int, float)) or not isinstance(session_id, str):
        raise ValueError(f"invalid session list cursor: {cursor!r}")
    return float(updated_at), session_id
