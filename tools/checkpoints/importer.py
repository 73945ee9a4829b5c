"""Writing one snapshot: the changed files streamed into one ``git fast-import``, on top of the last tree.

Why fast-import: it writes the blobs, the trees and the commit into one pack and points the ref
at the commit, all in one process. The plumbing way (``update-index``, ``write-tree``,
``commit-tree``, ``update-ref``) takes four processes and writes every new object as a file of
its own, which cost up to a millisecond each on the ext4 disk the benchmark ran on.

The commit starts from the tree of the previous snapshot (``M 040000 <tree> ""``) and applies the
changes the listing found: deletions first (so a file may take the place of a directory), then
each changed file read once, its blob id hashed here as git would. The same ids go into the
index (``--index-info``), so the index and the tree stay equal in content by construction, even
when a file changes again while the snapshot runs (the index then holds what the tree holds,
and the next listing sees the newer file as modified).
"""

from __future__ import annotations

import hashlib
import os
import stat
from collections.abc import Iterator
from pathlib import Path

from acp_hermes_tools.checkpoints.git import EMAIL, IDENTITY, Git
from acp_hermes_tools.checkpoints.records import ABSENT, FileState
from acp_hermes_tools.checkpoints.scan import Listing

_FAST_IMPORT = (
    "-c", "core.compression=1",  # a few times faster than the default level; repacks keep it small
    "-c", "fastimport.unpackLimit=0",  # always a pack: loose objects are what is slow
    "fast-import", "--quiet", "--force", "--done", "--depth=0",  # no deltas now: a repack makes them
)
_REMOVED = b"0 " + b"0" * 40 + b"\t"


# A plain class, not a dataclass: defining one costs about a millisecond before the first prompt.
class Plan:
    """What the listing's paths turned out to be, by ``lstat``, before anything is read."""

    __slots__ = ("read", "remove", "skipped_large", "skipped_unreadable")

    def __init__(self, remove: list[str] | None = None, read: list[str] | None = None,
                 skipped_large: list[str] | None = None, skipped_unreadable: list[str] | None = None) -> None:
        self.remove: list[str] = [] if remove is None else remove  # tracked, and gone or no longer a file to keep
        self.read: list[str] = [] if read is None else read  # files and symlinks to store
        self.skipped_large: list[str] = [] if skipped_large is None else skipped_large
        self.skipped_unreadable: list[str] = [] if skipped_unreadable is None else skipped_unreadable


# A plain class, not a dataclass: defining one costs about a millisecond before the first prompt.
class Written:
    __slots__ = ("commit", "index_info", "stored_bytes", "tree")

    def __init__(self, commit: str = "", tree: str = "", index_info: list[bytes] | None = None,
                 stored_bytes: int = 0) -> None:
        self.commit = commit
        self.tree = tree
        # ``update-index -z --index-info`` records
        self.index_info: list[bytes] = [] if index_info is None else index_info
        self.stored_bytes = stored_bytes  # of file content: what the index's refresh will hash again


def plan(workspace: Path, listing: Listing, max_file_bytes: int) -> Plan:
    """Sort the listed paths by what they are now; what is left out is known before the commit's message."""
    found = Plan()
    for path, tracked in [*((path, True) for path in listing.tracked), *((path, False) for path in listing.untracked)]:
        full = os.path.join(workspace, path)
        try:
            info = os.lstat(full)
        except (FileNotFoundError, NotADirectoryError):
            info = None
        if info is None or not (stat.S_ISREG(info.st_mode) or stat.S_ISLNK(info.st_mode)) or (
                tracked and _beyond_symlink(workspace, path)):
            if tracked:  # deleted, a directory (its files are listed on their own), a socket, or behind a symlink
                found.remove.append(path)
            continue
        skipped = None
        if stat.S_ISREG(info.st_mode):
            if info.st_size > max_file_bytes:
                skipped = found.skipped_large
            elif not os.access(full, os.R_OK):
                skipped = found.skipped_unreadable
        if skipped is None:
            found.read.append(path)
        else:
            skipped.append(path)
            if tracked:
                found.remove.append(path)
    return found


