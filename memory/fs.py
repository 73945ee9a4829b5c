"""File primitives every store relies on: atomic replacement and an exclusive cross-process lock.

A reader sees the old file or the new one, never half of either; a writer that must re-read
before it writes (so a concurrent process's change is not lost) holds the file's lock while it
does both.
"""

from __future__ import annotations

import contextlib
import logging
import os
import stat
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import IO

log = logging.getLogger(__name__)

PRIVATE_DIR_MODE = 0o700
PRIVATE_FILE_MODE = 0o600
STALE_TEMP_SECONDS = 3600.0  # a temp file this old is the leftover of a write that never finished


def atomic_write_text(path: Path, text: str, *, mode: int | None = None) -> None:
    """Write ``text`` to ``path`` via a synced temp file in the same directory and a rename.

    Parent directories are created. ``mode`` defaults to the existing file's permissions
    (0644 for a new file, subject to nothing: the temp file is created 0600 and chmodded).
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    if mode is None:
        try:
            mode = stat.S_IMODE(path.stat().st_mode)
        except FileNotFoundError:
            mode = 0o644
    fd, tmp_name = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    tmp = Path(tmp_name)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def private_directory(path: Path) -> Path:
    """``path`` as a directory only its owner can enter (made if needed, tightened if looser)."""
    path.mkdir(parents=True, exist_ok=True, mode=PRIVATE_DIR_MODE)
    if stat.S_IMODE(path.stat().st_mode) & 0o077:
        os.chmod(path, PRIVATE_DIR_MODE)
    return path


def private_file(path: Path) -> Path:
    """``path`` as a file only its owner can read: created empty if missing, tightened if looser."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, PRIVATE_FILE_MODE)
    try:
        if stat.S_IMODE(os.fstat(fd).st_mode) & 0o077:
            os.fchmod(fd, PRIVATE_FILE_MODE)
    finally:
        os.close(fd)
    return path


def remove_stale_temp_files(directory: Path, *, older_than: float = STALE_TEMP_SECONDS) -> list[Path]:
    """Delete the temp files ``atomic_write_text`` left in ``directory`` when a write was killed.

    Only files of its own naming (``.<name>.<random>.tmp``) older than ``older_than`` seconds go:
    a younger one may belong to a write under way in another process.
    """
    removed = []
    cutoff = time.time() - older_than
    with contextlib.suppress(FileNotFoundError, NotADirectoryError):
        for entry in os.scandir(directory):
            if not (entry.name.startswith(".") and entry.name.endswith(".tmp") and entry.is_file()):
                continue
            with contextlib.suppress(FileNotFoundError):
                if entry.stat().st_mtime < cutoff:
                    os.unlink(entry.path)
                    removed.append(Path(entry.path))
    if removed:
        log.info("removed %d stale temporary file(s) in %s", len(removed), directory)
    return removed


def lock_path_for(path: Path) -> Path:
    """The sibling ``<file>.lock`` that guards ``path`` (the convention Hermes Agent uses too)."""
    return path.with_name(path.name + ".lock")


@contextlib.contextmanager
def exclusive_lock(lock_path: Path) -> Iterator[None]:
    """Hold an exclusive OS lock on ``lock_path`` (created if needed) for the ``with`` body.

    Blocks while another process holds it: call it from a worker thread in async code.
    """
    lock_path.parent.mkdir(parents=True, exist_ok=True)
    with open(lock_path, "a+b") as handle:
        _lock(handle)
        try:
            yield
        finally:
            _unlock(handle)


if sys.platform == "win32":
    import msvcrt

    def _lock(handle: IO[bytes]) -> None:
        handle.seek(0)
        while True:  # LK_LOCK gives up after ~10 s of retries; keep waiting like flock does
            try:
                msvcrt.locking(handle.fileno(), msvcrt.LK_LOCK, 1)
                return
            except OSError:
                continue

    def _unlock(handle: IO[bytes]) -> None:
        handle.seek(0)
        msvcrt.locking(handle.fileno(), msvcrt.LK_UNLCK, 1)

else:
    import fcntl

    def _lock(handle: IO[bytes]) -> None:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX)

    def _unlock(handle: IO[bytes]) -> None:
        fcntl.flock(handle.fileno(), fcntl.LOCK_UN)
