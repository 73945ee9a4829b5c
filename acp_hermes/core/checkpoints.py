"""A session's checkpoints: the workspace committed to its shadow store before each turn's first change.

The store (``tools.checkpoints``) is shared by every session in the workspace; a session's own
checkpoints are its refs there, numbered from 1 (the workspace before the session's first change).
A turn that changes something gets one, taken once the gate has allowed the turn's first change (an
edit, a write into the workspace, a command not rated read-only, a delegated child's first change)
and before that change is made. When the turn ends the workspace is committed again (the ``-end``
ref): what differs between the two is what the agent changed in that turn — the agent-write ledger
with which ``/rollback`` tells the agent's changes from the user's own. Each checkpoint also keeps
where the skills history stood (``skills_mark``): the skill changes recorded after it are what a
rollback to it puts back beside the files (``core.skill_rollback``). Taking a checkpoint never asks
and never fails a turn: a store that cannot be used turns checkpoints off for the session, with one
notice.
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import anyio

from acp_hermes_memory.text import one_line
from acp_hermes_memory.values import value

if TYPE_CHECKING:
    from acp_hermes_tools.checkpoints import CheckpointStore, FileState, Snapshot

log = logging.getLogger(__name__)
T = TypeVar("T")

REF_ROOT = "refs/checkpoints/"
END = "-end"
PROMPT_WORDS = 60  # characters of the turn's prompt a checkpoint keeps, for the list


@value
class Checkpoint:
    """One checkpoint of a session: the workspace before a turn's (or a restore's) first change."""

    number: int
    kind: str  # "turn": before a turn's first change; "restore": before a /rollback put files back
    created_at: float
    prompt: str  # the turn's prompt in a few words
    prompt_row: int | None  # the stored prompt the turn began with (where the conversation rewinds to)
    commit: str
    end_commit: str | None  # the workspace when that turn ended; None: it has not (or the process died)
    skills_mark: int | None = None  # the skills history's mark when it was taken; None: not kept


@value
class _Turn:
    kind: str
    prompt: str
    prompt_row: Callable[[], int | None]


def session_prefix(session_id: str) -> str:
    """The refs of one session's checkpoints (an id made safe for a ref name)."""
    return f"{REF_ROOT}{re.sub(r'[^A-Za-z0-9_-]', '_', session_id)}/"


def forget_sessions(checkpoints_home: Path, session_ids: Iterable[str]) -> tuple[int, list[str]]:
    """Drop the checkpoints of deleted sessions from every workspace's store, their copies of the files
    included (blocking: git runs). How many were dropped, and why a store could not be changed (git
    missing, a damaged store), one line each."""
    from acp_hermes_tools.checkpoints import CheckpointError, stores

    prefixes = [session_prefix(session_id) for session_id in session_ids]
    dropped, problems = 0, []
    for store in stores(checkpoints_home):
        try:
            dropped += store.forget(prefixes)
        except (CheckpointError, OSError) as exc:
            problems.append(f"its checkpoints of {store.workspace} (in {store.directory}) could not be removed: {exc}")
    return dropped, problems


