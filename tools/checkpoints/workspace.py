"""Writing and deleting workspace files for a restore, never through a symlink and never outside.

A restore writes where a snapshot says, and the workspace may have changed since: a directory on
the way may now be a symlink to somewhere else. So every path is walked from the workspace root
one component at a time by file descriptor (``O_NOFOLLOW``), and the file is made relative to
its parent's descriptor: a symlinked parent is refused, not followed. Git never records a path
through a symlink, so a snapshot never needs one. Paths with ``..``, empty or ``.git``
components are refused outright.

Each file is written to a temp file in its own directory and renamed over the old one, so a
reader (or a killed restore) sees the old file or the new one, never half of it. Temp files are
named ``.acp-hermes-restore-*.tmp``; ``remove_temp_files`` sweeps what a killed restore left.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from collections.abc import Iterator
from pathlib import Path

from acp_hermes_tools.checkpoints.records import CheckpointsUnavailable

TEMP_PREFIX = ".acp-hermes-restore-"
SYMLINK = "120000"
EXECUTABLE = "100755"
MODES = frozenset({"100644", EXECUTABLE, SYMLINK})
_DIRECTORY_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


class Refused(Exception):
    """This path cannot be restored; the message says why (it goes into the report)."""


def components(path: str) -> list[str]:
    """The path's components, or ``Refused`` for one that is absolute, leaves the workspace or enters ``.git``."""
    parts = path.split("/")
    if not path or "\0" in path or any(part in ("", ".", "..") for part in parts):
        raise Refused("not a plain relative path inside the workspace")
    if any(part.casefold() == ".git" for part in parts):
        raise Refused("inside a .git directory")
    return parts


@contextlib.contextmanager
def opened_root(root: Path) -> Iterator[int]:
    """A descriptor of the workspace root for the walks below."""
    try:
        fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError as exc:
        raise CheckpointsUnavailable(f"the workspace {root} cannot be opened: {exc.strerror or exc}") from exc
    try:
        yield fd
    finally:
        os.close(fd)


def delete(root_fd: int, parts: list[str]) -> None:
    """Remove the file (nothing when it is already gone), then the directories that it leaves empty."""
    with _walk(root_fd, parts[:-1], create=False) as chain:
        if chain is None:
            return
        try:
            if stat.S_ISDIR(os.lstat(parts[-1], dir_fd=chain[-1]).st_mode):
                raise Refused("a directory is there now")
            os.unlink(parts[-1], dir_fd=chain[-1])
        except FileNotFoundError:
            return
        for depth in range(len(chain) - 1, 0, -1):
            try:
                os.rmdir(parts[depth - 1], dir_fd=chain[depth - 1])
            except OSError:
                break


def write(root_fd: int, parts: list[str], data: bytes, mode: str) -> None:
    """Make the file ``data`` with ``mode`` (a symlink to ``data`` for 120000), atomically."""
    with _walk(root_fd, parts[:-1], create=True) as chain:
        assert chain is not None
        parent, name = chain[-1], parts[-1]
        keep = _existing_permissions(parent, name)
        temporary = f"{TEMP_PREFIX}{os.urandom(6).hex()}.tmp"
        try:
            if mode == SYMLINK:
                os.symlink(os.fsdecode(data), temporary, dir_fd=parent)
            else:
                _write_file(parent, temporary, data, executable=mode == EXECUTABLE, keep=keep)
            os.replace(temporary, name, src_dir_fd=parent, dst_dir_fd=parent)
        except BaseException:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(temporary, dir_fd=parent)
            raise


def remove_temp_files(root_fd: int, directory: list[str]) -> None:
    """Delete restore temp files in this directory (the store's lock says no restore is under way)."""
    with _walk(root_fd, directory, create=False) as chain:
        if chain is None:
            return
        for name in os.listdir(chain[-1]):
            if name.startswith(TEMP_PREFIX) and name.endswith(".tmp"):
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(name, dir_fd=chain[-1])


def _write_file(parent: int, name: str, data: bytes, *, executable: bool, keep: int | None) -> None:
    # A new file gets 0666/0777 less the umask, as git would give it; an existing one keeps its
    # permissions, with the execute bits set (where it is readable) or cleared as the snapshot says.
    fd = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
                 0o777 if executable else 0o666, dir_fd=parent)
    with os.fdopen(fd, "wb") as handle:
        handle.write(data)
        handle.flush()
        if keep is not None:
            os.fchmod(fd, (keep | (keep & 0o444) >> 2) if executable else (keep & ~0o111))
        os.fsync(fd)


def _existing_permissions(parent: int, name: str) -> int | None:
    """The permission bits of the regular file there now; None when there is none (an empty directory
    in the way is removed; anything else but a file or symlink is refused)."""
    try:
        info = os.lstat(name, dir_fd=parent)
    except FileNotFoundError:
        return None
    if stat.S_ISREG(info.st_mode):
        return stat.S_IMODE(info.st_mode)
    if stat.S_ISDIR(info.st_mode):
        try:
            os.rmdir(name, dir_fd=parent)
        except OSError as exc:
            raise Refused("a directory that is not empty is there now") from exc
    elif not stat.S_ISLNK(info.st_mode):
        raise Refused("something other than a file is there now")
    return None


@contextlib.contextmanager
def _walk(root_fd: int, directories: list[str], *, create: bool) -> Iterator[list[int] | None]:
    """Descriptors of the root and each directory below it on the way (made when ``create``); None
    when one is missing and not ``create``. A symlink or a file on the way is ``Refused``."""
    chain = [os.dup(root_fd)]
    try:
        for part in directories:
            try:
                chain.append(os.open(part, _DIRECTORY_FLAGS, dir_fd=chain[-1]))
                continue
            except FileNotFoundError:
                if not create:
                    yield None
                    return
            except OSError as exc:
                raise _refusal(chain[-1], part, exc) from exc
            with contextlib.suppress(FileExistsError):
                os.mkdir(part, 0o777, dir_fd=chain[-1])
            try:
                chain.append(os.open(part, _DIRECTORY_FLAGS, dir_fd=chain[-1]))
            except OSError as exc:
                raise _refusal(chain[-1], part, exc) from exc
        yield chain
    finally:
        for fd in chain:
            os.close(fd)


def _refusal(parent: int, part: str, exc: OSError) -> Refused:
    try:
        is_link = stat.S_ISLNK(os.lstat(part, dir_fd=parent).st_mode)
    except OSError:
        is_link = False
    if is_link or exc.errno == errno.ELOOP:
        return Refused(f"{part!r} on the way is a symlink now; restores do not follow symlinks")
    if exc.errno == errno.ENOTDIR:
        return Refused(f"{part!r} on the way is not a directory now")
    return Refused(f"{part!r}: {exc.strerror or exc}")
