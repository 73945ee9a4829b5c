"""The skills store: procedures the agent can load on demand, one folder per skill.

Layout (agentskills.io, the same as Hermes Agent's, so both agents share their skills)::

    <root>/[<category>/]<name>/SKILL.md      YAML frontmatter + Markdown body
    <root>/[<category>/]<name>/{references,templates,scripts,assets}/...

``root`` is ``$HERMES_HOME/skills``, the only folder the store writes to. Extra folders (a
project's ``.hermes/skills``, a team's shared folder) are read-only; a local skill hides an
external one of the same name, and an earlier external folder hides a later one. Skills whose
``platforms`` leave out this machine's platform are not listed at all.

The package is put together from one module per job: ``records`` (limits, name rules, records,
errors), ``frontmatter`` (reading and checking a SKILL.md's frontmatter), ``index`` (which skills
there are, kept between lookups), ``store`` (``SkillStore``: reading skills and writing them in
two steps, prepare then apply), ``usage`` (the ``.usage.json`` sidecar and the recorder that fills
it off the caller's path), ``history`` (the ledger of every change), ``archive`` (``.archive/``),
``lifecycle`` (active, stale, archived: the daily run), ``quarantine`` (project skills scanned
whole) and ``clock`` (the time all of it goes by).
"""

from __future__ import annotations

from acp_hermes_memory.skills.frontmatter import parse_skill
from acp_hermes_memory.skills.records import (
    ACTIONS,
    EXCLUDED_DIRS,
    MAX_FILE_BYTES,
    MAX_NAME_CHARS,
    MAX_SKILL_CHARS,
    SKILL_FILE,
    SUPPORT_DIRS,
    FileRestore,
    Quarantined,
    SkillChange,
    SkillConflictError,
    SkillError,
    SkillInfo,
    SkillStatus,
    SkillThreatError,
    SkillView,
    valid_name,
)
from acp_hermes_memory.skills.store import SkillStore

__all__ = [
    "ACTIONS",
    "EXCLUDED_DIRS",
    "MAX_FILE_BYTES",
    "MAX_NAME_CHARS",
    "MAX_SKILL_CHARS",
    "SKILL_FILE",
    "SUPPORT_DIRS",
    "FileRestore",
    "Quarantined",
    "SkillChange",
    "SkillConflictError",
    "SkillError",
    "SkillInfo",
    "SkillStatus",
    "SkillStore",
    "SkillThreatError",
    "SkillView",
    "parse_skill",
    "valid_name",
]
