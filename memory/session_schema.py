"""The schema of ``state.db``: tables, numbered forward migrations and the full-text indexes.

Kept apart from ``memory.session_db`` so the store's reads and writes do not sit among DDL:
``SessionDB`` runs ``MIGRATIONS`` on open, asks ``search_out_of_step`` whether the index
objects match this SQLite build (``detect_search_support``) and, if not, ``sync_search_index``.
The migrations and the index repair run inside a transaction the caller owns.
"""

from __future__ import annotations

import functools
import json
import logging
import sqlite3
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from acp_hermes_memory import row_format
from acp_hermes_memory.fts_query import CJK_GLOB

log = logging.getLogger(__name__)

WORD_INDEX = "messages_fts"
TRIGRAM_INDEX = "messages_fts_trigram"
_TOKENIZERS = {WORD_INDEX: "unicode61", TRIGRAM_INDEX: "trigram"}


@dataclass(frozen=True, slots=True)
class SearchSupport:
    """Which full-text indexes this SQLite build can maintain."""

    words: bool
    trigrams: bool

    def wanted(self) -> tuple[str, ...]:
        return tuple(name for name, ok in ((WORD_INDEX, self.words), (TRIGRAM_INDEX, self.trigrams)) if ok)


@functools.lru_cache(maxsize=1)
def detect_search_support() -> SearchSupport:
    """Probe FTS5 and its trigram tokenizer once per process, in a throw-away memory database."""
    probe = sqlite3.connect(":memory:")
    try:
        words = _can_execute(probe, "CREATE VIRTUAL TABLE probe_words USING fts5(x)")
        trigrams = words and _can_execute(
            probe, "CREATE VIRTUAL TABLE probe_trigrams USING fts5(x, tokenize='trigram')"
        )
    finally:
        probe.close()
    return SearchSupport(words=words, trigrams=trigrams)


def _can_execute(conn: sqlite3.Connection, sql: str) -> bool:
    try:
        conn.execute(sql)
    except sqlite3.OperationalError:
        return False
    return True


# --- schema -------------------------------------------------------------------------------------
#
# Forward migrations: MIGRATIONS[n] brings a database from user_version n to n + 1. All pending
# steps run in one BEGIN IMMEDIATE transaction, so a crash mid-upgrade leaves the old version and
# concurrent openers wait and then find the work done. Steps must stay additive (new tables,
# columns with defaults, indexes) so an older acp-hermes still running in another window keeps
# working on the upgraded file; a step that rewrites stored records (4) comes with a read-time
# upgrade for what such a process keeps writing.

