"""SessionDB: every session and message, in one SQLite file shared by all acp-hermes processes.

Each editor window runs its own acp-hermes process and they all write ``state.db`` at the same
time, so the design is built around short write transactions: WAL (readers never block the
writer), ``BEGIN IMMEDIATE`` (a writer takes the write lock up front instead of failing half way),
a short SQLite busy timeout plus application-level retries with random jitter (several processes
waiting on one lock do not wake up in lock-step), and a passive checkpoint every few dozen writes,
run on a background thread so no write waits for its fsync. Likewise the full-text indexes are
kept in step inside each write, but their segments are merged by a background thread once the
process has paused writing (``_IdleMerger``), so no append pays for a merge.

Transcripts are append-only: one row per message, written as it happens (invariant 5). Column
names follow Hermes's ``state.db`` where the meaning is the same (reference/hermes.md §19).

The API is synchronous on purpose (stdlib ``sqlite3``); async callers use
``anyio.to_thread.run_sync``. One connection per ``SessionDB``, guarded by a lock. The schema,
its migrations and the full-text indexes are defined in ``memory.session_schema``.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import json
import logging
import random
import sqlite3
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any, TypeVar

import orjson

from acp_hermes_memory import row_format
from acp_hermes_memory.fs import private_directory, private_file
from acp_hermes_memory.session_schema import (
    MIGRATIONS,
    SCHEMA_VERSION,
    TRIGRAM_INDEX,
    WORD_INDEX,
    SearchSupport,
    detect_search_support,
    merge_index_segments,
    schema_names,
    search_out_of_step,
    sync_search_index,
)
from acp_hermes_memory.values import value

log = logging.getLogger(__name__)

T = TypeVar("T")

BUSY_TIMEOUT_SECONDS = 1.0
WRITE_ATTEMPTS = 15
RETRY_JITTER_SECONDS = (0.020, 0.150)
CHECKPOINT_EVERY_WRITES = 50
WAL_RESTART_FRAMES = 8_192
INDEX_MERGE_IDLE_SECONDS = 1.0
INDEX_MERGE_PAGES_PER_STEP = 16
INDEX_MERGE_STEPS_PER_CHECKPOINT = 64
INDEX_MERGE_CONTENDED_PAUSE_SECONDS = (0.25, 0.75)
RANK_WINDOW = 5_000
SNIPPET_OPEN = ">>>"
SNIPPET_CLOSE = "<<<"
SNIPPET_ELLIPSIS = "..."
SNIPPET_TOKENS = 32
ROLES = frozenset({"user", "assistant", "tool"})
CONTINUATION_SOURCE = "compression"  # a session that continues its parent after context compression
SUBAGENT_SOURCE = "subagent"  # a child session delegate_task started; its parent is the session that delegated
REWOUND_SOURCE = "rewound"  # the messages a rewind took out of a conversation; its parent is the segment they left
_REWOUND_MARK = " (rewound)"  # after the title of that segment, as the branch's title
# Sessions that are not a conversation of their own (a fork of one is: it goes on by itself).
_NOT_OWN_CONVERSATIONS = (CONTINUATION_SOURCE, SUBAGENT_SOURCE, REWOUND_SOURCE)

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


def is_corruption(error: sqlite3.DatabaseError) -> bool:
    """Whether SQLite says the file itself is bad, as opposed to busy, locked or misused."""
    name = getattr(error, "sqlite_errorname", "")  # Python 3.11+
    if name in ("SQLITE_CORRUPT", "SQLITE_NOTADB"):
        return True
    message = str(error).lower()
    return "malformed" in message or "not a database" in message


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

    @property
    def subagent_label(self) -> str | None:
        """How listings and search results mark a subagent session: ``subagent of <the parent's id
        cut to 8>`` (``subagent`` once its parent is deleted); None for any other session."""
        if self.source != SUBAGENT_SOURCE:
            return None
        return f"subagent of {self.parent_session_id[:8]}" if self.parent_session_id else "subagent"

    @property
    def rewound_label(self) -> str | None:
        """How listings and search results mark a rewind's branch: ``rewound from <the id of the segment
        it came from cut to 8>`` (``rewound`` once that is deleted); None for any other session."""
        if self.source != REWOUND_SOURCE:
            return None
        return f"rewound from {self.parent_session_id[:8]}" if self.parent_session_id else "rewound"

    @property
    def label(self) -> str | None:
        """The mark of a session that is not a conversation of its own (``subagent_label``, ``rewound_label``)."""
        return self.subagent_label or self.rewound_label

    @property
    def bare_title(self) -> str | None:
        """The title to show before ``label``: a rewind's branch's without the `` (rewound)`` its label
        says better (``Fix it (rewound from 1a2b3c4d)``, not ``Fix it (rewound) (rewound from …)``)."""
        if self.source == REWOUND_SOURCE and self.title is not None and self.title.endswith(_REWOUND_MARK):
            return self.title.removesuffix(_REWOUND_MARK) or None
        return self.title


@value
class SubagentTotals:
    """What a session's subagents (at any depth) used, for its usage report."""

    sessions: int
    cost_usd: float
    input_tokens: int
    output_tokens: int
    cache_tokens: int = 0  # cache reads and writes together

    @property
    def tokens(self) -> int:
        """Every token they processed: input (cached or not) and output."""
        return self.input_tokens + self.output_tokens + self.cache_tokens


