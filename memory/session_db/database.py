"""One connection to state.db, shared by every acp-hermes process: opening, transactions, retries.

Each editor window runs its own acp-hermes process and they all write ``state.db`` at the same
time, so the design is built around short write transactions: WAL (readers never block the
writer), ``BEGIN IMMEDIATE`` (a writer takes the write lock up front instead of failing half way),
a short SQLite busy timeout plus application-level retries with random jitter (several processes
waiting on one lock do not wake up in lock-step), and a passive checkpoint every few dozen writes,
run on a background thread so no write waits for its fsync. Likewise the full-text indexes are
kept in step inside each write, but their segments are merged by a background thread once the
process has paused writing (``memory.session_db.upkeep``), so no append pays for a merge.

The API is synchronous on purpose (stdlib ``sqlite3``); async callers use
``anyio.to_thread.run_sync``. One connection per database object, guarded by a lock. The schema,
its migrations and the full-text indexes are defined in ``memory.session_schema``; what is read
and written through this connection, in the other modules of this package.
"""

from __future__ import annotations

import contextlib
import logging
import random
import sqlite3
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from acp_hermes_memory.fs import private_directory, private_file
from acp_hermes_memory.session_db.errors import SessionDBCorrupt, is_corruption
from acp_hermes_memory.session_db.transactions import is_contention, run_in_transaction
from acp_hermes_memory.session_db.upkeep import INDEX_MERGE_IDLE_SECONDS, Checkpointer, IdleMerger
from acp_hermes_memory.session_schema import (
    MIGRATIONS,
    SCHEMA_VERSION,
    TRIGRAM_INDEX,
    WORD_INDEX,
    SearchSupport,
    detect_search_support,
    schema_names,
    search_out_of_step,
    sync_search_index,
)

log = logging.getLogger(__name__)

T = TypeVar("T")

BUSY_TIMEOUT_SECONDS = 1.0
WRITE_ATTEMPTS = 15
RETRY_JITTER_SECONDS = (0.020, 0.150)
CHECKPOINT_EVERY_WRITES = 50
WAL_RESTART_FRAMES = 8_192


class Database:
    """state.db opened: thread-safe reads and writes, each one short statement or transaction."""

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
        self._checkpointer = Checkpointer(self.path, BUSY_TIMEOUT_SECONDS)
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
        self._merger = IdleMerger(self.path, sorted(self._search), self._write_gate, index_merge_idle_seconds)
        self._merger.note_write()  # what earlier processes left unmerged is merged after a quiet spell

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
        return run_in_transaction(self._conn, work)

    def _retrying(self, action: Callable[[], T]) -> T:
        """Run ``action`` under the lock; on lock contention with other processes, wait and retry."""
        attempt = 1
        while True:
            with self._lock:
                try:
                    return action()
                except sqlite3.OperationalError as exc:
                    if attempt >= WRITE_ATTEMPTS or not is_contention(exc):
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
