"""Every change to a skill's files, kept so it can be seen and undone: an append-only ledger (0600).

One JSON object a line: the skill's name and folder (relative to the skills folder), when, by whom
(``agent``: the model in a turn; ``review``: the learning loop; ``curator``: the curation pass;
``user``: a command the user ran; ``lifecycle``: an automatic archive), in which session, the action
(``create``, ``edit``, ``patch``, ``delete``, ``write_file``, ``remove_file``, ``rollback``,
``archive``, ``restore``) and each file's text before and after (so any version can be put back;
binary files are named, not kept). Lines are appended under the skills store's lock; a line torn by
a crash is skipped when read.

An entry is known by its offset in the file, and the file's size is a mark: what was recorded
after a checkpoint took its mark lies past it (``core.skill_rollback``).
"""

from __future__ import annotations

import json
import logging
import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from acp_hermes_memory.fs import private_file
from acp_hermes_memory.skills.clock import iso, parse_iso
from acp_hermes_memory.values import value

log = logging.getLogger(__name__)

AUTHORS = ("agent", "review", "curator", "user", "lifecycle")
AGENT_AUTHORS = frozenset({"agent", "review", "curator"})  # the agent's own changes: a /rollback undoes them


@value
class FileVersion:
    """One file of a change: ``old`` None, it was created; ``new`` None, it was removed."""

    path: str  # relative to the skill's folder
    old: str | None
    new: str | None


@value
class HistoryEntry:
    offset: int  # where its line starts in the ledger: its identity
    skill: str
    directory: str  # the skill's folder relative to the skills folder ("ops/rotate-logs")
    at: float
    by: str
    session: str | None
    action: str
    files: tuple[FileVersion, ...]
    note: str


class SkillHistory:
    """The ledger file, read whole (and kept while its size is the same) and appended to."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._cached: tuple[tuple[int, int], list[HistoryEntry]] | None = None
        self._guard = threading.Lock()

    def mark(self) -> int:
        """Where the next entry will start (its size now): entries at or past it are newer."""
        try:
            return os.stat(self.path).st_size
        except OSError:
            return 0

    def append_locked(self, *, skill: str, directory: str, at: float, by: str, session: str | None, action: str,
                      files: Sequence[FileVersion], note: str) -> None:
        """Add one entry; the caller holds the skills store's lock (entries stay in order)."""
        line = json.dumps({
            "skill": skill, "dir": directory, "at": iso(at), "by": by, "session": session, "action": action,
            "files": [{"path": f.path, "old": f.old, "new": f.new} for f in files], "note": note,
        }, ensure_ascii=False) + "\n"
        private_file(self.path, tighten=False)  # made 0600 whatever the umask; one the user made keeps its mode
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND)
        try:
            os.write(fd, line.encode("utf-8"))
            os.fsync(fd)
        finally:
            os.close(fd)

    def entries(self, skill: str | None = None, since: int = 0) -> list[HistoryEntry]:
        """The entries (of one skill), oldest first; ``since``: only those at or past that mark."""
        every = self._all()
        return [e for e in every if e.offset >= since and (skill is None or e.skill == skill)]

    def _all(self) -> list[HistoryEntry]:
        try:
            found = os.stat(self.path)
        except OSError:
            return []
        key = (found.st_ino, found.st_size)
        with self._guard:
            if self._cached is not None and self._cached[0] == key:
                return self._cached[1]
        with open(self.path, "rb") as handle:
            data = handle.read(found.st_size)
        entries = []
        offset = 0
        for line in data.split(b"\n"):
            entry = _entry(offset, line)
            if entry is not None:
                entries.append(entry)
            offset += len(line) + 1
        with self._guard:
            self._cached = (key, entries)
        return entries


def _entry(offset: int, line: bytes) -> HistoryEntry | None:
    if not line.strip():
        return None
    try:
        raw: Any = json.loads(line)
        files = tuple(FileVersion(str(f["path"]), _text(f.get("old")), _text(f.get("new"))) for f in raw["files"])
        return HistoryEntry(offset, str(raw["skill"]), str(raw["dir"]), parse_iso(raw["at"]) or 0.0,
                            str(raw["by"]), raw.get("session") if isinstance(raw.get("session"), str) else None,
                            str(raw["action"]), files, str(raw.get("note") or ""))
    except (ValueError, KeyError, TypeError):
        log.warning("skipping a damaged line of the skills history at byte %d", offset)
        return None


def _text(found: object) -> str | None:
    return found if isinstance(found, str) else None


def diff_text(entry: HistoryEntry) -> str:
    """A unified diff of every file of ``entry`` (what ``skills history`` prints)."""
    import difflib

    parts: list[str] = []
    for version in entry.files:
        before = (version.old or "").splitlines(keepends=True)
        after = (version.new or "").splitlines(keepends=True)
        label = f"{entry.directory}/{version.path}"
        parts += difflib.unified_diff(before, after, "/dev/null" if version.old is None else f"a/{label}",
                                      "/dev/null" if version.new is None else f"b/{label}")
    text = "".join(parts)
    return text if text.endswith("\n") or not text else text + "\n"
