"""Permission grants remembered per project: ``$HERMES_HOME/acp-hermes/permissions.yaml``.

One store serves the permission gate (which reads a project's grants and remembers new ones)
and ``acp-hermes doctor`` (which lists them all). Every change re-reads the file under its lock
and replaces it atomically, so grants remembered by another editor window are never lost.
Calls block on the file and its lock: async code runs them in a worker thread.

The file::

    projects:
      /abs/project:
        allow_commands: [git status, pytest]
        reject_commands: [git push]
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from acp_hermes_memory.fs import MappingFile, atomic_write_text, exclusive_lock, lock_path_for
from acp_hermes_memory.values import value

FILE_MODE = 0o600  # which commands a user trusts where is nobody else's business


@value
class ProjectGrants:
    """The command keys a project always allows or always rejects."""

    allow: frozenset[str] = frozenset()
    reject: frozenset[str] = frozenset()


def _yaml(text: str) -> Any:
    import yaml

    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ValueError(str(exc)) from exc


class GrantStore:
    __slots__ = ("_file", "path")

    def __init__(self, path: Path) -> None:
        self.path = path
        self._file = MappingFile(path, "YAML", _yaml, "ignoring remembered command grants")

    def project(self, project: Path) -> ProjectGrants:
        entry = self._read().get(str(project))
        return _project_grants(entry)

    def all_projects(self) -> dict[str, ProjectGrants]:
        """Every project's grants, by project path (sorted)."""
        return {name: _project_grants(entry) for name, entry in sorted(self._read().items())}

    def remember(self, project: Path, keys: Iterable[str], *, allow: bool) -> ProjectGrants:
        """Always allow (or always reject) ``keys`` in ``project``; the project's grants after it."""
        import yaml

        keys = tuple(keys)
        with exclusive_lock(lock_path_for(self.path)):
            data = self._file.read(keep_unreadable=True)
            projects = data.setdefault("projects", {})
            current = _project_grants(projects.get(str(project)))
            allowed, rejected = set(current.allow), set(current.reject)
            (allowed if allow else rejected).update(keys)
            (rejected if allow else allowed).difference_update(keys)
            projects[str(project)] = {"allow_commands": sorted(allowed), "reject_commands": sorted(rejected)}
            atomic_write_text(self.path, yaml.safe_dump(data, sort_keys=True), mode=FILE_MODE, private=True)
        return ProjectGrants(frozenset(allowed), frozenset(rejected))

    def _read(self) -> dict[str, Any]:
        projects = self._file.read().get("projects")
        return projects if isinstance(projects, dict) else {}


def _project_grants(entry: Any) -> ProjectGrants:
    if not isinstance(entry, dict):
        return ProjectGrants()
    return ProjectGrants(_keys(entry.get("allow_commands")), _keys(entry.get("reject_commands")))


def _keys(value: Any) -> frozenset[str]:
    return frozenset(str(item) for item in value) if isinstance(value, list) else frozenset()