_SCHEMA_V1 = (
    """CREATE TABLE IF NOT EXISTS state_meta (
        key TEXT PRIMARY KEY,
        value TEXT
    )""",
    # Big text columns come last so reading the small ones never walks overflow pages.
    """CREATE TABLE IF NOT EXISTS sessions (
        id TEXT PRIMARY KEY,
        source TEXT NOT NULL DEFAULT 'acp',
        model TEXT,
        parent_session_id TEXT REFERENCES sessions(id) ON DELETE SET NULL,
        started_at REAL NOT NULL,
        updated_at REAL NOT NULL,
        ended_at REAL,
        end_reason TEXT,
        message_count INTEGER NOT NULL DEFAULT 0,
        tool_call_count INTEGER NOT NULL DEFAULT 0,
        input_tokens INTEGER NOT NULL DEFAULT 0,
        output_tokens INTEGER NOT NULL DEFAULT 0,
        cache_read_tokens INTEGER NOT NULL DEFAULT 0,
        cache_write_tokens INTEGER NOT NULL DEFAULT 0,
        reasoning_tokens INTEGER NOT NULL DEFAULT 0,
        api_call_count INTEGER NOT NULL DEFAULT 0,
        estimated_cost_usd REAL NOT NULL DEFAULT 0,
        cwd TEXT,
        mode TEXT,
        title TEXT,
        archived INTEGER NOT NULL DEFAULT 0,
        additional_directories TEXT NOT NULL DEFAULT '[]',
        model_config TEXT NOT NULL DEFAULT '{}',
        system_prompt TEXT
    )""",
    # Roles are checked in Python, not with CHECK: SQLite cannot relax a CHECK without a rebuild.
    """CREATE TABLE IF NOT EXISTS messages (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
        role TEXT NOT NULL,
        tool_call_id TEXT,
        tool_name TEXT,
        timestamp REAL NOT NULL,
        token_count INTEGER,
        finish_reason TEXT,
        active INTEGER NOT NULL DEFAULT 1,
        compacted INTEGER NOT NULL DEFAULT 0,
        content TEXT NOT NULL DEFAULT '',
        tool_calls TEXT,
        reasoning TEXT,
        payload TEXT,
        display TEXT
    )""",
    # The rowid (= id) is the implicit last key of every index, so this one also serves
    # "WHERE session_id = ? ORDER BY id" without a sort.
    "CREATE INDEX IF NOT EXISTS idx_messages_session ON messages(session_id)",
    "CREATE INDEX IF NOT EXISTS idx_sessions_recent ON sessions(updated_at, id)",
    "CREATE INDEX IF NOT EXISTS idx_sessions_cwd_recent ON sessions(cwd, updated_at, id)",
    "CREATE INDEX IF NOT EXISTS idx_sessions_parent ON sessions(parent_session_id)",
)


def _migrate_to_v1(conn: sqlite3.Connection, support: SearchSupport) -> None:
    for statement in _SCHEMA_V1:
        conn.execute(statement)


def _migrate_to_v2(conn: sqlite3.Connection, support: SearchSupport) -> None:
    """Full-text search over every message, including those written before this version."""
    sync_search_index(conn, support)


def _migrate_to_v3(conn: sqlite3.Connection, support: SearchSupport) -> None:
    """The trigram index's view and triggers with the cheaper CJK test: the same rows qualify, so
    the index itself stays as it is. Objects this build does not maintain are left alone."""
    existing = schema_names(conn)
    ddl = _index_ddl(TRIGRAM_INDEX)
    view = f"{TRIGRAM_INDEX}_source"
    triggers = [name for name in _trigger_names(TRIGRAM_INDEX) if name in existing]
    for name in triggers:
        conn.execute(f"DROP TRIGGER {name}")
    if view in existing:
        conn.execute(f"DROP VIEW {view}")
        conn.execute(ddl[view])
    for name in triggers:
        conn.execute(ddl[name])


def _migrate_to_v4(conn: sqlite3.Connection, support: SearchSupport) -> None:
    """Display records in the agent's own field names (``memory.row_format``); the indexed
    columns are untouched, so the full-text indexes need no work."""
    last_id = 0
    while True:  # in pages, so a big database is not held in memory at once
        rows = conn.execute(
            "SELECT id, role, display FROM messages WHERE id > ? AND display IS NOT NULL ORDER BY id LIMIT 2000",
            (last_id,),
        ).fetchall()
        if not rows:
            return
        updates = []
        for message_id, role, text in rows:
            try:
                display = json.loads(text)
            except ValueError:
                continue
            if row_format.is_legacy(role, display):
                encoded = json.dumps(row_format.upgrade(role, display), ensure_ascii=False, separators=(",", ":"))
                updates.append((encoded, message_id))
        conn.executemany("UPDATE messages SET display = ? WHERE id = ?", updates)
        last_id = rows[-1][0]


MIGRATIONS: tuple[Callable[[sqlite3.Connection, SearchSupport], None], ...] = (
    _migrate_to_v1,
    _migrate_to_v2,
    _migrate_to_v3,
    _migrate_to_v4,
)
SCHEMA_VERSION = len(MIGRATIONS)


