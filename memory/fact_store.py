"""The fact store of the ``facts`` memory provider: short facts about entities, ranked by FTS5 against a message.

One SQLite file (``$HERMES_HOME/acp-hermes/facts.db``, WAL, private), shared by every session and
process like the SessionDB. A fact is an entity, one sentence about it, the session it came from and
when; retracting one keeps its row (marked) so it can be told apart from one never known. Recall is
a single FTS5 query: each word of the message (three letters or more) may match the entity or the
fact, best BM25 rank first, no model call.
"""

from __future__ import annotations

import re
import sqlite3
import time
from pathlib import Path

from acp_hermes_memory.fs import private_file
from acp_hermes_memory.values import value

_SCHEMA = """
CREATE TABLE IF NOT EXISTS facts (
    id INTEGER PRIMARY KEY,
    entity TEXT NOT NULL,
    fact TEXT NOT NULL,
    source_session TEXT,
    created_at REAL NOT NULL,
    retracted_at REAL
);
CREATE VIRTUAL TABLE IF NOT EXISTS facts_fts USING fts5(entity, fact, content='facts', content_rowid='id');
CREATE VIRTUAL TABLE IF NOT EXISTS facts_vocab USING fts5vocab(facts_fts, 'row');
CREATE TRIGGER IF NOT EXISTS facts_added AFTER INSERT ON facts BEGIN
    INSERT INTO facts_fts(rowid, entity, fact) VALUES (new.id, new.entity, new.fact);
END;
CREATE TRIGGER IF NOT EXISTS facts_removed AFTER DELETE ON facts BEGIN
    INSERT INTO facts_fts(facts_fts, rowid, entity, fact) VALUES ('delete', old.id, old.entity, old.fact);
END;
"""
_WORD = re.compile(r"[^\W_]{3,}")  # as FTS5's unicode61 splits words (an underscore separates)
MAX_QUERY_WORDS = 32
RANKED_WORDS = 6  # the rarest words of a message that are looked for
COMMON_SHARE = 0.05  # a word in more facts than this share (and than COMMON_FLOOR) says little on its own
COMMON_FLOOR = 200
MAX_FACT_CHARS = 500


@value
class Fact:
    id: int
    entity: str
    fact: str
    source_session: str | None
    created_at: float

    def line(self) -> str:
        return f"[{self.id}] {self.entity}: {self.fact}"


class FactStore:
    """The facts, one connection per store (opened with ``check_same_thread=False``: calls come from the
    provider's threads, one at a time per kind, and SQLite serialises the rest)."""

    def __init__(self, path: Path) -> None:
        private_file(path)
        self._conn = sqlite3.connect(path, timeout=10, check_same_thread=False, isolation_level=None)
        self._conn.execute("PRAGMA journal_mode=WAL")
        self._conn.executescript(_SCHEMA)

    def close(self) -> None:
        self._conn.close()

    def add(self, entity: str, fact: str, source_session: str | None = None) -> Fact:
        """Keep a fact (an identical live one is not stored twice: the existing one comes back)."""
        entity, fact = " ".join(entity.split())[:100], " ".join(fact.split())[:MAX_FACT_CHARS]
        if not entity or not fact:
            raise ValueError("a fact needs an entity and a sentence about it")
        found = self._conn.execute(
            "SELECT id, entity, fact, source_session, created_at FROM facts "
            "WHERE entity = ? AND fact = ? AND retracted_at IS NULL", (entity, fact)).fetchone()
        if found is not None:
            return Fact(*found)
        now = time.time()
        row = self._conn.execute("INSERT INTO facts(entity, fact, source_session, created_at) VALUES (?, ?, ?, ?)",
                                 (entity, fact, source_session, now)).lastrowid
        return Fact(int(row or 0), entity, fact, source_session, now)

    def retract(self, fact_id: int) -> bool:
        """Mark a live fact retracted: it is never recalled again. False when there was none."""
        changed = self._conn.execute("UPDATE facts SET retracted_at = ? WHERE id = ? AND retracted_at IS NULL",
                                     (time.time(), fact_id)).rowcount
        return changed > 0

    def search(self, text: str, limit: int = 8) -> list[Fact]:
        """The live facts that best match the words of ``text`` (none when it has no word to look for)."""
        words = list(dict.fromkeys(word.lower() for word in _WORD.findall(text)))[:MAX_QUERY_WORDS]
        if not words:
            return []
        # Only the rarest words are ranked: a word most facts share would make every fact a candidate
        # (and the ranking cost grow with the store) while saying nothing about which one is meant.
        marks = ",".join("?" * len(words))
        counts = dict(self._conn.execute(f"SELECT term, doc FROM facts_vocab WHERE term IN ({marks})", words))
        present = sorted((word for word in words if counts.get(word)), key=lambda word: counts[word])
        if not present:
            return []
        total = self._conn.execute("SELECT max(id) FROM facts").fetchone()[0] or 1
        common = max(COMMON_FLOOR, COMMON_SHARE * total)
        chosen = [word for word in present if counts[word] <= common][:RANKED_WORDS]
        quoted = ['"' + word.replace('"', '""') + '"' for word in chosen or present[:2]]
        query = " OR ".join(quoted) if chosen else " AND ".join(quoted)  # only common words: facts with both
        rows = self._conn.execute(
            "SELECT f.id, f.entity, f.fact, f.source_session, f.created_at FROM facts_fts "
            "JOIN facts AS f ON f.id = facts_fts.rowid WHERE facts_fts MATCH ? AND f.retracted_at IS NULL "
            "ORDER BY bm25(facts_fts, 2.0, 1.0) LIMIT ?", (query, limit)).fetchall()
        return [Fact(*row) for row in rows]

    def recent(self, limit: int = 20) -> list[Fact]:
        rows = self._conn.execute(
            "SELECT id, entity, fact, source_session, created_at FROM facts WHERE retracted_at IS NULL "
            "ORDER BY id DESC LIMIT ?", (limit,)).fetchall()
        return [Fact(*row) for row in rows]

    def count(self) -> int:
        return int(self._conn.execute("SELECT count(*) FROM facts WHERE retracted_at IS NULL").fetchone()[0])
