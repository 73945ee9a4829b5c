"""Temp directories this process owns (the sandbox's private ``$TMPDIR``s, the seccomp filter's folder,
background commands' logs).

Each is named ``acp-hermes-<kind>-<pid>-…`` after the process that made it, so whatever ends that
process, a later start can tell its folders from a running server's and remove them: one killed by
SIGKILL or a crash leaves its folders for the next start; ``remove_owned`` removes this process's own
at exit and on SIGTERM/SIGHUP (``acp-hermes serve``). A folder is only ever removed when its owner
is gone and it belongs to this user; a live owner's (or one whose pid is now another process's)
is kept.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import re
import shutil
import stat
import tempfile
import threading
from pathlib import Path

PREFIX = "acp-hermes-"
# The kinds a dead process's folder is recognised by: never a user's own acp-hermes-* folder.
_OWNED_NAME = re.compile(r"acp-hermes-(?:sandbox|seccomp|probe|jobs)-(\d+)-")

_owned: set[Path] = set()
_lock = threading.Lock()
_at_exit = False


def make(kind: str, tag: str = "") -> Path:
    """A new private (0700) temp directory named after this process, removed at exit unless ``release``d first."""
    global _at_exit
    path = Path(tempfile.mkdtemp(prefix=f"{PREFIX}{kind}-{os.getpid()}-{tag + '-' if tag else ''}"))
    with _lock:
        _owned.add(path)
        if not _at_exit:
            atexit.register(remove_owned)
            _at_exit = True
    return path


def release(path: Path) -> None:
    """Remove ``path`` (one made by ``make``), whatever a command left in it."""
    with _lock:
        _owned.discard(path)
    _remove_tree(path)


def remove_owned() -> None:
    """Remove every folder this process made and still holds (at exit, or on a signal that ends it)."""
    with _lock:
        owned = list(_owned)
        _owned.clear()
    for path in owned:
        _remove_tree(path)


def remove_dead_owners(directory: Path | None = None) -> list[Path]:
    """Remove the folders in the temp directory whose owner process is gone; the ones removed."""
    directory = directory or Path(tempfile.gettempdir())
    removed = []
    try:
        entries = list(os.scandir(directory))
    except OSError:
        return []
    for entry in entries:
        match = _OWNED_NAME.match(entry.name)
        if match is None or int(match.group(1)) == os.getpid() or _alive(int(match.group(1))):
            continue
        try:
            found = entry.stat(follow_symlinks=False)
        except OSError:
            continue
        if stat.S_ISDIR(found.st_mode) and found.st_uid == os.geteuid():
            _remove_tree(Path(entry.path))
            removed.append(Path(entry.path))
    return removed


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # another user's process (EPERM): alive
        return True
    return True


def _remove_tree(path: Path) -> None:
    """Remove ``path`` and everything in it. A folder a command left without permissions (``chmod 000``)
    is given them back and the removal tried again: every folder in there is this user's own."""
    shutil.rmtree(path, ignore_errors=True)
    if not os.path.lexists(path) or os.path.islink(path):
        return
    with contextlib.suppress(OSError):
        os.chmod(path, stat.S_IRWXU)
    for root, folders, _ in os.walk(path):  # top-down: each folder is made enterable before it is walked
        for name in folders:
            folder = os.path.join(root, name)
            if not os.path.islink(folder):
                with contextlib.suppress(OSError):
                    os.chmod(folder, stat.S_IRWXU)
    shutil.rmtree(path, ignore_errors=True)