@dataclass(slots=True)
class MessageRecord:
    """One row of ``messages``; ``tool_calls``, ``payload`` and ``display`` are decoded JSON.

    Not frozen: a frozen dataclass sets each field through object.__setattr__, which made
    building the records of a 5,000-message session cost more than reading its rows.
    """

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


@value
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


@value
class NewMessage:
    """A message to store as part of a larger write (``continue_segment``): ``append_message``'s fields."""

    role: str
    content: str
    tool_call_id: str | None = None
    tool_name: str | None = None
    payload: Any = None
    display: Any = None


@value
class SegmentNews:
    """What changed in a segment since a process last read it (``segment_news``)."""

    ended: bool  # a compaction continued it in a new segment (in this process or another)
    message_ids: list[int]  # its messages stored after the row the process had read


# --- encoding helpers ---------------------------------------------------------------------------


def _dump_json(value: Any) -> str | None:
    return None if value is None else json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _load_json(text: str | None, default: Any = None) -> Any:
    if text is None:
        return default
    try:
        return orjson.loads(text)  # ~2.3x the standard library's speed: a 5,000-message load decodes 10,000 values
    except orjson.JSONDecodeError:
        pass
    try:  # what only the standard library reads back from its own output: lone surrogates, NaN
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
    """Positional on purpose (rows come in _MESSAGE_COLUMNS order): it runs once per message read."""
    (id_, session_id, role, content, tool_call_id, tool_calls, tool_name, timestamp) = row[:8]
    (token_count, finish_reason, reasoning, active, compacted, payload, display) = row[8:]
    return MessageRecord(
        id_,
        session_id,
        role,
        content,
        tool_call_id,
        _load_json(tool_calls),
        tool_name,
        timestamp,
        token_count,
        finish_reason,
        reasoning,
        bool(active),
        bool(compacted),
        _load_json(payload),
        row_format.upgrade(role, _load_json(display)),
    )


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


