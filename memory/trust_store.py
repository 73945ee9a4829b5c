"""Workspace trust decisions: ``$HERMES_HOME/acp-hermes/trust.json``.

Whether a repository may speak to the agent (its instruction files, hints, skills, settings and MCP
servers) is decided once per repository and shared by every acp-hermes process. A decision is keyed
by the repository's root as found on disk, without running git (whose configuration belongs to the
repository): a linked worktree counts as its main repository, a submodule as itself, a folder outside
git as itself. The home folder itself is never a repository here: a dotfiles repository at home does
not make every folder beneath it one, and no decision is kept for the home folder.

With a trusted repository the store keeps the fingerprints of the project MCP servers the user
approved: a server is approved by its exact command, URL and environment, never by its name.

Every change re-reads the file under its lock and replaces it atomically, 0600: a decision made in
another editor window is never lost, and which folders a user trusts is nobody else's business.
Calls block on the file and its lock: async code runs them on a worker thread. The file::

    {"version": 1,
     "repositories": {"/abs/repo": {"trusted": true, "decided": "2025-01-02T03:04:05+00:00",
                                    "mcp_servers": ["<sha256 of a server's spec>", ...]}}}
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from acp_hermes_memory.fs import MappingFile, atomic_write_text, exclusive_lock, lock_path_for
from acp_hermes_memory.values import value

FILE_MODE = 0o600
VERSION = 1


@value
class Repository:
    """What a workspace's trust decision is kept under."""

    root: Path  # the repository's root (a linked worktree's main one), or the folder outside git
    git: bool  # inside a git work tree
    home: bool  # the home folder itself: never trusted as a repository, no decision kept


@value
class TrustEntry:
    """One repository's remembered decision."""

    trusted: bool
    decided: str  # when, ISO 8601
    servers: frozenset[str] = frozenset()  # fingerprints of the project MCP servers approved


def repository_of(workspace: Path, home: Path) -> Repository:
    """The repository ``workspace`` belongs to, found by reading ``.git`` entries (no git process).

    A ``.git`` folder marks a repository's root; a ``.git`` file (``gitdir: …``) a linked worktree,
    whose ``commondir`` names the main repository's git folder, or a submodule (no ``commondir``:
    itself). The home folder and its ancestors are never a repository's root.
    """
    folder = Path(os.path.realpath(workspace))
    home = Path(os.path.realpath(home))
    for directory in (folder, *folder.parents):
        if directory == home or directory in home.parents:
            break
        marker = directory / ".git"
        try:
            if marker.is_dir():
                return Repository(directory, git=True, home=False)
            if marker.is_file():
                return Repository(_main_root(directory, marker), git=True, home=False)
        except OSError:  # an unreadable folder on the way: no repository found through it
            break
    return Repository(folder, git=False, home=folder == home)


def _main_root(directory: Path, marker: Path) -> Path:
    """The main repository of the work tree at ``directory`` whose ``.git`` is the file ``marker``."""
    try:
        line = marker.read_text(encoding="utf-8", errors="replace").strip()
        if not line.startswith("gitdir:"):
            return directory
        gitdir = Path(line.removeprefix("gitdir:").strip())
        gitdir = gitdir if gitdir.is_absolute() else directory / gitdir
        common_file = gitdir / "commondir"
        if not common_file.is_file():  # a submodule, or a separate git dir: the work tree is the repository
            return directory
        common = Path(common_file.read_text(encoding="utf-8", errors="replace").strip())
        common = Path(os.path.realpath(common if common.is_absolute() else gitdir / common))
    except (OSError, ValueError):
        return directory
    return common.parent if common.name == ".git" else common  # a bare repository: its own folder


class TrustStore:
    """The remembered decisions, one file for every process."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._file = MappingFile(path, "JSON", json.loads, "no workspace is trusted by it")

    def entry(self, root: Path) -> TrustEntry | None:
        """The decision kept for the repository at ``root``, if any."""
        return _entry(self._repositories().get(str(root)))

    def all(self) -> dict[str, TrustEntry]:
        """Every remembered decision, by repository (sorted)."""
        entries = {name: _entry(raw) for name, raw in sorted(self._repositories().items())}
        return {name: entry for name, entry in entries.items() if entry is not None}

    def decide(self, root: Path, *, trusted: bool, servers: Iterable[str] = ()) -> None:
        """Remember that the repository at ``root`` is (or is not) trusted; a trusted one's approved
        servers are kept and ``servers`` added, an untrusted one keeps none."""
        def change(repositories: dict[str, Any]) -> None:
            kept = _entry(repositories.get(str(root)))
            approved = set(kept.servers) if kept is not None and trusted else set()
            approved.update(servers if trusted else ())
            repositories[str(root)] = {"trusted": trusted, "decided": _now(), "mcp_servers": sorted(approved)}

        self._change(change)

    def approve_servers(self, root: Path, fingerprints: Iterable[str]) -> None:
        """Remember project MCP servers approved in a trusted repository (nothing for an untrusted one)."""
        fingerprints = tuple(fingerprints)

        def change(repositories: dict[str, Any]) -> None:
            raw = repositories.get(str(root))
            kept = _entry(raw)
            if kept is None or not kept.trusted or not isinstance(raw, dict):
                return
            raw["mcp_servers"] = sorted(set(kept.servers) | set(fingerprints))

        self._change(change)

    def forget(self, root: Path) -> bool:
        """Drop the decision for ``root``: its next session asks again. Whether there was one."""
        found: list[bool] = []

        def change(repositories: dict[str, Any]) -> None:
            found.append(repositories.pop(str(root), None) is not None)

        self._change(change)
        return bool(found and found[0])

    # -- the file

    def _change(self, change: Any) -> None:
        with exclusive_lock(lock_path_for(self.path)):
            document = self._file.read(keep_unreadable=True)
            repositories = document.get("repositories")
            if not isinstance(repositories, dict):
                repositories = {}
            change(repositories)
            text = json.dumps({"version": VERSION, "repositories": repositories}, indent=2, sort_keys=True)
            atomic_write_text(self.path, text + "\n", mode=FILE_MODE, private=True)

    def _repositories(self) -> dict[str, Any]:
        repositories = self._file.read().get("repositories")
        return repositories if isinstance(repositories, dict) else {}


def _entry(raw: Any) -> TrustEntry | None:
    if not isinstance(raw, dict) or not isinstance(raw.get("trusted"), bool):
        return None
    servers = raw.get("mcp_servers")
    kept = frozenset(str(item) for item in servers) if isinstance(servers, list) and raw["trusted"] else frozenset()
    return TrustEntry(raw["trusted"], str(raw.get("decided", "")), kept)


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")
