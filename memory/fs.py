"""File primitives every store relies on: atomic replacement and an exclusive cross-process lock.

A reader sees the old file or the new one, never half of either; a writer that must re-read
before it writes (so a concurrent process's change is not lost) holds the file's lock while it
does both.

Writes and deletes never follow a symlink on the way: ``write_text_exactly`` and
``delete_exactly`` walk to the parent directory one component at a time by file descriptor,
refusing any component that is (or just became) a symlink, and act relative to that directory.
So a path approved after resolving it is the path written, even when something swaps a
directory for a link in between (``PathChanged``).
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


class PathChanged(OSError):
    """A directory on the way to the file is a symlink now: it changed since the path was checked."""


def atomic_write_text(path: Path, text: str, *, mode: int | None = None) -> None:
    """Write ``text`` to ``path`` (symlinks in it resolved now) through a synced temp file and a rename.

    Parent directories are created. ``mode`` defaults to the existing file's permissions
    (0644 for a new file; the temp file is created 0600 and chmodded).
    """
    write_text_exactly(Path(os.path.realpath(path)), text, mode=mode)


def write_text_exactly(path: Path, text: str, *, mode: int | None = None) -> None:
    """``atomic_write_text`` for a path already resolved and checked: nothing on the way may be a symlink."""
    if not _DIR_FD:
        _write_through_paths(path, text, mode)
        return
    with _directory(path.parent, create=True) as directory:
        if mode is None:
            try:
                mode = stat.S_IMODE(os.stat(path.name, dir_fd=directory, follow_symlinks=False).st_mode)
            except FileNotFoundError:
                mode = 0o644
        for _ in range(100):
            temporary = f".{path.name}.{os.urandom(6).hex()}.tmp"
            try:
                fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600, dir_fd=directory)
                break
            except FileExistsError:
                continue
        else:
            raise FileExistsError(f"no free temporary name next to {path}")
        try:
            with os.fdopen(fd, "w", encoding="utf-8", newline="") as handle:
                handle.write(text)
                handle.flush()
                os.fchmod(handle.fileno(), mode)
                os.fsync(handle.fileno())
            os.replace(temporary, path.name, src_dir_fd=directory, dst_dir_fd=directory)
        except BaseException:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(temporary, dir_fd=directory)
            raise


def delete_exactly(path: Path) -> None:
    """Remove the file ``path`` names (nothing when it is gone), following no symlink on the way."""
    if not _DIR_FD:
        path.unlink(missing_ok=True)
        return
    with contextlib.suppress(FileNotFoundError), _directory(path.parent, create=False) as directory:
        os.unlink(path.name, dir_fd=directory)


def check_unchanged(path: Path) -> None:
    """Raise ``PathChanged`` when a directory on the way to ``path`` is a symlink (for a write that
    someone else carries out, such as the editor's: checked just before handing it over)."""
    if not _DIR_FD:
        return
    existing = path.parent
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    with _directory(existing, create=False):
        pass


_DIR_FD = os.open in os.supports_dir_fd and hasattr(os, "O_NOFOLLOW") and hasattr(os, "O_DIRECTORY")


@contextlib.contextmanager
def _directory(path: Path, *, create: bool) -> Iterator[int]:
    """A descriptor of directory ``path``, reached from / one component at a time, no symlink followed."""
    if not path.is_absolute():
        raise ValueError(f"{path} is not absolute")
    flags = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW
    fd = os.open("/", flags)
    try:
        for part in path.parts[1:]:
            try:
                following = os.open(part, flags, dir_fd=fd)
            except FileNotFoundError:
                if not create:
                    raise
                with contextlib.suppress(FileExistsError):
                    os.mkdir(part, 0o777, dir_fd=fd)
                following = _open_component(part, flags, fd, path)
            except OSError as exc:
                raise _changed(path, part, fd) from exc
            os.close(fd)
            fd = following
        yield fd
    finally:
        os.close(fd)


def _open_component(part: str, flags: int, parent: int, path: Path) -> int:
    try:
        return os.open(part, flags, dir_fd=parent)
    except OSError as exc:
        raise _changed(path, part, parent) from exc


def _changed(path: Path, part: str, parent: int) -> OSError:
    try:
        is_link = stat.S_ISLNK(os.stat(part, dir_fd=parent, follow_symlinks=False).st_mode)
    except OSError:
        is_link = False
    if is_link:
        return PathChanged(f"{path}: {part!r} is a symlink now; the path changed since it was checked")
    return NotADirectoryError(f"{path}: {part!r} is not a directory")


def _write_through_paths(path: Path, text: str, mode: int | None) -> None:
    """Where the OS has no directory descriptors (Windows): temp file and rename by path."""
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
