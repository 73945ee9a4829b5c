"""Background upkeep of state.db, on threads and connections of their own so no write waits for it.

Two jobs: copying the WAL back into the database (``Checkpointer``: a passive checkpoint every few
dozen writes), and merging the segments each append adds to the full-text indexes once this process
has paused writing (``IdleMerger``), so no append pays for a merge.
"""

from __future__ import annotations

import logging
import random
import sqlite3
import threading
import time
from collections.abc import Sequence
from pathlib import Path

from acp_hermes_memory.session_db.transactions import is_contention, run_in_transaction
from acp_hermes_memory.session_schema import merge_index_segments

log = logging.getLogger(__name__)

INDEX_MERGE_IDLE_SECONDS = 1.0
INDEX_MERGE_PAGES_PER_STEP = 16
INDEX_MERGE_STEPS_PER_CHECKPOINT = 64
INDEX_MERGE_CONTENDED_PAUSE_SECONDS = (0.25, 0.75)


class Checkpointer:
    """Copies the WAL back into the database on a thread and connection of its own.

    A passive checkpoint of fifty appends' worth of WAL (a few MB plus an fsync) takes tens of
    milliseconds; done inline it would stall one append in fifty. In WAL mode a checkpoint runs
    alongside writers, so here no write waits for one. The thread starts on first use.

    The WAL only starts over from its beginning when a write begins after a complete
    checkpoint; a steady stream of writes (bulk work, a benchmark) can keep that from happening.
    ``wal_frames`` reports the WAL's length so the writer can checkpoint inline once it is long.
    """

    def __init__(self, path: Path, busy_timeout: float) -> None:
        self._path = path
        self._busy_timeout = busy_timeout
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
        conn = sqlite3.connect(self._path, timeout=self._busy_timeout, isolation_level=None)
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


class IdleMerger:
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
                if isinstance(exc, sqlite3.OperationalError) and is_contention(exc):
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
        return run_in_transaction(
            conn, lambda conn: merge_index_segments(conn, self._tables, INDEX_MERGE_PAGES_PER_STEP)
        )


def _checkpoint_quietly(conn: sqlite3.Connection) -> None:
    """A PASSIVE checkpoint: the merges' pages go to the database file and, if no write came
    meanwhile, the next write starts the WAL over instead of making it longer."""
    try:
        conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()
    except sqlite3.Error as exc:
        log.debug("checkpoint after index merges skipped: %s", exc)