# --- full-text search ---------------------------------------------------------------------------
#
# Two FTS5 indexes: unicode61 (words, ranked by bm25) over every message, and trigram
# (substrings) over the messages that contain CJK text, where it is the only way to find a word
# inside a run without spaces. Queries are routed the same way (memory.fts_query): CJK queries
# go to the trigram index, everything else to the word index. Limiting the trigram index to CJK
# messages is deliberate: over all messages it was two thirds of the file and of the cost of an
# append, for substring matches on Latin text that no query is routed to.
#
# Both are *external-content* tables over a view of ``messages``:
#   * a regular FTS5 table keeps its own copy of every document, and two of them would store
#     the transcript text three times (1M messages: gigabytes more);
#   * a contentless table stores nothing but cannot produce snippet() and, before SQLite 3.43,
#     cannot delete rows;
#   * external content stores only the index; snippet() reads the text back through the view,
#     and triggers keep the index in step (a delete must be given the old text, which the
#     triggers recompute from the old row with the same expression).
# The indexed text is the message content plus the tool name plus the tool calls (names and
# arguments), so tools and their arguments are searchable. ``detail=full`` on both: trigram
# matches of more than three characters are phrase queries, which detail=none/column refuse.
#
# Segment merging: every write transaction adds a small segment per index, and segments must be
# merged or queries slow down. Not inside the append: FTS5 merges a term's whole doclist in one
# step, so once a merge reaches a big segment, one step that meets a common word rewrites
# thousands of pages whatever quantum is asked for (measured on 1M messages: 16-page quanta per
# append gave p50 1.3 ms, p99 15 ms, max 100 ms for the thousands of appends a big merge lasts;
# 4-page quanta p99 5-15 ms). FTS5's automerge, which also merges inside the write, is off.
# Instead SessionDB merges once its process has stopped writing for a moment, in short
# transactions of its own (``merge_index_segments``). During a long burst of writes FTS5's crisis
# merge (a level reaching 16 segments is merged inside the write that fills it: a millisecond or
# two for the small levels a burst fills) keeps the segment count bounded. No periodic
# 'optimize' either: on a big index it rewrites every segment while holding the write lock.
#
# Changing the indexed text or the CJK ranges changes which tokens a delete must remove: that
# needs a migration that drops and rebuilds the indexes.


def _indexed_text_sql(row: str) -> str:
    """The text indexed for one message row, as an SQL expression over ``row``'s columns.

    FTS5 reads external content with virtual tables forbidden, so json_each() cannot pick the
    names and arguments out of ``tool_calls``; instead the JSON is indexed with its three fixed
    keys blanked out (the writer emits compact JSON, so they appear exactly as ``"name":``).
    """
    calls = f"coalesce({row}.tool_calls, '')"
    for key in ("id", "name", "arguments"):
        calls = f"replace({calls}, '\"{key}\":', ' ')"
    return f"coalesce({row}.content, '') || ' ' || coalesce({row}.tool_name, '') || ' ' || {calls}"


def _index_condition_sql(table: str, row: str) -> str:
    """Which messages an index holds, as an SQL condition over ``row``.

    The GLOB re-reads its character class at every character (~60 us for a typical message,
    a quarter of an append), so ASCII-only text, most messages, is ruled out first by comparing
    its length in bytes and in characters: every CJK character takes three or four bytes.
    """
    if table == TRIGRAM_INDEX:
        text = _indexed_text_sql(row)
        return f"(length(CAST(({text}) AS BLOB)) > length({text}) AND ({text}) GLOB '{CJK_GLOB}')"
    return "1"


def _trigger_names(table: str) -> tuple[str, ...]:
    return (f"{table}_insert", f"{table}_delete", f"{table}_update")


