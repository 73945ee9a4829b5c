"""How much each skill is used: the sidecar ``skills/.usage.json`` that Hermes Agent keeps too.

The file is Hermes's: one JSON object keyed by skill name, each record holding ``use_count``,
``view_count``, ``patch_count``, ``last_used_at``, ``last_viewed_at``, ``last_patched_at``,
``created_at`` (ISO 8601 times in UTC), ``state`` (``active``, ``stale`` or ``archived``),
``pinned``, ``archived_at`` and ``created_by`` (``agent`` for a skill the agent created; acp-hermes
writes ``user``, ``external`` or ``project`` for the others when it first records one). acp-hermes
adds ``restored_at`` (a restore counts as activity) and ``archived_from`` (the folder an archived
skill came from, so a restore puts it back there). Keys it does not know are kept as they are.

Every change re-reads the file under the skills store's lock and replaces it atomically (0600), so
processes sharing ``HERMES_HOME`` never lose each other's counts. A file that is not valid JSON is
left alone (and nothing is recorded until it is fixed or removed): it may be Hermes's.

Recording a use or a view on a turn's path is a queue put (``UsageRecorder.record``, microseconds);
one worker thread per sidecar writes what accumulated, and the process flushes it at exit.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import logging
import os
import queue
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

from acp_hermes_memory.fs import exclusive_lock, write_text_exactly
from acp_hermes_memory.skills.clock import Clock, iso, parse_iso
from acp_hermes_memory.values import value

log = logging.getLogger(__name__)

USAGE_FILE = ".usage.json"
States = Literal["active", "stale", "archived"]
Kind = Literal["use", "view"]
Records = dict[str, dict[str, Any]]
FLUSH_SECONDS = 5.0  # the longest a flush (at exit, before a listing) waits for the worker


@value
class Usage:
    """One skill's record, read leniently (Hermes's older files lack some keys). Times are kept as the
    ISO text stored and read as seconds only when asked: listing 1,000 skills parses none of them."""

    use_count: int = 0
    view_count: int = 0
    patch_count: int = 0
    last_used_at: str | None = None
    last_viewed_at: str | None = None
    last_patched_at: str | None = None
    created_at: str | None = None
    restored_at: str | None = None
    state: str = "active"
    pinned: bool = False
    created_by: str | None = None
    archived_at: str | None = None
    archived_from: str | None = None

    @property
    def last_activity(self) -> float | None:
        """The latest of its creation, use, view, patch and restore: what staleness is measured from."""
        return _latest(self.created_at, self.last_used_at, self.last_viewed_at, self.last_patched_at,
                       self.restored_at)

    @property
    def last_use(self) -> float | None:
        """When the model last loaded it (a use or a view), for listings."""
        return _latest(self.last_used_at, self.last_viewed_at)


def _latest(*times: str | None) -> float | None:
    return max((moment for text in times if (moment := parse_iso(text)) is not None), default=None)


NO_USAGE = Usage()


def usage_of(record: dict[str, Any]) -> Usage:
    """A sidecar record as a ``Usage`` (wrong types count as absent)."""
    get = record.get
    state = get("state")
    return Usage(
        use_count=_count(get("use_count")), view_count=_count(get("view_count")),
        patch_count=_count(get("patch_count")), last_used_at=_text(get("last_used_at")),
        last_viewed_at=_text(get("last_viewed_at")), last_patched_at=_text(get("last_patched_at")),
        created_at=_text(get("created_at")), restored_at=_text(get("restored_at")),
        state=state if state in ("active", "stale", "archived") else "active", pinned=get("pinned") is True,
        created_by=_text(get("created_by")), archived_at=_text(get("archived_at")),
        archived_from=_text(get("archived_from")),
    )


def _count(number: object) -> int:
    return number if isinstance(number, int) and not isinstance(number, bool) and number > 0 else 0


def _text(found: object) -> str | None:
    return found if isinstance(found, str) and found else None


def new_record(moment: float, created_by: str | None) -> dict[str, Any]:
    """A fresh record in Hermes's shape."""
    record: dict[str, Any] = {
        "use_count": 0, "view_count": 0, "last_used_at": None, "last_viewed_at": None, "patch_count": 0,
        "last_patched_at": None, "created_at": iso(moment), "state": "active", "pinned": False, "archived_at": None,
    }
    if created_by is not None:
        record["created_by"] = created_by
    return record