class _IdleMerger:
    """Merges the full-text indexes' segments once this process has stopped writing for a moment.

    Appends only add segments (see the notes in ``memory.session_schema``); merging them inside
    the append made the slowest appends slow. Here it waits until ``idle_seconds`` pass without a
    write from this process, then merges in steps of INDEX_MERGE_PAGES_PER_STEP pages, each its
    own transaction on a connection of its own, so readers never wait for it. Each step holds the
    SessionDB's write gate: a write of this process that arrives meanwhile waits for that one
    step (usually a millisecond or two) instead of sleeping in SQLite's busy handler, and stops
    the run; it resumes after the next quiet spell. When another process holds the write lock the
    step gives up at once and is retried after a jittered pause of at least a quiet spell.
    Opening counts as a write, so segments that earlier processes left unmerged are merged too.
    """

    def __init__(self, path: Path, tables: Sequence[str], gate: threading.Lock, idle_seconds: float) -> None:
        self._path = path
        self._tables = tuple(tables)
        self._gate = gate
        self._idle_seconds = idle_seconds
        self._changed = threading.Condition()
        self._writes = 0  # write notices from this process (two per write: as it starts and ends)
        self._settled_writes = 0  # of those, how many the merges have caught up with
        self._last_write = 0.0  # time.monotonic() of the latest notice
        self._not_before = 0.0  # time.monotonic() before which no merge starts (another process wrote)
        self._idle = True  # the thread waits for a write, not for a quiet spell or a merge step
        self._stopping = False
        self._thread: threading.Thread | None = None

    def note_write(self) -> None:
        """A write of this process starts or ends: stop merging, wait for the next quiet spell."""
        if not self._tables:
            return
        with self._changed:
            if self._stopping:
                return
            self._writes += 1
            self._last_write = time.monotonic()
            if self._idle:  # otherwise it notices on its own: waking it for every write costs the writer
                self._changed.notify_all()
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="state.db index merges", daemon=True)
                self._thread.start()

    def wait_until_settled(self, timeout: float | None) -> bool:
        with self._changed:
            self._changed.wait_for(lambda: self._stopping or self._settled_writes == self._writes, timeout)
            return self._settled_writes == self._writes

    def stop(self) -> None:
        with self._changed:
            self._stopping = True
            self._changed.notify_all()
            thread = self._thread
        if thread is not None:
            thread.join()

    def _run(self) -> None:
        try:
            # No busy timeout: while another process writes, merging can wait for a quieter moment.
            conn = sqlite3.connect(self._path, timeout=0, isolation_level=None)
        except sqlite3.Error as exc:
            log.warning("full-text index merges disabled for this process: %s", exc)
            with self._changed:
                self._stopping = True
                self._changed.notify_all()
            return
        try:
            while (writes := self._next_quiet_spell()) is not None:
                if self._merge_all(conn, writes):
                    with self._changed:
                        self._settled_writes = max(self._settled_writes, writes)
                        self._changed.notify_all()
        finally:
            conn.close()

    def _next_quiet_spell(self) -> int | None:
        """Wait for unmerged writes followed by ``idle_seconds`` without one; their count (None: stop)."""
        with self._changed:
            while not self._stopping:
                if self._settled_writes == self._writes:
                    self._idle = True
                    self._changed.wait()
                    self._idle = False
                    continue
                quiet_in = max(self._last_write + self._idle_seconds, self._not_before) - time.monotonic()
                if quiet_in <= 0:
                    return self._writes
                self._changed.wait(quiet_in)
            return None

    def _interrupted(self, writes: int) -> bool:
        with self._changed:
            return self._stopping or self._writes != writes

    def _merge_all(self, conn: sqlite3.Connection, writes: int) -> bool:
        """Merge step by step until no index has work (True) or a write or stop interrupts (False)."""
        steps = 0
        finished = False
        while not self._interrupted(writes):
            try:
                with self._gate:
                    worked = self._step(conn)
            except sqlite3.Error as exc:
                if isinstance(exc, sqlite3.OperationalError) and _is_contention(exc):
                    self._pause_for_other_writers()
                    break
                log.warning("full-text index merge failed; retried after the next write: %s", exc)
                finished = True
                break
            if not worked:
                finished = True
                break
            steps += 1
            if steps % INDEX_MERGE_STEPS_PER_CHECKPOINT == 0:
                _checkpoint_quietly(conn)
        if steps:
            _checkpoint_quietly(conn)
        return finished

    def _pause_for_other_writers(self) -> None:
        """Another process holds the write lock: try again later rather than at once (no spinning)."""
        pause = max(self._idle_seconds, random.uniform(*INDEX_MERGE_CONTENDED_PAUSE_SECONDS))
        log.debug("full-text index merge deferred %.2f s: another process is writing", pause)
        with self._changed:
            self._not_before = time.monotonic() + pause

    def _step(self, conn: sqlite3.Connection) -> bool:
        return _run_in_transaction(
            conn, lambda conn: merge_index_segments(conn, self._tables, INDEX_MERGE_PAGES_PER_STEP)
        )


def _run_in_transaction(conn: sqlite3.Connection, work: Callable[[sqlite3.Connection], T]) -> T:
    """Run ``work`` in one BEGIN IMMEDIATE transaction on ``conn``; roll back on any error."""
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


def _checkpoint_quietly(conn: sqlite3.Connection) -> None:
    """A PASSIVE checkpoint: the merges' pages go to the database file and, if no write came
    meanwhile, the next write starts the WAL over instead of making it longer."""
    try:
        conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()
    except sqlite3.Error as exc:
        log.debug("checkpoint after index merges skipped: %s", exc)


