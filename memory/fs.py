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
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, Any

log = logging.getLogger(__name__)

PRIVATE_DIR_MODE = 0o700
PRIVATE_FILE_MODE = 0o600
STALE_TEMP_SECONDS = 3600.0  # a temp file this old is the leftover of a write that never finished


class PathChanged(OSError):
    """A directory on the way to the file is a symlink now: it changed since the path was checked."""


def atomic_write_text(path: Path, text: str, *, mode: int | None = None, private: bool = False) -> None:
    """Write ``text`` to ``path`` (symlinks in it resolved now) through a synced temp file and a rename.

    Parent directories are created. ``mode`` defaults to the existing file's permissions
    (0644 for a new file; the temp file is created 0600 and chmodded). ``private`` is for the
    agent's own files (memory, skills, settings): a new file is 0600 and the directories made on
    the way 0700, whatever the umask; an existing file keeps its mode.
    """
    write_text_exactly(Path(os.path.realpath(path)), text, mode=mode, private=private)


def write_text_exactly(path: Path, text: str, *, mode: int | None = None, private: bool = False) -> None:
    """``atomic_write_text`` for a path already resolved and checked: nothing on the way may be a symlink."""
    if not _DIR_FD:
        _write_through_paths(path, text, mode, private)
        return
    with _directory(path.parent, create=True, private=private) as directory:
        if mode is None:
            try:
                mode = stat.S_IMODE(os.stat(path.name, dir_fd=directory, follow_symlinks=False).st_mode)
            except FileNotFoundError:
                mode = PRIVATE_FILE_MODE if private else 0o644
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
def _directory(path: Path, *, create: bool, private: bool = False) -> Iterator[int]:
    """A descriptor of directory ``path``, reached from / one component at a time, no symlink followed
    (missing directories made when ``create``: 0700 when ``private``, else as the umask says)."""
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
                    os.mkdir(part, PRIVATE_DIR_MODE if private else 0o777, dir_fd=fd)
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


def _write_through_paths(path: Path, text: str, mode: int | None, private: bool) -> None:
    """Where the OS has no directory descriptors (Windows): temp file and rename by path."""
    if private:
        make_private_directories(path.parent)
    else:
        path.parent.mkdir(parents=True, exist_ok=True)
    if mode is None:
        try:
            mode = stat.S_IMODE(path.stat().st_mode)
        except FileNotFoundError:
            mode = PRIVATE_FILE_MODE if private else 0o644
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


# Every folder and file the agent creates under HERMES_HOME comes from here: folders 0700, files
# 0600, whatever the umask (a mode given at creation only loses bits to it, and these have none
# it takes away but the owner's). What the user made keeps its mode; acp-hermes's own folder
# (``$HERMES_HOME/acp-hermes``) and its database and logs are tightened when found looser.


def make_private_directories(path: Path) -> Path:
    """Make ``path`` and each missing directory above it 0700; directories that exist are left as they are."""
    missing: list[Path] = []
    current = path
    while not current.is_dir() and current.parent != current:
        missing.append(current)
        current = current.parent
    for directory in reversed(missing):
        with contextlib.suppress(FileExistsError):  # made meanwhile by another process: left as it is
            os.mkdir(directory, PRIVATE_DIR_MODE)
    if not path.is_dir():
        raise NotADirectoryError(f"{path} is not a directory")
    return path


def private_directory(path: Path, *, tighten: bool = True) -> Path:
    """``path`` as a directory only its owner can enter: made 0700 with every missing parent, and
    tightened if looser when ``tighten`` (acp-hermes's own folders; not one the user shares)."""
    make_private_directories(path)
    if tighten and stat.S_IMODE(path.stat().st_mode) & 0o077:
        os.chmod(path, PRIVATE_DIR_MODE)
    return path


def private_file(path: Path, *, tighten: bool = True) -> Path:
    """``path`` as a file only its owner can read: created empty (0600) if missing, its folders made
    as ``private_directory`` does, and tightened if looser when ``tighten``."""
    make_private_directories(path.parent)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, PRIVATE_FILE_MODE)
    try:
        if tighten and stat.S_IMODE(os.fstat(fd).st_mode) & 0o077:
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


def set_aside_unreadable(path: Path, format_name: str) -> Path:
    """Move a file that is not valid ``format_name`` aside, named with the time, before it is written
    anew: a hand-edited file with a typo is kept, not lost. Returns where it went."""
    kept = path.with_name(f"{path.name}.unreadable-{time.strftime('%Y%m%d-%H%M%S')}")
    os.replace(path, kept)
    log.warning("%s was not valid %s; kept it as %s and started a new one", path, format_name, kept)
    return kept


class MappingFile:
    """A small store file of one mapping (JSON, YAML) that every process reads and writes: an unreadable
    one counts as empty; before a write (``keep_unreadable``) it is moved aside so a hand-edited file
    with a typo is not lost, and on a read the log says once what is ignored (``ignored``)."""

    def __init__(self, path: Path, format_name: str, parse: Callable[[str], Any], ignored: str) -> None:
        self.path = path
        self._format_name = format_name
        self._parse = parse  # raises ValueError on text that is not the format
        self._ignored = ignored
        self._warned = False

    def read(self, *, keep_unreadable: bool = False) -> dict[str, Any]:
        try:
            text = self.path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return {}
        try:
            data = self._parse(text)
        except ValueError:
            if keep_unreadable:
                set_aside_unreadable(self.path, self._format_name)
            elif not self._warned:
                self._warned = True
                log.warning("%s is not valid %s; %s", self.path, self._format_name, self._ignored)
            return {}
        return data if isinstance(data, dict) else {}


def lock_path_for(path: Path) -> Path:
    """The sibling ``<file>.lock`` that guards ``path`` (the convention Hermes Agent uses too)."""
    return path.with_name(path.name + ".lock")


@contextlib.contextmanager
def exclusive_lock(lock_path: Path) -> Iterator[None]:
    """Hold an exclusive OS lock on ``lock_path`` (created 0600 if needed, its folders 0700) for the
    ``with`` body.

    Blocks while another process holds it: call it from a worker thread in async code.
    """
    make_private_directories(lock_path.parent)
    fd = os.open(lock_path, os.O_RDWR | os.O_CREAT | os.O_APPEND | getattr(os, "O_BINARY", 0), PRIVATE_FILE_MODE)
    with os.fdopen(fd, "a+b") as handle:
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