def commit(git: Git, workspace: Path, found: Plan, *, base_tree: str | None, ref: str, message: bytes,
           when: int, max_file_bytes: int) -> Written:
    """Write the snapshot's commit and point ``ref`` at it (one git process)."""
    written = Written()
    output = git.feed(*_FAST_IMPORT, chunks=_stream(workspace, found, base_tree, ref, message, when,
                                                     max_file_bytes, written))
    tree_line, commit_line = output.splitlines()[-2:]
    written.tree, written.commit = tree_line.split()[2].decode(), commit_line.decode().strip()
    return written


def _stream(workspace: Path, found: Plan, base_tree: str | None, ref: str, message: bytes, when: int,
            max_file_bytes: int, written: Written) -> Iterator[bytes]:
    yield (b"feature done\ncommit %s\nmark :1\ncommitter %s <%s> %d +0000\ndata %d\n%s\n"
           % (ref.encode(), IDENTITY.encode(), EMAIL.encode(), when, len(message), message))
    if base_tree is not None:
        yield b'M 040000 %s ""\n' % base_tree.encode()
    for path in found.remove:
        raw = os.fsencode(path)
        yield b"D %s\n" % _quoted(raw)
        written.index_info.append(_REMOVED + raw + b"\0")
    for path in found.read:
        raw = os.fsencode(path)
        content = _read(os.path.join(workspace, path), max_file_bytes)
        if content is None:
            continue  # it changed under us: the index keeps the old entry, so the next listing names it again
        mode, data = content
        yield b"M %s inline %s\ndata %d\n" % (mode, _quoted(raw), len(data))
        yield data
        yield b"\n"
        written.index_info.append(b"%s %s\t%s\0" % (mode, _blob_id(data).encode(), raw))
        written.stored_bytes += len(data)
    yield b'\nls :1 ""\nget-mark :1\ndone\n'


def state_now(workspace: Path, path: str, max_file_bytes: int) -> FileState:
    """What ``path`` would be in a snapshot taken now, read without taking one (nothing is written):
    ``ABSENT`` when it is missing, no file or link, behind a symlinked directory, or too big to keep."""
    content = None if _beyond_symlink(workspace, path) else _read(os.path.join(workspace, path), max_file_bytes)
    if content is None:
        return ABSENT
    mode, data = content
    return FileState(_blob_id(data), mode.decode())


def _blob_id(data: bytes) -> str:
    """The id git gives a blob of ``data`` (the store is a SHA-1 repository)."""
    blob = hashlib.sha1(b"blob %d\0" % len(data))
    blob.update(data)
    return blob.hexdigest()


def _beyond_symlink(workspace: Path, path: str) -> bool:
    """Whether a directory on the way to this tracked path is a symlink now (git's walk never enters one,
    but the index still names the path, and reading it would follow the link, maybe out of the workspace)."""
    parent = os.path.join(workspace, os.path.dirname(path))
    return os.path.realpath(parent) != os.path.normpath(parent)


def _read(full: str, max_file_bytes: int) -> tuple[bytes, bytes] | None:
    """(git mode, content) of a file or symlink; None when it is no longer what ``plan`` saw."""
    try:
        if stat.S_ISLNK(os.lstat(full).st_mode):
            return b"120000", os.readlink(os.fsencode(full))
        fd = os.open(full, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
        with os.fdopen(fd, "rb") as handle:
            data = handle.read(max_file_bytes + 1)
            executable = os.fstat(fd).st_mode & stat.S_IXUSR
    except OSError:
        return None
    if len(data) > max_file_bytes:
        return None
    return (b"100755" if executable else b"100644"), data


def _quoted(raw: bytes) -> bytes:
    """A path as fast-import reads it: as is, unless it starts with a quote or holds a line break."""
    if not raw.startswith(b'"') and b"\n" not in raw:
        return raw
    return b'"' + raw.replace(b"\\", b"\\\\").replace(b'"', b'\\"').replace(b"\n", b"\\n") + b'"'
