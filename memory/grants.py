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

import logging
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from acp_hermes_memory.fs import atomic_write_text, exclusive_lock, lock_path_for, set_aside_unreadable
from acp_hermes_memory.values import value

log = logging.getLogger(__name__)

FILE_MODE = 0o600  # which commands a user trusts where is nobody else's business


@value
class ProjectGrants:
    """The command keys a project always allows or always rejects."""

    allow: frozenset[str] = frozenset()
    reject: frozenset[str] = frozenset()


@dataclass
class GrantStore:
    path: Path
    _unreadable_logged: bool = field(default=False, repr=False)

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
            data = self._read_document(keep_unreadable=True)
            projects = data.setdefault("projects", {})
            current = _project_grants(projects.get(str(project)))
            allowed, rejected = set(current.allow), set(current.reject)
            (allowed if allow else rejected).update(keys)
            (rejected if allow else allowed).difference_update(keys)
            projects[str(project)] = {"allow_commands": sorted(allowed), "reject_commands": sorted(rejected)}
            atomic_write_text(self.path, yaml.safe_dump(data, sort_keys=True), mode=FILE_MODE, private=True)
        return ProjectGrants(frozenset(allowed), frozenset(rejected))

    def _read(self) -> dict[str, Any]:
        projects = self._read_document().get("projects")
        return projects if isinstance(projects, dict) else {}

    def _read_document(self, *, keep_unreadable: bool = False) -> dict[str, Any]:
        """The file's YAML document; an unreadable one counts as empty and, before a write
        (``keep_unreadable``), is moved aside so a hand-edited file with a typo is not lost."""
        try:
            text = self.path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return {}
        import yaml

        try:
            data = yaml.safe_load(text) or {}
        except yaml.YAMLError:
            if keep_unreadable:
                set_aside_unreadable(self.path, "YAML")
            elif not self._unreadable_logged:
                self._unreadable_logged = True
                log.warning("%s is not valid YAML; ignoring remembered command grants", self.path)
            return {}
        return data if isinstance(data, dict) else {}


def _project_grants(entry: Any) -> ProjectGrants:
    if not isinstance(entry, dict):
        return ProjectGrants()
    return ProjectGrants(_keys(entry.get("allow_commands")), _keys(entry.get("reject_commands")))


def _keys(value: Any) -> frozenset[str]:
    return frozenset(str(item) for item in value) if isinstance(value, list) else frozenset()
