"""What the skills store speaks in: its limits and name rules, the records it hands out, its errors."""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from typing import Literal

from acp_hermes_memory.scan import Finding
from acp_hermes_memory.skills.usage import Usage
from acp_hermes_memory.values import value

Action = Literal["create", "edit", "patch", "delete", "write_file", "remove_file"]
ACTIONS: tuple[Action, ...] = ("create", "edit", "patch", "delete", "write_file", "remove_file")

SKILL_FILE = "SKILL.md"
SUPPORT_DIRS: tuple[str, ...] = ("references", "templates", "scripts", "assets")
PLATFORMS: tuple[str, ...] = ("linux", "macos", "windows")
MAX_NAME_CHARS = 64
MAX_DESCRIPTION_CHARS = 1_024
MAX_SKILL_CHARS = 100_000
MAX_FILE_BYTES = 1024 * 1024
NAME_PATTERN = re.compile(r"[a-z0-9][a-z0-9._-]*")
# Folders that are never skills or categories (tooling that lands in shared skill folders).
EXCLUDED_DIRS = frozenset({"node_modules", "venv", "site-packages", "__pycache__"})


class SkillError(Exception):
    """A request the store refuses; the message tells the model what to do instead."""


class SkillThreatError(SkillError):
    """The new text matches the threat scanner; ``findings`` says what matched."""

    def __init__(self, label: str, findings: Sequence[Finding]) -> None:
        self.findings = tuple(findings)
        listed = "\n".join(f"- {finding.pattern_id}: {finding.excerpt!r}" for finding in self.findings)
        super().__init__(
            f"Refused: {label} matches the threat scanner:\n{listed}\nSkills are loaded into future prompts, so "
            "they must not hold prompt injection, exfiltration, persistence tricks or hidden characters. "
            "Rewrite the flagged passages."
        )


class SkillConflictError(SkillError):
    """A file changed on disk between ``prepare_*`` and ``apply``."""


@value
class SkillInfo:
    """One index entry: what listing shows and where the skill lives."""

    name: str
    description: str
    category: str | None
    path: Path  # the skill's folder
    source: Path  # the skills folder it was found in
    read_only: bool  # found in an external folder
    origin: str = "home"  # home, external (a configured folder) or project (the workspace's own)

    @property
    def qualified_name(self) -> str:
        """``category/name`` (or ``name``): unique where the bare name is not."""
        return self.name if self.category is None else f"{self.category}/{self.name}"

    @property
    def skill_file(self) -> Path:
        return self.path / SKILL_FILE


@value
class Quarantined:
    """A project skill the threat scanner flagged: never listed in the index nor loadable."""

    info: SkillInfo
    reason: str


@value
class SkillStatus:
    """A listed skill with its usage: what ``/skills`` and ``acp-hermes skills list`` show."""

    info: SkillInfo
    usage: Usage
    created_by: str  # agent, user (a skill in the home folder the agent did not create), external, project

    @property
    def state(self) -> str:
        """active or stale (an archived skill is not listed)."""
        return "stale" if self.usage.state == "stale" else "active"

    @property
    def pinned(self) -> bool:
        return self.usage.pinned


@value
class FileRestore:
    """One skill file to put back as it was (a rollback): ``text`` None, it did not exist."""

    skill: str
    directory: str  # the skill's folder, relative to the skills folder
    path: str  # relative to the skill's folder
    text: str | None


@value
class SkillView:
    """A loaded skill: the SKILL.md body (or one supporting file) and its frontmatter details."""

    info: SkillInfo
    text: str
    file_path: str | None  # None: ``text`` is the SKILL.md body
    version: str | None
    tags: tuple[str, ...]
    related_skills: tuple[str, ...]
    files: tuple[str, ...]  # supporting files, relative to the skill folder


@value
class FileEdit:
    """One file of a change: ``old_text`` None creates it, ``new_text`` None deletes it."""

    path: Path
    old_text: str | None
    new_text: str | None


@value
class SkillChange:
    """A validated, scanned change not yet written; ``apply`` writes it."""

    action: Action
    name: str
    skill_dir: Path
    files: tuple[FileEdit, ...]
    message: str


def valid_name(name: str) -> bool:
    """Whether ``name`` is a valid skill or category name (what the index and prompts may show)."""
    return len(name) <= MAX_NAME_CHARS and NAME_PATTERN.fullmatch(name) is not None