def _index_ddl(table: str) -> dict[str, str]:
    """Every schema object one index needs, by name, in creation order: view, table, triggers."""
    view = f"{table}_source"
    insert = (
        f"INSERT INTO {table}(rowid, content) SELECT new.id, {_indexed_text_sql('new')} "
        f"WHERE {_index_condition_sql(table, 'new')};"
    )
    delete = (
        f"INSERT INTO {table}({table}, rowid, content) SELECT 'delete', old.id, {_indexed_text_sql('old')} "
        f"WHERE {_index_condition_sql(table, 'old')};"
    )
    on_insert, on_delete, on_update = _trigger_names(table)
    return {
        view: (
            f"CREATE VIEW {view}(id, content) AS SELECT m.id, {_indexed_text_sql('m')} "
            f"FROM messages AS m WHERE {_index_condition_sql(table, 'm')}"
        ),
        table: (
            f"CREATE VIRTUAL TABLE {table} USING fts5(content, content='{view}', content_rowid='id', "
            f"tokenize='{_TOKENIZERS[table]}', detail=full)"
        ),
        on_insert: f"CREATE TRIGGER {on_insert} AFTER INSERT ON messages BEGIN {insert} END",
        on_delete: f"CREATE TRIGGER {on_delete} AFTER DELETE ON messages BEGIN {delete} END",
        on_update: (
            f"CREATE TRIGGER {on_update} AFTER UPDATE OF content, tool_name, tool_calls ON messages "
            f"BEGIN {delete} {insert} END"
        ),
    }


def schema_names(conn: sqlite3.Connection) -> set[str]:
    return {row[0] for row in conn.execute("SELECT name FROM sqlite_master")}


def search_out_of_step(names: set[str], support: SearchSupport) -> bool:
    """Whether sync_search_index has work to do (checked without taking the write lock)."""
    for table in (WORD_INDEX, TRIGRAM_INDEX):
        if table in support.wanted() and any(name not in names for name in _index_ddl(table)):
            return True
        if table not in support.wanted() and any(name in names for name in _trigger_names(table)):
            return True
    return False


def sync_search_index(conn: sqlite3.Connection, support: SearchSupport) -> None:
    """Make the index objects match what this SQLite build supports.

    Missing pieces are created and the index rebuilt from ``messages`` (an index without its
    triggers may have missed writes). Triggers of an index this build cannot maintain are
    dropped, so message writes keep working and only search degrades; a later process with
    full support finds them missing and rebuilds.
    """
    existing = schema_names(conn)
    for table in (WORD_INDEX, TRIGRAM_INDEX):
        if table not in support.wanted():
            for name in _trigger_names(table):
                if name in existing:
                    conn.execute(f"DROP TRIGGER {name}")
            continue
        ddl = _index_ddl(table)
        missing = [name for name in ddl if name not in existing]
        if not missing:
            continue
        for name in missing:
            conn.execute(ddl[name])
        if table in missing:
            conn.execute(f"INSERT INTO {table}({table}, rank) VALUES ('automerge', 0)")
        log.info("building full-text index %s", table)
        conn.execute(f"INSERT INTO {table}({table}) VALUES ('rebuild')")
        # With automerge off the rebuild leaves hundreds of segments; merged now, in one pass,
        # rather than by the idle-time merges of the next few sessions.
        conn.execute(f"INSERT INTO {table}({table}) VALUES ('optimize')")


def merge_index_segments(conn: sqlite3.Connection, tables: Iterable[str], pages: int) -> bool:
    """One incremental merge step of about ``pages`` leaf pages per index; whether any had work.

    'merge' picks the level with the most segments (at least 'usermerge', 4) or resumes the merge
    in progress. FTS5 counts the command itself as one change and every row it rewrites as more,
    so a total_changes delta of two or more means segments were merged. Runs in the caller's
    transaction.
    """
    worked = False
    for table in tables:
        before = conn.total_changes
        conn.execute(f"INSERT INTO {table}({table}, rank) VALUES ('merge', ?)", (pages,))
        worked = worked or conn.total_changes - before >= 2
    return worked
