"""A SKILL.md's YAML frontmatter: found, read (by a fast reader for plain YAML when listing, by PyYAML
otherwise) and checked the way every write is checked."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from acp_hermes_memory.skills.records import MAX_DESCRIPTION_CHARS, MAX_SKILL_CHARS, PLATFORMS, SkillError
from acp_hermes_memory.values import value


@value
class Frontmatter:
    """The validated frontmatter of a SKILL.md."""

    description: str
    version: str | None
    platforms: tuple[str, ...] | None
    tags: tuple[str, ...]
    related_skills: tuple[str, ...]


def parse_skill(name: str, text: str) -> tuple[Frontmatter, str]:
    """Check a SKILL.md the way every write is checked; return its frontmatter and body."""
    if len(text) > MAX_SKILL_CHARS:
        raise SkillError(
            f"SKILL.md is {len(text):,} characters; the limit is {MAX_SKILL_CHARS:,}. Move detail into "
            "files under references/ (action 'write_file') and keep SKILL.md to the procedure."
        )
    split = split_frontmatter(text.lstrip("\ufeff"))
    if split is None:
        raise SkillError(
            "SKILL.md must start with YAML frontmatter: a '---' line, 'name: ...' and 'description: ...' "
            "lines, and a closing '---' line, followed by the Markdown body."
        )
    block, body = split
    fields = load_yaml(block)
    if fields.get("name") != name:
        raise SkillError(f"the frontmatter must say 'name: {name}' (the skill's folder name).")
    if not body.strip():
        raise SkillError("SKILL.md has no body: write the procedure below the frontmatter.")
    return checked_frontmatter(fields), body


def checked_frontmatter(fields: Mapping[str, Any]) -> Frontmatter:
    description = fields.get("description")
    if not isinstance(description, str) or not description.strip():
        raise SkillError("the frontmatter needs a 'description': one or two sentences on what it is for and when.")
    if len(description) > MAX_DESCRIPTION_CHARS:
        raise SkillError(f"the description is {len(description):,} characters; the limit is {MAX_DESCRIPTION_CHARS}.")
    version = fields.get("version")
    if version is not None and not isinstance(version, (str, int, float)):
        raise SkillError("'version' must be a string such as 1.0.0.")
    platforms = platforms_of(fields.get("platforms"))
    unknown = sorted(set(platforms or ()) - set(PLATFORMS))
    if unknown:
        raise SkillError(f"unknown platform(s) {', '.join(unknown)}: use a list of {', '.join(PLATFORMS)}.")
    hermes = _hermes_metadata(fields.get("metadata"))
    return Frontmatter(
        description=description.strip(),
        version=None if version is None else str(version),
        platforms=platforms,
        tags=_string_list(hermes, "tags"),
        related_skills=_string_list(hermes, "related_skills"),
    )


def _hermes_metadata(metadata: object) -> Mapping[str, Any]:
    if metadata is None:
        return {}
    if not isinstance(metadata, dict):
        raise SkillError("'metadata' must be a mapping, e.g. metadata: {hermes: {tags: [...]}}.")
    hermes = metadata.get("hermes") or {}
    if not isinstance(hermes, dict):
        raise SkillError("'metadata.hermes' must be a mapping with 'tags' and 'related_skills' lists.")
    return hermes


def _string_list(mapping: Mapping[str, Any], key: str) -> tuple[str, ...]:
    value = mapping.get(key)
    if value is None:
        return ()
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise SkillError(f"'metadata.hermes.{key}' must be a list of strings.")
    return tuple(value)


def platforms_of(value: object) -> tuple[str, ...] | None:
    if value is None:
        return None
    items = value if isinstance(value, list) else [value]
    return tuple(str(item).strip().lower() for item in items)


def frontmatter_end(text: str) -> int | None:
    """Index of the newline before the closing ``---`` line, or None."""
    if not text.startswith("---"):
        return None
    first = text.find("\n")
    if first == -1 or text[:first].rstrip() != "---":
        return None
    at = first
    while True:
        at = text.find("\n---", at)
        if at == -1:
            return None
        after = text.find("\n", at + 1)
        line = text[at + 1 : None if after == -1 else after]
        if line.rstrip() == "---":
            return at
        at += 1


def split_frontmatter(text: str) -> tuple[str, str] | None:
    """(YAML block, body) of a SKILL.md, or None when it has no closed frontmatter."""
    end = frontmatter_end(text)
    if end is None:
        return None
    block = text[text.find("\n") + 1 : end + 1]
    after = text.find("\n", end + 1)
    return block, "" if after == -1 else text[after + 1 :]


def load_yaml(block: str) -> dict[str, Any]:
    import yaml  # deferred: only listing a non-trivial frontmatter or loading a skill needs it

    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    try:
        data = yaml.load(block, Loader=loader)
    except yaml.YAMLError as error:
        raise SkillError(f"the frontmatter is not valid YAML: {' '.join(str(error).split())}") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise SkillError("the frontmatter must be a YAML mapping (key: value lines).")
    return data


_LISTED_KEYS = frozenset({"description", "platforms"})
NAME_LINE = re.compile(r"^name[ \t]*:[ \t]*(.*)$", re.MULTILINE)  # what the scan of a listed skill reads
_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_.-]*")
_PLAIN_ITEM = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]*")
# Plain scalars YAML would not read as strings (numbers, booleans, null, dates): left to PyYAML.
_NOT_A_STRING = re.compile(r"[-+]?\.?[0-9].*|[-+]?\.(?:inf|nan)|true|false|yes|no|on|off|y|n|null|~", re.IGNORECASE)
_UNSURE = object()


def quick_fields(block: str) -> dict[str, object] | None:
    """``description`` and ``platforms`` of a plain frontmatter, exactly as PyYAML reads them.

    Handles top-level ``key: value`` lines whose values are plain or simply quoted scalars or
    flow lists of plain words; nested blocks under other keys are skipped. Anything else
    returns None and is left to PyYAML (ten times slower, and listing 1,000 skills adds up).
    """
    fields: dict[str, object] = {}
    indented_ok = True  # indented lines belong to the key above: fine unless it is a listed one
    for line in block.split("\n"):
        if not line.strip() or line.startswith("#"):
            continue
        if line[0] == " ":
            if not indented_ok:
                return None
            continue
        key, colon, value = line.partition(":")
        if not colon or not _KEY.fullmatch(key) or (value and value[0] not in " \t"):
            return None
        value = value.strip()
        if key in _LISTED_KEYS:
            fields[key] = _quick_value(value)
            indented_ok = False
        elif not _ends_on_its_line(value):
            return None
        else:
            indented_ok = True
    return None if _UNSURE in fields.values() else fields


def _ends_on_its_line(value: str) -> bool:
    """Whether a value of another key cannot spill onto unindented lines (an unclosed quote or bracket)."""
    if not value:
        return True
    if value[0] in "\"'":
        return _quick_value(value) is not _UNSURE
    if value[0] in "[{":
        return value.endswith("]" if value[0] == "[" else "}")
    return value[0] not in "&!*"


def _quick_value(value: str) -> object:
    if not value or value[0] in "&*!%@`|>{<=":
        return _UNSURE
    if value[0] == '"':
        inner = value[1:-1]
        ok = len(value) > 1 and value.endswith('"') and '"' not in inner and "\\" not in inner
        return inner if ok else _UNSURE
    if value[0] == "'":
        inner = value[1:-1]
        ok = len(value) > 1 and value.endswith("'") and "'" not in inner.replace("''", "")
        return inner.replace("''", "'") if ok else _UNSURE
    if value[0] == "[":
        return _quick_list(value)
    if value[0] in "-?:,]}#" or ": " in value or " #" in value or value.endswith(":") or "\t" in value:
        return _UNSURE
    return _UNSURE if _NOT_A_STRING.fullmatch(value) else value


def _quick_list(value: str) -> object:
    if not value.endswith("]"):
        return _UNSURE
    items = [item.strip() for item in value[1:-1].split(",")]
    if items == [""]:
        return []
    plain = all(_PLAIN_ITEM.fullmatch(item) and not _NOT_A_STRING.fullmatch(item) for item in items)
    return items if plain else _UNSURE
