"""Full-text search over every stored message: the best-ranked matches of an FTS5 expression, with
snippets. Turning what someone typed into that expression is ``memory.fts_query``; recall's
pipeline around it is ``memory.recall``.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Sequence
from typing import Any

from acp_hermes_memory.session_db.database import Database
from acp_hermes_memory.session_db.records import SearchHit
from acp_hermes_memory.session_db.rows import id_list
from acp_hermes_memory.session_schema import TRIGRAM_INDEX, WORD_INDEX

RANK_WINDOW = 5_000
SNIPPET_OPEN = ">>>"
SNIPPET_CLOSE = "<<<"
SNIPPET_ELLIPSIS = "..."
SNIPPET_TOKENS = 32


class Search(Database):
    """Search of the messages' full-text indexes (``search_available``, ``trigram_available``)."""

    def search_messages(
        self,
        match: str,
        *,
        trigram: bool = False,
        role_filter: Sequence[str] | None = None,
        exclude_sessions: Iterable[str] = frozenset(),
        limit: int = 50,
    ) -> list[SearchHit]:
        """Best-ranked (bm25) messages for an already sanitised FTS5 MATCH expression.

        bm25 costs about a microsecond per matching row and a common word matches a large part
        of a big history, so only the newest RANK_WINDOW matches are ranked: a query with fewer
        matches is ranked exactly, a broader one among recent messages. The window is read
        newest-first straight from the index (one pass, which matters for prefix queries: each
        pass re-merges every term with the prefix). Filters are then applied in rank order to
        small batches, so only about ``limit`` rows of ``messages`` are read; snippets are built
        last, for the hits only (snippet() re-reads and re-tokenizes each text). Inactive
        messages (active = 0) are left out unless compacted. Returns [] when the needed index
        is unavailable or the expression is empty.
        """
        table = TRIGRAM_INDEX if trigram else WORD_INDEX
        if not match.strip() or table not in self._search or limit < 1:
            return []
        roles = set(role_filter or ())
        excluded = set(exclude_sessions)
        window_sql = (
            f"SELECT rowid, rank FROM (SELECT rowid, rank FROM {table} WHERE {table} MATCH ? "
            "ORDER BY rowid DESC LIMIT ?) ORDER BY rank"
        )
        # "+rowid" keeps the IN list from turning into one index lookup (one term merge) per id.
        snippet_sql = (
            f"SELECT rowid, snippet({table}, 0, ?, ?, ?, ?) FROM {table} WHERE {table} MATCH ? "
            "AND rowid BETWEEN ? AND ? AND +rowid IN (SELECT value FROM json_each(?))"
        )

        def wanted(row: Sequence[Any]) -> bool:
            _, session_id, role, active, compacted = row[:5]
            return bool(active or compacted) and (not roles or role in roles) and session_id not in excluded

        def work(conn: sqlite3.Connection) -> list[SearchHit]:
            candidates = conn.execute(window_sql, (match, RANK_WINDOW)).fetchall()
            chosen: list[tuple[float, Sequence[Any]]] = []
            batch = max(2 * limit, 64)
            for start in range(0, len(candidates), batch):
                chunk = candidates[start : start + batch]
                described = {row[0]: row for row in _describe_messages(conn, [i for i, _ in chunk])}
                chosen.extend((rank, described[i]) for i, rank in chunk if i in described and wanted(described[i]))
                if len(chosen) >= limit:
                    break
            chosen = chosen[:limit]
            if not chosen:
                return []
            ids = [row[0] for _, row in chosen]
            snippet_params = (SNIPPET_OPEN, SNIPPET_CLOSE, SNIPPET_ELLIPSIS, SNIPPET_TOKENS, match)
            range_params = (min(ids), max(ids), id_list(ids))
            snippets = dict(conn.execute(snippet_sql, (*snippet_params, *range_params)).fetchall())
            return [
                SearchHit(
                    message_id=row[0],
                    session_id=row[1],
                    role=row[2],
                    snippet=snippets[row[0]].strip(),
                    rank=rank,
                    timestamp=row[5],
                    tool_name=row[6],
                    session_title=row[7],
                    session_cwd=row[8],
                    session_started_at=row[9],
                )
                for rank, row in chosen
                if row[0] in snippets
            ]

        return self._read(work)


def _describe_messages(conn: sqlite3.Connection, message_ids: list[int]) -> list[tuple[Any, ...]]:
    """(id, session_id, role, active, compacted, timestamp, tool_name, title, cwd, started_at) per id."""
    return conn.execute(
        "SELECT m.id, m.session_id, m.role, m.active, m.compacted, m.timestamp, m.tool_name, "
        "s.title, s.cwd, s.started_at FROM messages AS m JOIN sessions AS s ON s.id = m.session_id "
        "WHERE m.id IN (SELECT value FROM json_each(?))",
        (id_list(message_ids),),
    ).fetchall()
