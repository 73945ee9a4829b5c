"""SessionDB: every session and message, in one SQLite file shared by all acp-hermes processes.

Each editor window runs its own acp-hermes process and they all write ``state.db`` at the same
time, so the design is built around short write transactions: WAL (readers never block the
writer), ``BEGIN IMMEDIATE`` (a writer takes the write lock up front instead of failing half way),
a short SQLite busy timeout plus application-level retries with random jitter (several processes
waiting on one lock do not wake up in lock-step), and a passive checkpoint every few dozen writes
so the WAL stays small even when another process always has a reader open.

Transcripts are append-only: one row per message, written as it happens (invariant 5). Column
names follow Hermes's ``state.db`` where the meaning is the same (reference/hermes.md §19).

The API is synchronous on purpose (stdlib ``sqlite3``); async callers use
``anyio.to_thread.run_sync``. One connection per ``SessionDB``, guarded by a lock.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import functools
import json
import logging
import random
import sqlite3
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any, TypeVar

from memory.fts_query import CJK_GLOB

log = logging.getLogger(__name__)

T = TypeVar("T")

BUSY_TIMEOUT_SECONDS = 1.0
WRITE_ATTEMPTS = 15
RETRY_JITTER_SECONDS = (0.020, 0.150)
CHECKPOINT_EVERY_WRITES = 50
WAL_RESTART_FRAMES = 8_192
INDEX_MERGE_PAGES_PER_APPEND = 16
SNIPPET_OPEN = ">>>"
SNIPPET_CLOSE = "<<<"
SNIPPET_ELLIPSIS = "..."
SNIPPET_TOKENS = 32
ROLES = frozenset({"user", "assistant", "tool"})

WORD_INDEX = "messages_fts"
TRIGRAM_INDEX = "messages_fts_trigram"
_TOKENIZERS = {WORD_INDEX: "unicode61", TRIGRAM_INDEX: "trigram"}

_SESSION_COLUMNS = (
    "id",
    "source",
    "model",
    "model_config",
    "system_prompt",
    "parent_session_id",
    "started_at",
    "updated_at",
    "ended_at",
    "end_reason",
    "message_count",
    "tool_call_count",
    "input_tokens",
    "output_tokens",
    "cache_read_tokens",
    "cache_write_tokens",
    "reasoning_tokens",
    "api_call_count",
    "estimated_cost_usd",
    "cwd",
    "mode",
    "additional_directories",
    "title",
    "archived",
)
_MESSAGE_COLUMNS = (
    "id",
    "session_id",
    "role",
    "content",
    "tool_call_id",
    "tool_calls",
    "tool_name",
    "timestamp",
    "token_count",
    "finish_reason",
    "reasoning",
    "active",
    "compacted",
    "payload",
    "display",
)
_SESSION_SELECT = "SELECT " + ", ".join(_SESSION_COLUMNS) + " FROM sessions"
_MESSAGE_SELECT = "SELECT " + ", ".join(f"m.{name}" for name in _MESSAGE_COLUMNS) + " FROM messages AS m"
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


class SessionDBError(Exception):
    """Base of the errors SessionDB raises on its own (SQLite errors pass through unchanged)."""


class SessionNotFound(SessionDBError, LookupError):
    """The session id does not exist (never created, or deleted)."""


class SessionExists(SessionDBError):
    """A session with this id already exists."""


@dataclass(frozen=True, slots=True)
class SessionRecord:
    """One row of ``sessions``; JSON columns are decoded."""

    id: str
    source: str
    model: str | None
    model_config: dict[str, Any]
    system_prompt: str | None
    parent_session_id: str | None
    started_at: float
    updated_at: float
    ended_at: float | None
    end_reason: str | None
    message_count: int
    tool_call_count: int
    input_tokens: int
    output_tokens: int
    cache_read_tokens: int
    cache_write_tokens: int
    reasoning_tokens: int
    api_call_count: int
    estimated_cost_usd: float
    cwd: str | None
    mode: str | None
    additional_directories: list[str]
    title: str | None
    archived: bool


@dataclass(frozen=True, slots=True)
class MessageRecord:
    """One row of ``messages``; ``tool_calls``, ``payload`` and ``display`` are decoded JSON."""

    id: int
    session_id: str
    role: str
    content: str
    tool_call_id: str | None
    tool_calls: list[dict[str, Any]] | None
    tool_name: str | None
    timestamp: float
    token_count: int | None
    finish_reason: str | None
    reasoning: str | None
    active: bool
    compacted: bool
    payload: Any
    display: Any


@dataclass(frozen=True, slots=True)
class SearchHit:
    """One matching message with its snippet (matches wrapped in SNIPPET_OPEN/SNIPPET_CLOSE)."""

    message_id: int
    session_id: str
    role: str
    snippet: str
    rank: float
    timestamp: float
    tool_name: str | None
    session_title: str | None
    session_cwd: str | None
    session_started_at: float


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
# working on the upgraded file.

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
    _sync_search_index(conn, support)


MIGRATIONS: tuple[Callable[[sqlite3.Connection, SearchSupport], None], ...] = (
    _migrate_to_v1,
    _migrate_to_v2,
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
# merged or queries slow down. FTS5's automerge does it in quanta of 64 x (number of levels) pages
# (hundreds of pages on a big index), which made one append in twenty take 20-100 ms. Instead
# automerge is off and every append merges at most INDEX_MERGE_PAGES_PER_APPEND pages ('merge'
# resumes where the previous one stopped), which keeps up with the append rate and bounds the
# cost of any one append. FTS5's crisis merge stays on as a backstop. No periodic 'optimize'
# either: on a big index it rewrites every segment while holding the write lock.
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
    """Which messages an index holds, as an SQL condition over ``row``."""
    if table == TRIGRAM_INDEX:
        return f"({_indexed_text_sql(row)}) GLOB '{CJK_GLOB}'"
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


def _schema_names(conn: sqlite3.Connection) -> set[str]:
    return {row[0] for row in conn.execute("SELECT name FROM sqlite_master")}


def _search_out_of_step(names: set[str], support: SearchSupport) -> bool:
    """Whether _sync_search_index has work to do (checked without taking the write lock)."""
    for table in (WORD_INDEX, TRIGRAM_INDEX):
        if table in support.wanted() and any(name not in names for name in _index_ddl(table)):
            return True
        if table not in support.wanted() and any(name in names for name in _trigger_names(table)):
            return True
    return False


def _sync_search_index(conn: sqlite3.Connection, support: SearchSupport) -> None:
    """Make the index objects match what this SQLite build supports.

    Missing pieces are created and the index rebuilt from ``messages`` (an index without its
    triggers may have missed writes). Triggers of an index this build cannot maintain are
    dropped, so message writes keep working and only search degrades; a later process with
    full support finds them missing and rebuilds.
    """
    existing = _schema_names(conn)
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


# --- encoding helpers ---------------------------------------------------------------------------


def _dump_json(value: Any) -> str | None:
    return None if value is None else json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _load_json(text: str | None, default: Any = None) -> Any:
    if text is None:
        return default
    try:
        return json.loads(text)
    except ValueError:
        log.warning("undecodable JSON column value ignored")
        return default


def _session_from_row(row: Sequence[Any]) -> SessionRecord:
    values = dict(zip(_SESSION_COLUMNS, row, strict=True))
    values["model_config"] = _load_json(values["model_config"], {})
    values["additional_directories"] = _load_json(values["additional_directories"], [])
    values["archived"] = bool(values["archived"])
    return SessionRecord(**values)


def _message_from_row(row: Sequence[Any]) -> MessageRecord:
    values = dict(zip(_MESSAGE_COLUMNS, row, strict=True))
    values["tool_calls"] = _load_json(values["tool_calls"])
    values["payload"] = _load_json(values["payload"])
    values["display"] = _load_json(values["display"])
    values["active"] = bool(values["active"])
    values["compacted"] = bool(values["compacted"])
    return MessageRecord(**values)


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


def _is_contention(exc: sqlite3.OperationalError) -> bool:
    message = str(exc).lower()
    return "locked" in message or "busy" in message


def _id_list(values: Iterable[Any]) -> str:
    """A JSON array for ``IN (SELECT value FROM json_each(?))``: one parameter, any length."""
    return json.dumps(list(values))


# --- the database -------------------------------------------------------------------------------


class _Checkpointer:
    """Copies the WAL back into the database on a thread and connection of its own.

    A passive checkpoint of fifty appends' worth of WAL (a few MB plus an fsync) takes tens of
    milliseconds; done inline it would stall one append in fifty. In WAL mode a checkpoint runs
    alongside writers, so here no write waits for one. The thread starts on first use.

    The WAL only starts over from its beginning when a write begins after a complete
    checkpoint; a steady stream of writes (bulk work, a benchmark) can keep that from happening.
    ``wal_frames`` reports the WAL's length so the writer can checkpoint inline once it is long.
    """

    def __init__(self, path: Path) -> None:
        self._path = path
        self._wake = threading.Event()
        self._stopping = False
        self._thread: threading.Thread | None = None
        self.wal_frames = 0

    def request(self) -> None:
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="state.db checkpoint", daemon=True)
            self._thread.start()
        self._wake.set()

    def stop(self) -> None:
        if self._thread is not None:
            self._stopping = True
            self._wake.set()
            self._thread.join()

    def _run(self) -> None:
        conn = sqlite3.connect(self._path, timeout=BUSY_TIMEOUT_SECONDS, isolation_level=None)
        try:
            while True:
                self._wake.wait()
                self._wake.clear()
                if self._stopping:
                    return
                try:
                    self.wal_frames = conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()[1]
                except sqlite3.Error as exc:
                    log.debug("background checkpoint skipped: %s", exc)
        finally:
            conn.close()



class SessionDB:
    """The shared session store. Thread-safe; every method is one short statement or transaction."""

    def __init__(self, path: Path, *, search_support: SearchSupport | None = None) -> None:
        """Open (creating and migrating if needed) the database at ``path``.

        ``search_support`` defaults to what this SQLite build offers; passing less turns
        full-text indexes off for this file (what a build without FTS5 does on its own).
        """
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._support = search_support or detect_search_support()
        self._lock = threading.Lock()
        self._writes = 0
        self._closed = False
        self._checkpointer = _Checkpointer(self.path)
        self._conn = sqlite3.connect(
            self.path, timeout=BUSY_TIMEOUT_SECONDS, isolation_level=None, check_same_thread=False
        )
        try:
            self._retrying(self._configure)
            self._retrying(self._migrate)
            self._search = self._retrying(self._prepare_search)
        except BaseException:
            self._conn.close()
            raise

    # -- lifecycle

    def close(self) -> None:
        """Checkpoint and truncate the WAL (best effort: another process may be reading) and close."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            self._checkpointer.stop()
            with contextlib.suppress(sqlite3.Error):
                self._conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()
            self._conn.close()

    def __enter__(self) -> SessionDB:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    @property
    def search_available(self) -> bool:
        """Word search works (FTS5 present)."""
        return WORD_INDEX in self._search

    @property
    def trigram_available(self) -> bool:
        """Substring / CJK search works (trigram tokenizer present)."""
        return TRIGRAM_INDEX in self._search

    # -- state_meta

    def get_meta(self, key: str) -> str | None:
        row = self._read(lambda conn: conn.execute("SELECT value FROM state_meta WHERE key = ?", (key,)).fetchone())
        return None if row is None else row[0]

    def set_meta(self, key: str, value: str | None) -> None:
        self._write(
            lambda conn: conn.execute(
                "INSERT INTO state_meta(key, value) VALUES (?, ?) "
                "ON CONFLICT(key) DO UPDATE SET value = excluded.value",
                (key, value),
            )
        )

    # -- sessions

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
            if _fetch_session(conn, session_id) is not None:
                raise SessionExists(session_id)
            if parent_session_id is not None and _fetch_session(conn, parent_session_id) is None:
                raise SessionNotFound(parent_session_id)
            _insert_session(
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
            return _require_session(conn, session_id)

        return self._write(work)

    def get_session(self, session_id: str) -> SessionRecord | None:
        return self._read(lambda conn: _fetch_session(conn, session_id))

    def update_session(self, session_id: str, **fields: Any) -> None:
        """Set metadata columns; unknown names raise ValueError. Does not count as activity."""
        unknown = set(fields) - _UPDATABLE_SESSION_FIELDS
        if unknown:
            raise ValueError(f"cannot update session field(s): {', '.join(sorted(unknown))}")
        if not fields:
            return
        values = dict(fields)
        if "model_config" in values:
            values["model_config"] = _dump_json(values["model_config"] or {})
        if "additional_directories" in values:
            values["additional_directories"] = _dump_json(list(values["additional_directories"]))
        if "archived" in values:
            values["archived"] = int(bool(values["archived"]))
        assignments = ", ".join(f"{name} = ?" for name in values)

        def work(conn: sqlite3.Connection) -> None:
            cursor = conn.execute(
                f"UPDATE sessions SET {assignments} WHERE id = ?", (*values.values(), session_id)
            )
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
    ) -> tuple[list[SessionRecord], str | None]:
        """Newest activity first; returns a page and the cursor of the next one (None at the end).

        Keyset paging on (updated_at, id): a page never repeats or skips a session that did not
        change between calls, however deep the page.
        """
        if limit < 1:
            raise ValueError("limit must be at least 1")
        conditions: list[str] = []
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
        sql = f"{_SESSION_SELECT}{where} ORDER BY updated_at DESC, id DESC LIMIT ?"
        rows = self._read(lambda conn: conn.execute(sql, (*params, limit + 1)).fetchall())
        records = [_session_from_row(row) for row in rows[:limit]]
        next_cursor = None
        if len(rows) > limit:
            last = records[-1]
            next_cursor = _encode_cursor(last.updated_at, last.id)
        return records, next_cursor

    def recent_sessions(self, *, limit: int = 10, exclude: Iterable[str] = frozenset()) -> list[SessionRecord]:
        """The most recently active sessions that have messages, leaving out ``exclude``."""
        sql = (
            f"{_SESSION_SELECT} WHERE message_count > 0 AND id NOT IN (SELECT value FROM json_each(?)) "
            "ORDER BY updated_at DESC, id DESC LIMIT ?"
        )
        rows = self._read(lambda conn: conn.execute(sql, (_id_list(exclude), limit)).fetchall())
        return [_session_from_row(row) for row in rows]

    def delete_session(self, session_id: str) -> bool:
        """Delete a session, its messages and their index entries; children lose their parent link."""
        return self._write(
            lambda conn: conn.execute("DELETE FROM sessions WHERE id = ?", (session_id,)).rowcount > 0
        )

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
    ) -> SessionRecord:
        """A new session whose parent is ``source_id``, holding a copy of its active messages.

        Settings not given are inherited. The copy is one INSERT … SELECT in the same
        transaction as the new row, so a fork is atomic and fast however long the source is.
        """
        now = time.time()

        def work(conn: sqlite3.Connection) -> SessionRecord:
            source = _require_session(conn, source_id)
            if _fetch_session(conn, new_id) is not None:
                raise SessionExists(new_id)
            _insert_session(
                conn,
                session_id=new_id,
                source=source.source,
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
            copied = [name for name in _MESSAGE_COLUMNS if name not in ("id", "session_id", "active")]
            conn.execute(
                f"INSERT INTO messages (session_id, active, {', '.join(copied)}) "
                f"SELECT ?, 1, {', '.join(copied)} FROM messages "
                "WHERE session_id = ? AND active = 1 ORDER BY id",
                (new_id, source_id),
            )
            conn.execute(
                "UPDATE sessions SET (message_count, tool_call_count) = "
                "(SELECT count(*), coalesce(sum(json_array_length(tool_calls)), 0) "
                " FROM messages WHERE session_id = ?) WHERE id = ?",
                (new_id, new_id),
            )
            return _require_session(conn, new_id)

        return self._write(work)

    def lineage(self, session_id: str) -> set[str]:
        """The session, its ancestors (parent chain) and all its descendants."""
        sql = """
            WITH RECURSIVE
                ancestors(id) AS (
                    SELECT ?
                    UNION
                    SELECT s.parent_session_id FROM sessions AS s JOIN ancestors AS a ON s.id = a.id
                    WHERE s.parent_session_id IS NOT NULL
                ),
                descendants(id) AS (
                    SELECT ?
                    UNION
                    SELECT s.id FROM sessions AS s JOIN descendants AS d ON s.parent_session_id = d.id
                )
            SELECT id FROM ancestors UNION SELECT id FROM descendants
        """
        rows = self._read(lambda conn: conn.execute(sql, (session_id, session_id)).fetchall())
        return {row[0] for row in rows}

    # -- messages

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
        """
        if role not in ROLES:
            raise ValueError(f"unknown message role {role!r}; expected one of {sorted(ROLES)}")
        when = time.time() if timestamp is None else timestamp
        row = (
            session_id,
            role,
            content,
            tool_call_id,
            _dump_json(tool_calls),
            tool_name,
            when,
            token_count,
            finish_reason,
            reasoning,
            _dump_json(payload),
            _dump_json(display),
        )

        def work(conn: sqlite3.Connection) -> int:
            bumped = conn.execute(
                "UPDATE sessions SET message_count = message_count + 1, "
                "tool_call_count = tool_call_count + ?, updated_at = max(updated_at, ?) WHERE id = ?",
                (len(tool_calls or ()), when, session_id),
            )
            if bumped.rowcount == 0:
                raise SessionNotFound(session_id)
            inserted = conn.execute(
                "INSERT INTO messages (session_id, role, content, tool_call_id, tool_calls, tool_name, "
                "timestamp, token_count, finish_reason, reasoning, payload, display) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                row,
            )
            for table in self._search:
                conn.execute(
                    f"INSERT INTO {table}({table}, rank) VALUES ('merge', ?)", (INDEX_MERGE_PAGES_PER_APPEND,)
                )
            return int(inserted.lastrowid or 0)

        return self._write(work)

    def messages(self, session_id: str, *, active_only: bool = True) -> list[MessageRecord]:
        """The session's messages in the order they were written."""
        sql = f"{_MESSAGE_SELECT} WHERE m.session_id = ?{' AND m.active = 1' if active_only else ''} ORDER BY m.id"
        rows = self._read(lambda conn: conn.execute(sql, (session_id,)).fetchall())
        return [_message_from_row(row) for row in rows]

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
            {_MESSAGE_SELECT} JOIN ordered AS o ON o.id = m.id
            WHERE EXISTS (
                SELECT 1 FROM anchors AS a WHERE o.position BETWEEN a.position - ? AND a.position + ?
            )
            ORDER BY m.id
        """
        params = (session_id, _id_list(message_ids), window, window)
        rows = self._read(lambda conn: conn.execute(sql, params).fetchall())
        return [_message_from_row(row) for row in rows]

    # -- search

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

        Runs in two steps: rank every match and keep the top ``limit`` ids, then build snippets
        for those only (snippet() re-reads and re-tokenizes the text, far too slow to do for
        thousands of matches). Rewound messages (active = 0) are left out unless compacted.
        Returns [] when the needed index is unavailable or the expression is empty.
        """
        table = TRIGRAM_INDEX if trigram else WORD_INDEX
        if not match.strip() or table not in self._search or limit < 1:
            return []
        conditions = [f"{table} MATCH ?", "(m.active = 1 OR m.compacted = 1)"]
        params: list[Any] = [match]
        if role_filter:
            conditions.append("m.role IN (SELECT value FROM json_each(?))")
            params.append(_id_list(role_filter))
        excluded = list(exclude_sessions)
        if excluded:
            conditions.append("m.session_id NOT IN (SELECT value FROM json_each(?))")
            params.append(_id_list(excluded))
        ranked_sql = (
            f"SELECT {table}.rowid, {table}.rank FROM {table} JOIN messages AS m ON m.id = {table}.rowid "
            f"WHERE {' AND '.join(conditions)} ORDER BY {table}.rank LIMIT ?"
        )
        snippet_sql = (
            f"SELECT {table}.rowid, snippet({table}, 0, ?, ?, ?, ?), m.session_id, m.role, m.timestamp, "
            f"m.tool_name, s.title, s.cwd, s.started_at FROM {table} "
            f"JOIN messages AS m ON m.id = {table}.rowid JOIN sessions AS s ON s.id = m.session_id "
            f"WHERE {table} MATCH ? AND {table}.rowid IN (SELECT value FROM json_each(?))"
        )

        def work(conn: sqlite3.Connection) -> list[SearchHit]:
            ranked = conn.execute(ranked_sql, (*params, limit)).fetchall()
            if not ranked:
                return []
            snippet_params = (SNIPPET_OPEN, SNIPPET_CLOSE, SNIPPET_ELLIPSIS, SNIPPET_TOKENS, match)
            ids = _id_list(message_id for message_id, _ in ranked)
            details = {row[0]: row[1:] for row in conn.execute(snippet_sql, (*snippet_params, ids))}
            hits = []
            for message_id, rank in ranked:
                found = details.get(message_id)
                if found is None:  # deleted between the two statements
                    continue
                snippet, session_id, role, timestamp, tool_name, title, cwd, started_at = found
                hits.append(
                    SearchHit(
                        message_id=message_id,
                        session_id=session_id,
                        role=role,
                        snippet=snippet,
                        rank=rank,
                        timestamp=timestamp,
                        tool_name=tool_name,
                        session_title=title,
                        session_cwd=cwd,
                        session_started_at=started_at,
                    )
                )
            return hits

        return self._read(work)

    # -- plumbing

    def _configure(self) -> None:
        """WAL, foreign keys, NORMAL sync (durable across process crashes); checkpoints are ours."""
        conn = self._conn
        mode = conn.execute("PRAGMA journal_mode").fetchone()[0]
        if str(mode).lower() != "wal":
            mode = conn.execute("PRAGMA journal_mode=WAL").fetchone()[0]
            if str(mode).lower() != "wal":
                log.warning("state.db could not switch to WAL (journal_mode=%s); concurrency will suffer", mode)
        conn.execute("PRAGMA foreign_keys=ON")
        conn.execute("PRAGMA synchronous=NORMAL")
        conn.execute("PRAGMA wal_autocheckpoint=0")

    def _migrate(self) -> None:
        version = self._user_version()
        if version > SCHEMA_VERSION:
            log.warning("state.db schema %d is newer than this build's %d; using it as is", version, SCHEMA_VERSION)
        if version >= SCHEMA_VERSION:
            return

        def work(conn: sqlite3.Connection) -> None:
            version = self._user_version()  # another process may have migrated meanwhile
            if version >= SCHEMA_VERSION:
                return
            for step in MIGRATIONS[version:]:
                step(conn, self._support)
            conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
            if version:
                log.info("state.db migrated from schema %d to %d", version, SCHEMA_VERSION)

        self._in_transaction(work)

    def _prepare_search(self) -> frozenset[str]:
        """Bring the index objects in step with this build (rarely needed); the usable indexes."""
        if _search_out_of_step(_schema_names(self._conn), self._support):
            self._in_transaction(lambda conn: _sync_search_index(conn, self._support))
        return frozenset(self._support.wanted())

    def _user_version(self) -> int:
        return int(self._conn.execute("PRAGMA user_version").fetchone()[0])

    def _in_transaction(self, work: Callable[[sqlite3.Connection], T]) -> T:
        """Run ``work`` in one BEGIN IMMEDIATE transaction; roll back on any error."""
        conn = self._conn
        conn.execute("BEGIN IMMEDIATE")
        try:
            result = work(conn)
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:
                with contextlib.suppress(sqlite3.Error):
                    conn.execute("ROLLBACK")
            raise
        return result

    def _retrying(self, action: Callable[[], T]) -> T:
        """Run ``action`` under the lock; on lock contention with other processes, wait and retry."""
        attempt = 1
        while True:
            with self._lock:
                try:
                    return action()
                except sqlite3.OperationalError as exc:
                    if attempt >= WRITE_ATTEMPTS or not _is_contention(exc):
                        raise
            log.debug("state.db busy (attempt %d of %d); retrying", attempt, WRITE_ATTEMPTS)
            attempt += 1
            time.sleep(random.uniform(*RETRY_JITTER_SECONDS))

    def _read(self, work: Callable[[sqlite3.Connection], T]) -> T:
        return self._retrying(lambda: work(self._conn))

    def _write(self, work: Callable[[sqlite3.Connection], T]) -> T:
        def attempt() -> T:
            result = self._in_transaction(work)
            self._after_write()
            return result

        return self._retrying(attempt)

    def _after_write(self) -> None:
        """Every few writes, have the WAL copied back into the database (PASSIVE, in the background).

        If the WAL has grown long anyway, checkpoint here, between this connection's own
        transactions, so its next write can start the WAL over (cheap: the background
        checkpoints have already copied all but the newest frames).
        """
        self._writes += 1
        if self._checkpointer.wal_frames > WAL_RESTART_FRAMES:
            self._checkpointer.wal_frames = 0
            with contextlib.suppress(sqlite3.Error):
                self._conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()
        elif self._writes % CHECKPOINT_EVERY_WRITES == 0:
            self._checkpointer.request()


def _fetch_session(conn: sqlite3.Connection, session_id: str) -> SessionRecord | None:
    row = conn.execute(f"{_SESSION_SELECT} WHERE id = ?", (session_id,)).fetchone()
    return None if row is None else _session_from_row(row)


def _require_session(conn: sqlite3.Connection, session_id: str) -> SessionRecord:
    record = _fetch_session(conn, session_id)
    if record is None:
        raise SessionNotFound(session_id)
    return record


def _insert_session(
    conn: sqlite3.Connection,
    *,
    session_id: str,
    source: str,
    model: str | None,
    mode: str | None,
    cwd: str | None,
    title: str | None,
    parent_session_id: str | None,
    now: float,
    additional_directories: list[str],
    model_config: dict[str, Any],
    system_prompt: str | None,
) -> None:
    conn.execute(
        "INSERT INTO sessions (id, source, model, mode, cwd, title, parent_session_id, started_at, "
        "updated_at, additional_directories, model_config, system_prompt) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (
            session_id,
            source,
            model,
            mode,
            cwd,
            title,
            parent_session_id,
            now,
            now,
            _dump_json(additional_directories),
            _dump_json(model_config or {}),
            system_prompt,
        ),
    )