class SessionDB:
    """The shared session store. Thread-safe; every method is one short statement or transaction."""

    def __init__(
        self,
        path: Path,
        *,
        search_support: SearchSupport | None = None,
        index_merge_idle_seconds: float = INDEX_MERGE_IDLE_SECONDS,
    ) -> None:
        """Open (creating and migrating if needed) the database at ``path``.

        ``search_support`` defaults to what this SQLite build offers; passing less turns
        full-text indexes off for this file (what a build without FTS5 does on its own).
        ``index_merge_idle_seconds`` is how long this process must not write before the
        full-text index segments its writes added are merged.
        """
        self.path = Path(path)
        # Whole conversations and file contents live here: the owner's eyes only. SQLite gives the
        # -wal and -shm files the database file's permissions.
        private_directory(self.path.parent)
        private_file(self.path)
        self._support = search_support or detect_search_support()
        self._lock = threading.Lock()
        self._write_gate = threading.Lock()  # one write at a time in this process, merges included
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
        except sqlite3.DatabaseError as exc:
            self._conn.close()
            if is_corruption(exc):
                raise SessionDBCorrupt(self.path, str(exc)) from exc
            raise
        except BaseException:
            self._conn.close()
            raise
        self._merger = _IdleMerger(self.path, sorted(self._search), self._write_gate, index_merge_idle_seconds)
        self._merger.note_write()  # what earlier processes left unmerged is merged after a quiet spell

    # -- lifecycle

    def close(self) -> None:
        """Checkpoint and truncate the WAL (best effort: another process may be reading) and close.

        Index merges not done yet are left for a later process: the index is complete without them.
        """
        self._merger.stop()
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

    def wait_for_index_merges(self, timeout: float | None = None) -> bool:
        """Block until the idle-time merges have caught up with this process's writes (False: timed out).

        For benchmarks and tests that want the index tidy; nothing else needs to wait.
        """
        return self._merger.wait_until_settled(timeout)

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
        sql = f"{_SESSION_SELECT}{where} ORDER BY updated_at DESC, id DESC LIMIT ?"
        rows = self._read(lambda conn: conn.execute(sql, (*params, limit + 1)).fetchall())
        records = [_session_from_row(row) for row in rows[:limit]]
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
            f"{_SESSION_SELECT} WHERE message_count > 0 AND source NOT IN ('{SUBAGENT_SOURCE}', '{REWOUND_SOURCE}') "
            "AND id NOT IN (SELECT value FROM json_each(?)) ORDER BY updated_at DESC, id DESC LIMIT ?"
        )
        rows = self._read(lambda conn: conn.execute(sql, (_id_list(exclude), limit)).fetchall())
        return [_session_from_row(row) for row in rows]

    def delete_session(self, session_id: str) -> bool:
        """Delete a session, its messages and their index entries, and the branches its rewinds set aside
        (its messages too); other children lose their parent link."""

        def work(conn: sqlite3.Connection) -> bool:
            conn.execute(
                f"DELETE FROM sessions WHERE parent_session_id = ? AND source = '{REWOUND_SOURCE}'", (session_id,)
            )
            return conn.execute("DELETE FROM sessions WHERE id = ?", (session_id,)).rowcount > 0

        return self._write(work)

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
            segment = _require_session(conn, segment_id)
            moved, tool_calls, first_at, last_at = conn.execute(
                "SELECT count(*), coalesce(sum(json_array_length(tool_calls)), 0), min(timestamp), max(timestamp) "
                "FROM messages WHERE session_id = ? AND id >= ?",
                (segment_id, first_message_id),
            ).fetchone()
            if not moved:
                return None
            branch = str(uuid.uuid4())
            _insert_session(
                conn,
                session_id=branch,
                source=REWOUND_SOURCE,
                model=segment.model,
                mode=segment.mode,
                cwd=segment.cwd,
                title=None if segment.title is None else segment.title + _REWOUND_MARK,
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
                session_id=new_id,  # a fork is the user's own conversation, whatever it was forked from
                source="acp" if source.source in _NOT_OWN_CONVERSATIONS else source.source,
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
            return [record for i in ids if (record := _fetch_session(conn, i)) is not None]

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
            segment = _require_session(conn, segment_id)
            if segment.end_reason is not None:
                return None
            _insert_session(
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
                _insert_message(conn, continuation_id, 0, now, (
                    message.role, message.content, message.tool_call_id, None, message.tool_name, now, None,
                    None, None, _dump_json(message.payload), _dump_json(message.display)))
            copied = [name for name in _MESSAGE_COLUMNS if name not in ("id", "session_id", "content", "display")]
            conn.execute(  # carried: in the model's history; shown by the replay of the old segment already
                f"INSERT INTO messages (session_id, content, display, {', '.join(copied)}) "
                f"SELECT ?, '', json_set(coalesce(display, '{{}}'), '$.carried', json('true')), {', '.join(copied)} "
                "FROM messages WHERE session_id = ? AND id > ? AND active = 1 AND payload IS NOT NULL "
                "AND id NOT IN (SELECT value FROM json_each(?)) ORDER BY id",
                (continuation_id, segment_id, read_up_to, _id_list(own)),
            )
            conn.execute(
                "UPDATE sessions SET (message_count, tool_call_count) = "
                "(SELECT count(*), coalesce(sum(json_array_length(tool_calls)), 0) "
                " FROM messages WHERE session_id = ?) WHERE id = ?",
                (continuation_id, continuation_id),
            )
            conn.execute("UPDATE sessions SET end_reason = ?, ended_at = ? WHERE id = ?",
                         (CONTINUATION_SOURCE, now, segment_id))
            rows = conn.execute(f"{_MESSAGE_SELECT} WHERE m.session_id = ? ORDER BY m.id", (continuation_id,))
            return [_message_from_row(row) for row in rows.fetchall()]

        return self._write(work)

    def conversation(self, session_id: str) -> list[MessageRecord]:
        """The messages of the session and of its continuations (``segments``), in order."""
        return [row for segment in self.segments(session_id) for row in self.messages(segment.id)]

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
            f"{_SESSION_SELECT} WHERE parent_session_id = ? AND source = '{SUBAGENT_SOURCE}' "
            "ORDER BY started_at, id"
        )
        rows = self._read(lambda conn: conn.execute(sql, (session_id,)).fetchall())
        return [_session_from_row(row) for row in rows]

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
            return _insert_message(conn, _segment_in_use(conn, session_id), len(tool_calls or ()), when, row)

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
            range_params = (min(ids), max(ids), _id_list(ids))
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
        if search_out_of_step(schema_names(self._conn), self._support):
            self._in_transaction(lambda conn: sync_search_index(conn, self._support))
        return frozenset(self._support.wanted())

    def _user_version(self) -> int:
        return int(self._conn.execute("PRAGMA user_version").fetchone()[0])

    def _in_transaction(self, work: Callable[[sqlite3.Connection], T]) -> T:
        """Run ``work`` in one BEGIN IMMEDIATE transaction; roll back on any error."""
        return _run_in_transaction(self._conn, work)

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

        # Noted before: a merge run in progress stops after its current step instead of taking
        # the gate again. Noted after: the quiet spell the merges wait for starts when it ends.
        self._merger.note_write()
        try:
            with self._write_gate:
                return self._retrying(attempt)
        finally:
            self._merger.note_write()

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


_INSERT_MESSAGE = (
    "INSERT INTO messages (session_id, role, content, tool_call_id, tool_calls, tool_name, timestamp, token_count, "
    "finish_reason, reasoning, payload, display) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
)


def _insert_message(conn: sqlite3.Connection, session_id: str, tool_calls: int, when: float,
                    row: tuple[Any, ...]) -> int:
    """Store one message (``row``: the columns of ``_INSERT_MESSAGE`` after ``session_id``, encoded) and
    count it on its session; its id."""
    bumped = conn.execute(
        "UPDATE sessions SET message_count = message_count + 1, "
        "tool_call_count = tool_call_count + ?, updated_at = max(updated_at, ?) WHERE id = ?",
        (tool_calls, when, session_id),
    )
    if bumped.rowcount == 0:
        raise SessionNotFound(session_id)
    return int(conn.execute(_INSERT_MESSAGE, (session_id, *row)).lastrowid or 0)


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


def _fetch_session(conn: sqlite3.Connection, session_id: str) -> SessionRecord | None:
    row = conn.execute(f"{_SESSION_SELECT} WHERE id = ?", (session_id,)).fetchone()
    return None if row is None else _session_from_row(row)


def _describe_messages(conn: sqlite3.Connection, message_ids: list[int]) -> list[tuple[Any, ...]]:
    """(id, session_id, role, active, compacted, timestamp, tool_name, title, cwd, started_at) per id."""
    return conn.execute(
        "SELECT m.id, m.session_id, m.role, m.active, m.compacted, m.timestamp, m.tool_name, "
        "s.title, s.cwd, s.started_at FROM messages AS m JOIN sessions AS s ON s.id = m.session_id "
        "WHERE m.id IN (SELECT value FROM json_each(?))",
        (_id_list(message_ids),),
    ).fetchall()


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
