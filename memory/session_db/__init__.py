"""SessionDB: every session and message, in one SQLite file shared by all acp-hermes processes.

Transcripts are append-only: one row per message, written as it happens (invariant 5). The class
is put together from one module per job:

- ``database``: the connection: opening and migrating, short transactions, retries across processes
  (``transactions``), and the background upkeep of the WAL and the full-text indexes (``upkeep``);
- ``sessions``: sessions one by one; ``tree``: how they hang together (segments, forks, rewinds,
  subagents); ``messages``: appends and reads; ``search``: full-text search;
- ``records`` and ``errors``: what it hands out and raises; ``rows``: how a row becomes a record.
"""

from __future__ import annotations

from types import TracebackType

from acp_hermes_memory.session_db.errors import (
    SessionDBCorrupt,
    SessionDBError,
    SessionExists,
    SessionNotFound,
    is_corruption,
)
from acp_hermes_memory.session_db.messages import Messages
from acp_hermes_memory.session_db.records import (
    CONTINUATION_SOURCE,
    REWOUND_SOURCE,
    SUBAGENT_SOURCE,
    MessageRecord,
    NewMessage,
    SearchHit,
    SegmentNews,
    SessionRecord,
    SubagentTotals,
)
from acp_hermes_memory.session_db.search import SNIPPET_CLOSE, SNIPPET_OPEN, Search
from acp_hermes_memory.session_db.sessions import Sessions
from acp_hermes_memory.session_db.tree import SessionTree

__all__ = [
    "CONTINUATION_SOURCE",
    "REWOUND_SOURCE",
    "SNIPPET_CLOSE",
    "SNIPPET_OPEN",
    "SUBAGENT_SOURCE",
    "MessageRecord",
    "NewMessage",
    "SearchHit",
    "SegmentNews",
    "SessionDB",
    "SessionDBCorrupt",
    "SessionDBError",
    "SessionExists",
    "SessionNotFound",
    "SessionRecord",
    "SubagentTotals",
    "is_corruption",
]


class SessionDB(Sessions, SessionTree, Messages, Search):
    """The shared session store. Thread-safe; every method is one short statement or transaction."""

    def __enter__(self) -> SessionDB:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    def conversation(self, session_id: str) -> list[MessageRecord]:
        """The messages of the session and of its continuations (``segments``), in order."""
        return [row for segment in self.segments(session_id) for row in self.messages(segment.id)]