class SessionCheckpoints:
    """One session's checkpoints (its delegated children share their parent's)."""

    def __init__(self, session_id: str, open_store: Callable[[], CheckpointStore] | None,
                 notify: Callable[[str], None], skills_mark: Callable[[], int] | None = None) -> None:
        self._prefix = session_prefix(session_id)
        self._skills_mark = skills_mark
        self._open_store = open_store  # None: checkpoints are off (config, or no workspace to keep)
        self._store: CheckpointStore | None = None
        self._notify = notify
        self._entries: list[Checkpoint] | None = None  # read from the store on first need
        self._changes: dict[tuple[str, str], dict[str, tuple[FileState, FileState]]] = {}
        self._turn: _Turn | None = None
        self._taken: Checkpoint | None = None  # the running turn's checkpoint, once taken
        self._lock: anyio.Lock | None = None

    @property
    def enabled(self) -> bool:
        return self._open_store is not None

    # -- the turn

    def begin(self, prompt: str, prompt_row: Callable[[], int | None], *, kind: str = "turn") -> None:
        """A turn (or a restore) starts: its first change will take a checkpoint."""
        self._turn, self._taken = _Turn(kind, one_line(prompt, PROMPT_WORDS), prompt_row), None

    async def before_change(self) -> None:
        """The running turn's checkpoint, taken before its first change (``ToolScope.before_change``)."""
        if self._turn is None or self._taken is not None or self._open_store is None:
            return
        async with self._guard():
            turn = self._turn
            if turn is None or self._taken is not None or self._open_store is None:
                return
            entries = await self.entries()
            number = entries[-1].number + 1 if entries else 1
            meta = {"kind": turn.kind, "number": number, "prompt": turn.prompt, "prompt_row": turn.prompt_row()}
            if self._skills_mark is not None:
                meta["skills_mark"] = self._skills_mark()
            snapshot = await self._snapshot(f"{self._prefix}{number:04d}", meta)
            if snapshot is not None:
                self._taken = _checkpoint(snapshot, None)
                entries.append(self._taken)

    async def take(self) -> Checkpoint | None:
        """The running turn's checkpoint, taken now if it was not yet (a restore's, before it writes)."""
        await self.before_change()
        return self._taken

    async def end(self) -> Checkpoint | None:
        """The turn ended: the workspace as it left it (what it changed is told from this); its checkpoint."""
        taken, self._turn, self._taken = self._taken, None, None
        if taken is None or self._open_store is None:
            return None
        async with self._guard():
            snapshot = await self._snapshot(f"{self._prefix}{taken.number:04d}{END}", {"kind": "end"})
        if snapshot is None:
            return taken
        ended = _with_end(taken, snapshot.commit)
        entries = await self.entries()
        entries[entries.index(taken)] = ended
        return ended

    async def abandon(self) -> None:
        """The turn's checkpoint is not wanted after all (a rollback the user rejected): forget it."""
        taken, self._turn, self._taken = self._taken, None, None
        if taken is None or self._store is None:
            return
        store = self._store
        async with self._guard():
            await anyio.to_thread.run_sync(store.delete, [f"{self._prefix}{taken.number:04d}"])
            if self._entries is not None and taken in self._entries:
                self._entries.remove(taken)

    # -- what is kept

    async def entries(self) -> list[Checkpoint]:
        """The session's checkpoints, oldest (number 1) first."""
        if self._entries is None:
            store = await self.store()
            self._entries = [] if store is None else await anyio.to_thread.run_sync(self._read, store)
        return self._entries

    async def get(self, number: int) -> Checkpoint | None:
        return next((entry for entry in await self.entries() if entry.number == number), None)

    async def agent_changes(self, since: int, now: str | None = None) -> dict[str, FileState]:
        """What the agent left in each path it changed since checkpoint ``since`` (the last state it wrote;
        a blob of None: it deleted the path). A turn the process did not live to end is measured up to
        the next checkpoint, or to ``now``."""
        store = await self.store()
        if store is None:
            return {}
        entries = [entry for entry in await self.entries() if entry.number >= since]
        left: dict[str, FileState] = {}
        for index, entry in enumerate(entries):
            end = entry.end_commit or (entries[index + 1].commit if index + 1 < len(entries) else now)
            if end is None:
                continue
            key = (entry.commit, end)
            if key not in self._changes:
                self._changes[key] = await anyio.to_thread.run_sync(store.changes, entry.commit, end)
            left.update({path: after for path, (_, after) in self._changes[key].items()})
        return left

    async def changed_paths(self, ended: Checkpoint | None) -> tuple[str, ...] | None:
        """The absolute paths a turn changed, from its checkpoint ``ended`` (what ``end`` returned): the
        paths that differ between the workspace before its first change and as it left it. None: not
        known (checkpoints are off, or its end could not be committed); no checkpoint: nothing changed."""
        if self._open_store is None:
            return None
        if ended is None:
            return ()
        store = await self.store()
        if store is None or ended.end_commit is None:
            return None
        key = (ended.commit, ended.end_commit)
        if key not in self._changes:
            try:
                self._changes[key] = await anyio.to_thread.run_sync(store.changes, ended.commit, ended.end_commit)
            except Exception:  # a report the editor asked for never fails the turn: it is "not known"
                log.exception("the changes of checkpoint %d could not be read", ended.number)
                return None
        return tuple(str(store.workspace / path) for path in sorted(self._changes[key]))

    async def store(self) -> CheckpointStore | None:
        """The workspace's store, opened on first need; None when checkpoints are off."""
        if self._store is None and self._open_store is not None:
            self._store = await self._use(self._open_store)
        return self._store

    # -- inside

    def _guard(self) -> anyio.Lock:
        if self._lock is None:
            self._lock = anyio.Lock()
        return self._lock

    async def _snapshot(self, ref: str, meta: dict[str, Any]) -> Snapshot | None:
        store = await self.store()
        if store is None:
            return None
        return await self._use(lambda: store.snapshot(ref, meta))

    async def _use(self, work: Callable[[], T]) -> T | None:
        """``work`` on a thread; a store that cannot be used turns checkpoints off, saying why once."""
        from acp_hermes_tools.checkpoints import CheckpointsUnavailable, WorkspaceTooLarge

        try:
            return await anyio.to_thread.run_sync(work)
        except (CheckpointsUnavailable, WorkspaceTooLarge) as off:
            reason = str(off)
        except Exception as failure:  # never a turn's failure: the change goes on without its checkpoint
            log.exception("checkpoint failed")
            reason = f"the checkpoint store failed ({failure})"
        self._open_store = None
        self._notify(f"⚠️ Checkpoints are off for this session: {reason}. Changes go on, but `/rollback` "
                     "cannot undo them.")
        return None

    def _read(self, store: CheckpointStore) -> list[Checkpoint]:
        snapshots = store.snapshots(self._prefix)
        ends = {s.ref.removesuffix(END): s.commit for s in snapshots if s.ref.endswith(END)}
        entries = [_checkpoint(s, ends.get(s.ref)) for s in snapshots if not s.ref.endswith(END)]
        return sorted(entries, key=lambda entry: entry.number)


def _checkpoint(snapshot: Snapshot, end_commit: str | None) -> Checkpoint:
    meta = snapshot.meta
    row = meta.get("prompt_row")
    mark = meta.get("skills_mark")
    return Checkpoint(
        number=int(meta.get("number") or snapshot.ref.rsplit("/", 1)[-1]),
        kind=str(meta.get("kind") or "turn"),
        created_at=snapshot.created_at or time.time(),
        prompt=str(meta.get("prompt") or ""),
        prompt_row=row if isinstance(row, int) else None,
        commit=snapshot.commit,
        end_commit=end_commit,
        skills_mark=mark if isinstance(mark, int) else None,
    )


def _with_end(entry: Checkpoint, end_commit: str) -> Checkpoint:
    return Checkpoint(entry.number, entry.kind, entry.created_at, entry.prompt, entry.prompt_row, entry.commit,
                      end_commit, entry.skills_mark)


