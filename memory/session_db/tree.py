"""How a SessionDB's sessions hang together: a conversation's segments (a compaction continues one in
a new session), forks, the branches rewinds set aside, and subagents; and what each relation means
for recall (``lineage``), for usage (``subagent_totals``) and for deletes (``subagent_ids``).
"""

from __future__ import annotations

import sqlite3
import time
import uuid
from collections.abc import Iterable, Sequence
from typing import Any

from acp_hermes_memory.session_db.database import Database
from acp_hermes_memory.session_db.errors import SessionExists
from acp_hermes_memory.session_db.records import (
    CONTINUATION_SOURCE,
    NOT_OWN_CONVERSATIONS,
    REWOUND_MARK,
    REWOUND_SOURCE,
    SUBAGENT_SOURCE,
    MessageRecord,
    NewMessage,
    SegmentNews,
    SessionRecord,
    SubagentTotals,
)
from acp_hermes_memory.session_db.rows import (
    MESSAGE_COLUMNS,
    MESSAGE_SELECT,
    SESSION_SELECT,
    dump_json,
    fetch_session,
    id_list,
    insert_message,
    insert_session,
    message_from_row,
    require_session,
    session_from_row,
)

# The session's descendants through subagent and continuation links; ``inside`` is true below a
# subagent link (a continuation of the session itself is the session, not one of its subagents).
# A fork is a conversation of its own: neither it nor what it delegated belongs to the session.
_SUBAGENT_TREE = f"""
    WITH RECURSIVE tree(id, inside) AS (
        SELECT ?, 0
        UNION
        SELECT s.id, t.inside OR s.source = '{SUBAGENT_SOURCE}' FROM sessions AS s
        JOIN tree AS t ON s.parent_session_id = t.id
        WHERE s.source IN ('{SUBAGENT_SOURCE}', '{CONTINUATION_SOURCE}')
    )
"""


