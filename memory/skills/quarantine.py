"""Project skills, read whole before they are listed: every file scanned again whenever it changes.

A repository's ``.hermes/skills`` and ``.agents/skills`` come with whoever wrote the repository,
so each skill there is read in full (SKILL.md and every file beside it) and scanned with the
threat scanner (``strict``, as a skill the agent writes). A flagged skill is quarantined: kept out
of the index, never loadable, listed with the reason. Verdicts are kept by the hash of the
skill's content in a cache file under ``$HERMES_HOME`` (never in the repository); what a process
has seen is kept by each file's size and mtime as well, so an unchanged skill is not read again
and a changed one always is (an mtime too young to be trusted, ``RACY_NS``, is re-read).
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import stat
import threading
from pathlib import Path
from typing import Any

from acp_hermes_memory.fs import exclusive_lock, lock_path_for, write_text_exactly
from acp_hermes_memory.scan import scan
from acp_hermes_memory.text import one_line
from acp_hermes_memory.values import value

log = logging.getLogger(__name__)

MAX_FILES = 200  # a project skill with more files is quarantined unread
MAX_BYTES = 1024 * 1024  # per file, as for the agent's own skill files
SCANNER = "v1"  # part of the cache key: a new scanner scans again
_KEPT_VERDICTS = 5_000  # the cache forgets the oldest beyond this many


@value
class Verdict:
    reason: str | None  # None: nothing found
    watched: tuple[tuple[str, int], ...]  # every file and folder read, with its mtime (the index watches them)


class ProjectScanner:
    """Scans project skills, remembering verdicts by content in ``cache_file`` (None: in memory only)."""

    def __init__(self, cache_file: Path | None) -> None:
        self.cache_file = cache_file
        self._seen: dict[str, tuple[tuple[tuple[str, int, int], ...], str | None]] = {}
        self._stored: dict[str, Any] | None = None
        self._guard = threading.Lock()

    def check(self, skill_dir: str, settled_before: int) -> Verdict:
        """Why the skill in ``skill_dir`` is quarantined, or None; rescanned only when its files changed."""
        files, watched, problem = _files(skill_dir)
        signature = tuple((rel, size, mtime) for rel, size, mtime, _ in files)
        if problem is not None:
            return Verdict(problem, watched)
        settled = all(mtime < settled_before for _, _, mtime, _ in files)
        with self._guard:
            known = self._seen.get(skill_dir)
        if known is not None and known[0] == signature and settled:
            return Verdict(known[1], watched)
        reason = self._verdict(files)
        with self._guard:
            self._seen[skill_dir] = (signature, reason)
        return Verdict(reason, watched)

    def _verdict(self, files: list[tuple[str, int, int, str]]) -> str | None:
        contents: list[tuple[str, bytes]] = []
        for rel, _, _, path in files:
            try:
                with open(path, "rb") as handle:
                    contents.append((rel, handle.read(MAX_BYTES + 1)))
            except OSError as error:
                return f"{one_line(rel, 120)} cannot be read ({error.strerror or error})"
        digest = hashlib.sha256(SCANNER.encode())
        for rel, data in contents:
            digest.update(rel.encode() + b"\0" + len(data).to_bytes(8, "big") + data)
        key = digest.hexdigest()
        stored = self._load().get(key)
        if isinstance(stored, dict) and "reason" in stored:
            reason = stored["reason"]
            return reason if isinstance(reason, str) else None
        reason = _scanned(contents)
        if reason is not None:
            log.warning("quarantined a project skill: %s", reason)
        self._remember(key, reason)
        return reason

    def _load(self) -> dict[str, Any]:
        with self._guard:
            if self._stored is None:
                self._stored = _read(self.cache_file) if self.cache_file is not None else {}
            return self._stored

    def _remember(self, key: str, reason: str | None) -> None:
        with self._guard:
            if self._stored is None:
                self._stored = {}
            self._stored[key] = {"reason": reason}
        if self.cache_file is None:
            return
        try:
            with exclusive_lock(lock_path_for(self.cache_file)):
                current = _read(self.cache_file)
                current[key] = {"reason": reason}
                for old in list(current)[:-_KEPT_VERDICTS]:  # oldest first (insertion order)
                    del current[old]
                write_text_exactly(Path(os.path.realpath(self.cache_file)), json.dumps(current), private=True)
        except OSError as error:
            log.warning("could not keep a project skill's scan in %s: %s", self.cache_file, error)


def _read(path: Path | None) -> dict[str, Any]:
    if path is None:
        return {}
    try:
        loaded = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return loaded if isinstance(loaded, dict) else {}


def _files(skill_dir: str) -> tuple[list[tuple[str, int, int, str]], tuple[tuple[str, int], ...], str | None]:
    """(relative path, size, mtime, path) of each regular file under ``skill_dir`` (links not followed),
    every file and folder with its mtime, and why it cannot be scanned at all."""
    files: list[tuple[str, int, int, str]] = []
    watched: list[tuple[str, int]] = []
    for directory, dirs, names in os.walk(skill_dir):
        try:
            watched.append((directory, os.stat(directory).st_mtime_ns))
        except OSError:
            continue
        dirs.sort()
        for name in sorted(names):
            path = os.path.join(directory, name)
            try:
                found = os.lstat(path)
            except OSError:
                continue
            if not stat.S_ISREG(found.st_mode):
                continue  # a link is never read through (viewing refuses it too), nor watched
            watched.append((path, found.st_mtime_ns))
            rel = os.path.relpath(path, skill_dir).replace(os.sep, "/")
            if found.st_size > MAX_BYTES:
                return files, tuple(watched), f"{one_line(rel, 120)} is over {MAX_BYTES:,} bytes, too large to scan"
            files.append((rel, found.st_size, found.st_mtime_ns, path))
        if len(files) > MAX_FILES:
            return files, tuple(watched), f"it holds more than {MAX_FILES} files, too many to scan"
    return files, tuple(watched), None


def _scanned(contents: list[tuple[str, bytes]]) -> str | None:
    """The first file whose text the threat scanner flags, with what it found; None when all are clean."""
    for rel, data in contents:
        if b"\0" in data[:8192]:
            continue  # binary: never shown to the model as text
        findings = scan(data.decode("utf-8", errors="replace"), "strict")
        if findings:
            ids = ", ".join(dict.fromkeys(finding.pattern_id for finding in findings))
            return f"{one_line(rel, 120)} matches the threat scanner ({ids})"
    return None
