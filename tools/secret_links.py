"""Hard links to secrets: a file that is, under another name, one of the user's credentials.

Reads ask for secret paths by name (``tools.sensitive_paths``), and a hard link gives a secret a
harmless name (``notes.txt`` in the workspace, the very inode of ``~/.ssh/id_rsa``). Only a regular
file with more than one link can be one, so only those are looked up, by (device, inode), among
the files at the known secret locations: the credentials the sandbox hides in home
(``tools.sandbox.HIDDEN_IN_HOME``), the sensitive files directly in home (private keys, ``.env``,
``.netrc``, profiles) and everything under ``$HERMES_HOME``. The index is built on the first such
lookup of a session (on a worker thread: it walks those directories) and kept for the session.

Package managers that hard-link a shared store (pnpm, uv) are left alone: their inodes are in no
secret location. Directories that are code rather than secrets (``.git``, virtual environments,
``node_modules``) are not walked under ``$HERMES_HOME``.
"""

from __future__ import annotations

import logging
import os
import stat
import threading
from collections.abc import Iterable, Sequence
from pathlib import Path

import anyio

log = logging.getLogger(__name__)

MAX_INDEXED = 50_000  # files stat'ed to build the index: a bound on a huge $HERMES_HOME
_HOME_FILES = (".config/git/config", ".config/fish/config.fish")  # sensitive, but not directly in home
_NOT_SECRETS = frozenset({".git", "node_modules", ".venv", "venv", "site-packages", "__pycache__", ".cache"})

Inode = tuple[int, int]


class SecretLinks:
    """One session's lookup of hard links to secrets (``home`` and ``hermes_home`` as the gate sees them)."""

    def __init__(self, home: Path, hermes_home: Path) -> None:
        self.home = home
        self.hermes_home = hermes_home
        self._index: dict[Inode, Path] | None = None
        self._lock = threading.Lock()

    async def secrets_behind(self, paths: Sequence[Path]) -> dict[Path, Path]:
        """Each of ``paths`` that is a hard link to a secret file, with that file's path."""
        found = await anyio.to_thread.run_sync(self._secrets_behind, tuple(paths))
        for path, secret in found.items():
            log.info("%s is a hard link to the secret %s", path, secret)
        return found

    def _secrets_behind(self, paths: Sequence[Path]) -> dict[Path, Path]:
        found = {}
        for path in paths:
            secret = self.secret_behind(path)
            if secret is not None and secret != path:
                found[path] = secret
        return found

    def secret_behind(self, path: Path) -> Path | None:
        """The secret file ``path`` is a hard link to, or None (blocking: stats ``path``, and
        builds the index on first need)."""
        try:
            info = os.stat(path)
        except (OSError, ValueError):
            return None
        if info.st_nlink < 2 or not stat.S_ISREG(info.st_mode):
            return None
        return self._inodes().get((info.st_dev, info.st_ino))

    def _inodes(self) -> dict[Inode, Path]:
        with self._lock:
            if self._index is None:
                self._index = self._build()
            return self._index

    def _build(self) -> dict[Inode, Path]:
        from acp_hermes_tools.sensitive_paths import sensitive_path_reason  # rule tables: kept off session start

        index: dict[Inode, Path] = {}
        for path in self._secret_files():
            if len(index) >= MAX_INDEXED:
                log.warning("hard links to secrets: stopped indexing after %d files", MAX_INDEXED)
                break
            try:
                info = os.stat(path)
            except (OSError, ValueError):
                continue
            if stat.S_ISREG(info.st_mode) and sensitive_path_reason(path, self.home, hermes_home=self.hermes_home):
                index.setdefault((info.st_dev, info.st_ino), path)
        log.debug("hard links to secrets: %d secret files indexed", len(index))
        return index

    def _secret_files(self) -> Iterable[Path]:
        """Every file at a known secret location (unchecked: may not exist)."""
        from acp_hermes_tools.sandbox import HIDDEN_IN_HOME
        from acp_hermes_tools.sensitive_paths import sensitive_path_reason

        roots = [self.home / relative for relative in (*HIDDEN_IN_HOME, *_HOME_FILES)]
        try:
            names = sorted(os.listdir(self.home))
        except OSError:
            names = []
        roots += [self.home / name for name in names if name not in _NOT_SECRETS
                  and sensitive_path_reason(self.home / name, self.home, hermes_home=self.hermes_home)]
        roots.append(self.hermes_home)
        for root in dict.fromkeys(roots):
            yield from _files_under(root, skip=_NOT_SECRETS)


def _files_under(path: Path, *, skip: frozenset[str]) -> Iterable[Path]:
    """``path`` itself when it is no directory, else the files below it (symlinked directories
    not followed, directories named in ``skip`` left out)."""
    if not os.path.isdir(path):
        yield path
        return
    for directory, subdirs, names in os.walk(path):
        subdirs[:] = [name for name in subdirs if name not in skip]
        here = Path(directory)
        for name in names:
            yield here / name