class SessionTree(Database):
    """Segments, forks, rewinds' branches and subagents: writes that make or move whole sessions, and
    the reads that follow their links."""

    def rewind(self, segment_id: str, first_message_id: int) -> str | None:
        """Take the segment's messages from ``first_message_id`` on out of the conversation: the
        model's history goes back to just before them, and they stay searchable. Returns the id of
        the session now holding them (None: the segment has none; nothing changed).

        They move, ids and all, into a new ended session (``REWOUND_SOURCE``, parent the segment),
        in one transaction. Only ``session_id`` changes, which the full-text indexes do not hold
        (they are keyed by message id), so the moved messages stay indexed and a search names the
        branch, through its join with ``messages``.
        """
        now = time.time()

        def work(conn: sqlite3.Connection) -> str | None:
            segment = require_session(conn, segment_id)
            moved, tool_calls, first_at, last_at = conn.execute(
                "SELECT count(*), coalesce(sum(json_array_length(tool_calls)), 0), min(timestamp), max(timestamp) "
                "FROM messages WHERE session_id = ? AND id >= ?",
                (segment_id, first_message_id),
            ).fetchone()
            if not moved:
                return None
            branch = str(uuid.uuid4())
            insert_session(
                conn,
                session_id=branch,
                source=REWOUND_SOURCE,
                model=segment.model,
                mode=segment.mode,
                cwd=segment.cwd,
                title=None if segment.title is None else segment.title + REWOUND_MARK,
                parent_session_id=segment_id,
                now=first_at,
                additional_directories=segment.additional_directories,
                model_config=segment.model_config,
                system_prompt=segment.system_prompt,
            )
            conn.execute(
                "UPDATE sessions SET updated_at = ?, ended_at = ?, end_reason = ?, message_count = ?, "
                "tool_call_count = ? WHERE id = ?",
                (last_at, now, REWOUND_SOURCE, moved, tool_calls, branch),
            )
            conn.execute(
                "UPDATE messages SET session_id = ? WHERE session_id = ? AND id >= ?",
                (branch, segment_id, first_message_id),
            )
            conn.execute(
                "UPDATE sessions SET message_count = max(0, message_count - ?), "
                "tool_call_count = max(0, tool_call_count - ?) WHERE id = ?",
                (moved, tool_calls, segment_id),
            )
            return branch

        return self._write(work)

    def fork_session(
        self,
        source_id: str,
        new_id: str,
        *,
        cwd: str | None,
        model: str | None = None,
        mode: str | None = None,
        model_config: dict[str, Any] | None = None,
        system_prompt: str | None = None,
        additional_directories: Sequence[str] | None = None,
        title: str | None = None,
        up_to: int | None = None,
    ) -> SessionRecord:
        """A new session whose parent is ``source_id``, holding a copy of its active messages (those up
        to message ``up_to`` included, when it is given).

        Settings not given are inherited. The copy is one INSERT … SELECT in the same
        transaction as the new row, so a fork is atomic and fast however long the source is.
        """
        now = time.time()

        def work(conn: sqlite3.Connection) -> SessionRecord:
            source = require_session(conn, source_id)
            if fetch_session(conn, new_id) is not None:
                raise SessionExists(new_id)
            insert_session(
                conn,
                session_id=new_id,  # a fork is the user's own conversation, whatever it was forked from
                source="acp" if source.source in NOT_OWN_CONVERSATIONS else source.source,
                model=source.model if model is None else model,
                mode=source.mode if mode is None else mode,
                cwd=cwd,
                title=title,
                parent_session_id=source_id,
                now=now,
                additional_directories=list(
                    source.additional_directories if additional_directories is None else additional_directories
                ),
                model_config=source.model_config if model_config is None else model_config,
                system_prompt=source.system_prompt if system_prompt is None else system_prompt,
            )
            copied = [name for name in MESSAGE_COLUMNS if name not in ("id", "session_id", "active")]
            conn.execute(
                f"INSERT INTO messages (session_id, active, {', '.join(copied)}) "
                f"SELECT ?, 1, {', '.join(copied)} FROM messages "
                f"WHERE session_id = ? AND active = 1{'' if up_to is None else ' AND id <= ?'} ORDER BY id",
                (new_id, source_id) if up_to is None else (new_id, source_id, up_to),
            )
            conn.execute(
                "UPDATE sessions SET (message_count, tool_call_count) = "
                "(SELECT count(*), coalesce(sum(json_array_length(tool_calls)), 0) "
                " FROM messages WHERE session_id = ?) WHERE id = ?",
                (new_id, new_id),
            )
            return require_session(conn, new_id)

        return self._write(work)

    def segments(self, session_id: str) -> list[SessionRecord]:
        """The session and the continuations context compression made of it, oldest first.

        A continuation is a child with ``source = 'compression'``; it is the same conversation
        for its client, so only the first segment is listed and it carries the client's id. It
        counts once its parent ended with ``end_reason = 'compression'``, written after the child is
        complete: a process killed in between leaves the old segment current.
        """
        sql = f"""
            WITH RECURSIVE chain(id, depth) AS (
                SELECT ?, 0
                UNION ALL
                SELECT s.id, c.depth + 1 FROM sessions AS s JOIN chain AS c ON s.parent_session_id = c.id
                JOIN sessions AS p ON p.id = c.id
                WHERE s.source = '{CONTINUATION_SOURCE}' AND p.end_reason = '{CONTINUATION_SOURCE}'
            )
            SELECT id FROM chain ORDER BY depth
        """

        def work(conn: sqlite3.Connection) -> list[SessionRecord]:
            ids = [row[0] for row in conn.execute(sql, (session_id,)).fetchall()]
            return [record for i in ids if (record := fetch_session(conn, i)) is not None]

        return self._read(work)

    def segment_news(self, segment_id: str, after_id: int) -> SegmentNews | None:
        """Whether the segment has ended by compaction, and its messages stored after ``after_id``: how a
        process holding a conversation learns that another one (an editor window of its own on the same
        session) changed it. None when there is no such segment."""

        def work(conn: sqlite3.Connection) -> SegmentNews | None:
            row = conn.execute("SELECT end_reason FROM sessions WHERE id = ?", (segment_id,)).fetchone()
            if row is None:
                return None
            ids = conn.execute("SELECT id FROM messages WHERE session_id = ? AND id > ? ORDER BY id",
                               (segment_id, after_id)).fetchall()
            return SegmentNews(row[0] == CONTINUATION_SOURCE, [i for (i,) in ids])

        return self._read(work)

    def continue_segment(
        self,
        segment_id: str,
        continuation_id: str,
        *,
        system_prompt: str,
        messages: Sequence[NewMessage],
        read_up_to: int,
        own: Iterable[int],
    ) -> list[MessageRecord] | None:
        """Continue a compacted conversation in a new segment: ``messages`` (the compaction's card and
        the history it keeps), then what other processes stored in the old segment since the
        compacting one read it (the messages after ``read_up_to`` not among its ``own``), carried into
        the model's history; then the old segment ends. One transaction, so no message lands between
        the copy and the end (later ones go to the continuation: ``append_message``). Returns the
        continuation's messages; None, changing nothing, when another process compacted the segment
        first (its continuation holds everything).
        """
        now = time.time()

        def work(conn: sqlite3.Connection) -> list[MessageRecord] | None:
            segment = require_session(conn, segment_id)
            if segment.end_reason is not None:
                return None
            insert_session(
                conn,
                session_id=continuation_id,
                source=CONTINUATION_SOURCE,
                model=segment.model,
                mode=segment.mode,
                cwd=segment.cwd,
                title=None,
                parent_session_id=segment_id,
                now=now,
                additional_directories=segment.additional_directories,
                model_config=segment.model_config,
                system_prompt=system_prompt,
            )
            for message in messages:
                insert_message(conn, continuation_id, 0, now, (
                    message.role, message.content, message.tool_call_id, None, message.tool_name, now, None,
                    None, None, dump_json(message.payload), dump_json(message.display)))
            copied = [name for name in MESSAGE_COLUMNS if name not in ("id", "session_id", "content", "display")]
            conn.execute(  # carried: in the model's history; shown by the replay of the old segment already
                f"INSERT INTO messages (session_id, content, display, {', '.join(copied)}) "
                f"SELECT ?, '', json_set(coalesce(display, '{{}}'), '$.carried', json('true')), {', '.join(copied)} "
                "FROM messages WHERE session_id = ? AND id > ? AND active = 1 AND payload IS NOT NULL "
                "AND id NOT IN (SELECT value FROM json_each(?)) ORDER BY id",
                (continuation_id, segment_id, read_up_to, id_list(own)),
            )
            conn.execute(
                "UPDATE sessions SET (message_count, tool_call_count) = "
                "(SELECT count(*), coalesce(sum(json_array_length(tool_calls)), 0) "
                " FROM messages WHERE session_id = ?) WHERE id = ?",
                (continuation_id, continuation_id),
            )
            conn.execute("UPDATE sessions SET end_reason = ?, ended_at = ? WHERE id = ?",
                         (CONTINUATION_SOURCE, now, segment_id))
            rows = conn.execute(f"{MESSAGE_SELECT} WHERE m.session_id = ? ORDER BY m.id", (continuation_id,))
            return [message_from_row(row) for row in rows.fetchall()]

        return self._write(work)

    def lineage(self, session_id: str) -> set[str]:
        """The session, its ancestors (parent chain) and all its descendants: forks and continuations,
        whose conversation the session's model has seen (recall leaves them out).

        A subagent link is not followed either way: a parent saw only its child's final answer,
        and a child only its task, so each can still search the other's conversation. Nor is the
        link down to a rewind's branch: the model no longer has those messages, so it may search them.
        """
        sql = f"""
            WITH RECURSIVE
                ancestors(id) AS (
                    SELECT ?
                    UNION
                    SELECT s.parent_session_id FROM sessions AS s JOIN ancestors AS a ON s.id = a.id
                    WHERE s.parent_session_id IS NOT NULL AND s.source != '{SUBAGENT_SOURCE}'
                ),
                descendants(id) AS (
                    SELECT ?
                    UNION
                    SELECT s.id FROM sessions AS s JOIN descendants AS d ON s.parent_session_id = d.id
                    WHERE s.source NOT IN ('{SUBAGENT_SOURCE}', '{REWOUND_SOURCE}')
                )
            SELECT id FROM ancestors UNION SELECT id FROM descendants
        """
        rows = self._read(lambda conn: conn.execute(sql, (session_id, session_id)).fetchall())
        return {row[0] for row in rows}

    def subagents_of(self, session_id: str) -> list[SessionRecord]:
        """The subagent sessions ``session_id`` started itself (not its children's), oldest first."""
        sql = (
            f"{SESSION_SELECT} WHERE parent_session_id = ? AND source = '{SUBAGENT_SOURCE}' "
            "ORDER BY started_at, id"
        )
        rows = self._read(lambda conn: conn.execute(sql, (session_id,)).fetchall())
        return [session_from_row(row) for row in rows]

    def subagent_ids(self, session_id: str) -> list[str]:
        """Every session inside the session's subagents, at any depth, with their continuation
        segments: what goes when the session is deleted (they hold its work)."""
        sql = f"{_SUBAGENT_TREE} SELECT id FROM tree WHERE inside ORDER BY id"
        return [row[0] for row in self._read(lambda conn: conn.execute(sql, (session_id,)).fetchall())]

    def subagent_totals(self, session_id: str) -> SubagentTotals:
        """Cost and tokens of the session's subagents at any depth (children, grandchildren, …), which
        the session's own row does not count: each child's usage is recorded on the child."""
        sql = (
            f"{_SUBAGENT_TREE} SELECT coalesce(sum(s.source = '{SUBAGENT_SOURCE}'), 0), "
            "coalesce(sum(s.estimated_cost_usd), 0.0), coalesce(sum(s.input_tokens), 0), "
            "coalesce(sum(s.output_tokens), 0), coalesce(sum(s.cache_read_tokens + s.cache_write_tokens), 0) "
            "FROM tree JOIN sessions AS s ON s.id = tree.id WHERE tree.inside"
        )
        count, cost, input_tokens, output_tokens, cache_tokens = self._read(
            lambda conn: conn.execute(sql, (session_id,)).fetchone())
        return SubagentTotals(int(count), float(cost), int(input_tokens), int(output_tokens), int(cache_tokens))