class UsageFile:
    """The sidecar: read (kept while the file is the same one), and changed under the store's lock."""

    def __init__(self, path: Path, lock_path: Path) -> None:
        self.path = path
        self.lock_path = lock_path
        self._cached: tuple[tuple[int, int, int], dict[str, Usage]] | None = None
        self._guard = threading.Lock()

    def records(self) -> dict[str, Usage]:
        """Every record by skill name ({} when there is no file, or it cannot be read as records)."""
        try:
            found = os.stat(self.path)
        except OSError:
            return {}
        key = (found.st_ino, found.st_mtime_ns, found.st_size)  # a replace makes a new inode
        with self._guard:
            if self._cached is not None and self._cached[0] == key:
                return self._cached[1]
        raw = self.read_raw()
        parsed = {} if raw is None else {name: usage_of(record) for name, record in raw.items()}
        with self._guard:
            self._cached = (key, parsed)
        return parsed

    def read_raw(self) -> Records | None:
        """The file's records as stored; {} when there is none, None when it is not a JSON object."""
        try:
            data = self.path.read_bytes()
        except FileNotFoundError:
            return {}
        except OSError as error:
            log.warning("cannot read %s: %s", self.path, error)
            return None
        try:
            import orjson

            loaded = orjson.loads(data)
        except ValueError:
            try:
                loaded = json.loads(data)
            except ValueError:
                loaded = None
        if not isinstance(loaded, dict):
            log.warning("%s is not a JSON object of skill records: skill usage is not recorded until it is fixed "
                        "or removed", self.path)
            return None
        return {str(name): record for name, record in loaded.items() if isinstance(record, dict)}

    def change(self, edit: Callable[[Records], bool]) -> bool:
        """Apply ``edit`` to the records as they are now, under the lock; written when it returns True."""
        with exclusive_lock(self.lock_path):
            return self.change_locked(edit)

    def change_locked(self, edit: Callable[[Records], bool]) -> bool:
        """``change`` for a caller that holds the store's lock already."""
        records = self.read_raw()
        if records is None or not edit(records):
            return False
        text = json.dumps(records, indent=2, sort_keys=True, ensure_ascii=False)
        write_text_exactly(Path(os.path.realpath(self.path)), text, private=True)
        return True


@value
class _Bump:
    name: str
    kind: Kind
    moment: float
    created_by: str


class UsageRecorder:
    """Counts uses and views without making the caller wait: a queue, and a worker thread that writes."""

    def __init__(self, file: UsageFile, clock: Clock) -> None:
        self.file = file
        self.clock = clock
        self._queue: queue.SimpleQueue[_Bump | threading.Event] = queue.SimpleQueue()
        self._worker: threading.Thread | None = None
        self._starting = threading.Lock()
        self._failed = False  # said once in the log

    def record(self, name: str, kind: Kind, created_by: str) -> None:
        """Count one use or view of ``name`` now (``created_by``: its provenance, should a record be new)."""
        self._queue.put(_Bump(name, kind, self.clock(), created_by))
        if self._worker is None:
            self._start()

    def flush(self, timeout: float = FLUSH_SECONDS) -> bool:
        """Wait until everything recorded so far is written; False when that took longer than ``timeout``."""
        if self._worker is None:
            return True
        done = threading.Event()
        self._queue.put(done)
        return done.wait(timeout)

    def _start(self) -> None:
        with self._starting:
            if self._worker is None:
                self._worker = threading.Thread(target=self._run, name="skill-usage", daemon=True)
                self._worker.start()
                atexit.register(self.flush)

    def _run(self) -> None:
        while True:
            items = [self._queue.get()]
            with contextlib.suppress(queue.Empty):
                while len(items) < 10_000:
                    items.append(self._queue.get_nowait())
            bumps = [item for item in items if isinstance(item, _Bump)]
            if bumps:
                self._write(bumps)
            for item in items:
                if isinstance(item, threading.Event):
                    item.set()

    def _write(self, bumps: list[_Bump]) -> None:
        def edit(records: Records) -> bool:
            for bump in bumps:
                record = records.setdefault(bump.name, new_record(bump.moment, bump.created_by))
                count, last = ("use_count", "last_used_at") if bump.kind == "use" else ("view_count", "last_viewed_at")
                record[count] = _int(record.get(count)) + 1
                record[last] = iso(bump.moment)
                if record.get("state") == "stale":  # used again: no longer stale
                    record["state"] = "active"
            return True

        try:
            self.file.change(edit)
        except OSError as error:
            if not self._failed:
                self._failed = True
                log.warning("skill usage could not be recorded in %s: %s", self.file.path, error)


def _int(number: object) -> int:
    return number if isinstance(number, int) and not isinstance(number, bool) else 0


_RECORDERS: dict[Path, UsageRecorder] = {}
_RECORDERS_LOCK = threading.Lock()


def recorder_for(root: Path, lock_path: Path, clock: Clock) -> UsageRecorder:
    """The process's one recorder for the skills folder ``root`` (its stores share the worker)."""
    with _RECORDERS_LOCK:
        found = _RECORDERS.get(root)
        if found is None:
            found = _RECORDERS[root] = UsageRecorder(UsageFile(root / USAGE_FILE, lock_path), clock)
        return found
