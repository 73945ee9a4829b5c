"""``skills/.archive/``: where archived skills wait, out of every index, never deleted.

An archived skill's folder moves there whole, flattened to ``.archive/<name>`` as Hermes Agent does
(a second archive of the same name gets a time suffix, ``<name>-<YYYYmmddHHMMSS>``); the folder it
came from is kept in the usage sidecar (``archived_from``) so a restore puts it back there.
"""

from __future__ import annotations

import os
import re
from datetime import datetime, timezone
from pathlib import Path

from acp_hermes_memory.skills.frontmatter import NAME_LINE, split_frontmatter
from acp_hermes_memory.skills.records import SKILL_FILE, valid_name
from acp_hermes_memory.values import value

ARCHIVE_DIR = ".archive"
_SUFFIX = re.compile(r"-\d{14}$")
_HEAD_BYTES = 8192


@value
class ArchivedSkill:
    name: str
    path: Path  # its folder under .archive
    description: str


def archived_skills(root: Path) -> list[ArchivedSkill]:
    """The skills in ``root/.archive``, newest archive of each name first."""
    folder = root / ARCHIVE_DIR
    found = []
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return []
    for entry in entries:
        if entry.name.startswith(".") or not entry.is_dir(follow_symlinks=False):
            continue
        name, description = _read_head(Path(entry.path) / SKILL_FILE, _SUFFIX.sub("", entry.name))
        if name is None:
            continue
        found.append(ArchivedSkill(name, Path(entry.path), description))
    # A later archive of a name has a later time suffix (the first has none): newest first, by name.
    found.sort(key=lambda skill: _stamp(skill.path.name), reverse=True)
    return sorted(found, key=lambda skill: skill.name)


def _stamp(folder: str) -> str:
    stamp = _SUFFIX.search(folder)
    return stamp.group(0) if stamp else ""


def archived_slot(root: Path, name: str) -> Path | None:
    """The folder a restore of ``name`` takes: its newest archive."""
    matches = [skill for skill in archived_skills(root) if skill.name == name]
    return matches[0].path if matches else None


def free_slot(root: Path, name: str, moment: float) -> Path:
    """Where a skill named ``name`` is archived now (a time suffix when the name is taken there)."""
    target = root / ARCHIVE_DIR / name
    if os.path.lexists(target):
        stamp = datetime.fromtimestamp(moment, timezone.utc).strftime("%Y%m%d%H%M%S")
        target = root / ARCHIVE_DIR / f"{name}-{stamp}"
    return target


def _read_head(skill_file: Path, fallback: str) -> tuple[str | None, str]:
    """(name, description) from the start of an archived SKILL.md; name None when it is not a skill."""
    try:
        with open(skill_file, "rb") as handle:
            text = handle.read(_HEAD_BYTES).decode("utf-8", errors="replace").lstrip("\ufeff")
    except OSError:
        return None, ""
    name, description = fallback, ""
    split = split_frontmatter(text)
    if split is not None:
        block, _ = split
        line = NAME_LINE.search(block)
        if line and valid_name(line.group(1).strip().strip("\"'")):
            name = line.group(1).strip().strip("\"'")
        for row in block.split("\n"):
            if row.startswith("description:"):
                description = row.partition(":")[2].strip().strip("\"'")
    return (name if valid_name(name) else None), " ".join(description.split())
