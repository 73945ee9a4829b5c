"""The skills store: procedures the agent can load on demand, one folder per skill.

Layout (agentskills.io, the same as Hermes Agent's, so both agents share their skills)::

    <root>/[<category>/]<name>/SKILL.md      YAML frontmatter + Markdown body
    <root>/[<category>/]<name>/{references,templates,scripts,assets}/...

``root`` is ``$HERMES_HOME/skills``, the only folder the store writes to. Extra folders (a
project's ``.hermes/skills``, a team's shared folder) are read-only; a local skill hides an
external one of the same name, and an earlier external folder hides a later one. Skills whose
``platforms`` leave out this machine's platform are not listed at all.

The index (name, description, category, path) is what ``skills_list`` shows and what every
lookup goes through, so it must be cheap: it is built once, kept, and rebuilt only when the
mtime of a watched path changed (the roots, their category folders and every SKILL.md), with
parsed entries reused for skills whose SKILL.md did not change. An mtime younger than
``RACY_NS`` at scan time is not trusted (see there), so for a second after a change every
lookup rescans. Listing parses only the top-level
``description`` and ``platforms`` of each frontmatter, by a fast reader for plain YAML that
hands anything unusual to PyYAML.

What reaches a prompt from a skill folder is checked at listing too: a folder whose name is not
a valid skill name (``NAME_PATTERN``, at most ``MAX_NAME_CHARS``) is not listed (a name with a
newline or a "## System: ..." could forge a section of the system prompt), and a skill whose
frontmatter ``name`` or ``description`` trips the injection scanner (``context`` scope) is not
listed either; both are logged, the scan once per change of the SKILL.md.

Every write is two steps so the user can review it first: ``prepare_*`` validates the
frontmatter, keeps supporting files inside the four subfolders, refuses traversal and symlinks,
scans the new text with ``memory.scan`` and returns a ``SkillChange`` (old and new text of each
file); ``apply`` then writes it under the store's lock, atomically, after checking that no file
changed on disk in between. The ``create``/``edit``/... methods do both at once.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import shutil
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath, PureWindowsPath
from typing import Any, Literal

from acp_hermes_memory.fs import delete_exactly, exclusive_lock, lock_path_for, write_text_exactly
from acp_hermes_memory.scan import Finding, scan
from acp_hermes_memory.text import counted, looks_binary
from acp_hermes_memory.values import value

log = logging.getLogger(__name__)

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

_HEAD_BYTES = 8192  # listing reads this much of a SKILL.md; the frontmatter nearly always fits
# File systems stamp mtimes with a coarse clock (a kernel tick; a whole second on some), so a
# change made within this long of a scan may carry the mtime the scan saw: such an mtime
# proves nothing, and what it guards is looked at again (git's "racy" index entries).
RACY_NS = 1_000_000_000


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

    @property
    def qualified_name(self) -> str:
        """``category/name`` (or ``name``): unique where the bare name is not."""
        return self.name if self.category is None else f"{self.category}/{self.name}"

    @property
    def skill_file(self) -> Path:
        return self.path / SKILL_FILE


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


Replacer = Callable[[str, str, str, str, bool], str]
"""``(label, text, old, new, replace_all) -> new text``; raises ``ValueError`` when it cannot."""


def exact_replace(label: str, text: str, old: str, new: str, replace_all: bool) -> str:
    """Replace ``old`` by ``new``: it must occur exactly once unless ``replace_all``."""
    if not old:
        raise ValueError("old_string is empty; use action 'edit' to rewrite the whole file.")
    count = text.count(old)
    if count == 0:
        raise ValueError(f"old_string was not found in {label}; view it and copy the text exactly.")
    if count > 1 and not replace_all:
        raise ValueError(
            f"old_string occurs {count} times in {label}; include more surrounding text to make it unique, "
            "or set replace_all=true."
        )
    return text.replace(old, new)


def current_platform() -> str:
    """This machine's platform in frontmatter terms (linux, macos, windows)."""
    if sys.platform == "darwin":
        return "macos"
    if sys.platform.startswith("win"):
        return "windows"
    return "linux"


# --- the index -------------------------------------------------------------------------------


@value
class _Parsed:
    """What listing needs from one SKILL.md, kept while the file's mtime stays the same."""

    mtime: int
    settled: bool  # the mtime was old when parsed: an unchanged mtime means unchanged text
    description: str
    platforms: tuple[str, ...] | None  # None: every platform
    error: str | None = None  # why the skill is not listed (logged once, when parsed)


@dataclass(slots=True)
class _Snapshot:
    """The index and the mtimes it was built from."""

    skills: tuple[SkillInfo, ...]
    watched: list[str]
    mtimes: list[int]
    parsed: dict[str, _Parsed] = field(default_factory=dict)
    settled: bool = True  # no watched mtime was recent when it was built

    def unchanged(self) -> bool:
        if not self.settled:
            return False
        try:
            return [os.stat(path).st_mtime_ns for path in self.watched] == self.mtimes
        except OSError:
            return False


class _Builder:
    """One scan of the skill folders: found skills, and every path whose mtime it depends on."""

    def __init__(self, previous: dict[str, _Parsed], platform: str) -> None:
        self.previous = previous
        self.platform = platform
        self.settled_before = time.time_ns() - RACY_NS
        self.watched: list[str] = []
        self.mtimes: list[int] = []
        self.parsed: dict[str, _Parsed] = {}
        self.found: list[SkillInfo] = []

    def scan_root(self, root: Path, read_only: bool) -> None:
        if not self._watch(str(root)):
            return
        for entry in _subdirectories(str(root)):
            if not self._add_skill(root, entry, None, read_only):
                self._scan_category(root, entry, read_only)

    def _scan_category(self, root: Path, category: os.DirEntry[str], read_only: bool) -> None:
        if not valid_name(category.name) or not self._watch(category.path):
            return
        for entry in _subdirectories(category.path):
            if not self._add_skill(root, entry, category.name, read_only):
                self._watch(entry.path)  # a SKILL.md may be added to it later

    def _add_skill(self, root: Path, entry: os.DirEntry[str], category: str | None, read_only: bool) -> bool:
        """Index ``entry`` if it holds a SKILL.md; False when it holds none."""
        skill_file = os.path.join(entry.path, SKILL_FILE)
        if not valid_name(entry.name):
            if not os.path.lexists(skill_file):
                return False  # perhaps a category folder: that check is the caller's
            log.warning("not listing the skill in %r: its folder name is not a valid skill name (lowercase "
                        "letters, digits, '.', '_', '-'; at most %d characters)", entry.path, MAX_NAME_CHARS)
            return True
        parsed = self._parse(skill_file)
        if parsed is None:
            return False
        if parsed.error is None and (parsed.platforms is None or self.platform in parsed.platforms):
            info = SkillInfo(entry.name, parsed.description, category, Path(entry.path), root, read_only)
            self.found.append(info)
        return True

    def _parse(self, skill_file: str) -> _Parsed | None:
        try:
            fd = os.open(skill_file, os.O_RDONLY)
        except (FileNotFoundError, NotADirectoryError):
            return None
        except OSError as error:
            log.warning("skipping %s: %s", skill_file, error)
            return None
        try:
            mtime = os.fstat(fd).st_mtime_ns
            self.watched.append(skill_file)
            self.mtimes.append(mtime)
            known = self.previous.get(skill_file)
            if known is not None and known.settled and known.mtime == mtime:
                parsed = known
            else:
                settled = mtime < self.settled_before
                parsed = _parse_head(skill_file, mtime, settled, os.read(fd, _HEAD_BYTES), fd)
        finally:
            os.close(fd)
        self.parsed[skill_file] = parsed
        return parsed

    def _watch(self, path: str) -> bool:
        try:
            mtime = os.stat(path).st_mtime_ns
        except OSError:
            mtime = -1
        self.watched.append(path)
        self.mtimes.append(mtime)
        return mtime != -1


def _subdirectories(path: str) -> list[os.DirEntry[str]]:
    """The folders in ``path`` that may be skills or categories, by name."""
    try:
        with os.scandir(path) as entries:
            found = [e for e in entries if not e.name.startswith(".") and e.name not in EXCLUDED_DIRS]
    except OSError:
        return []
    return sorted((e for e in found if e.is_dir()), key=lambda e: e.name)


def _parse_head(skill_file: str, mtime: int, settled: bool, head: bytes, fd: int) -> _Parsed:
    """Description and platforms from the start of a SKILL.md (all of it when the frontmatter is long)."""
    text = head.decode("utf-8", errors="replace").lstrip("\ufeff")
    if _frontmatter_end(text) is None and len(head) == _HEAD_BYTES:
        text += _read_rest(fd).decode("utf-8", errors="replace")
    try:
        fields = _listing_fields(text)
    except SkillError as error:
        log.warning("not listing skill %s: %s", skill_file, error)
        return _Parsed(mtime, settled, "", None, str(error))
    return _Parsed(mtime, settled, *fields)


def _read_rest(fd: int) -> bytes:
    chunks = []
    while chunk := os.read(fd, 1 << 16):
        chunks.append(chunk)
    return b"".join(chunks)


def _listing_fields(text: str) -> tuple[str, tuple[str, ...] | None]:
    split = _split_frontmatter(text)
    if split is None:
        description = " ".join(_body_description(text).split())[:MAX_DESCRIPTION_CHARS]
        _check_listed_text(None, description)
        return description, None
    block, body = split
    fields = _quick_fields(block)
    if fields is None:
        fields = _load_yaml(block)
    given = fields.get("description")
    raw = given if isinstance(given, str) and given.strip() else _body_description(body)
    description = " ".join(raw.split())[:MAX_DESCRIPTION_CHARS]
    name = _NAME_LINE.search(block)
    _check_listed_text(name.group(1) if name else None, description)
    return description, _platforms(fields.get("platforms"))


def _check_listed_text(name: str | None, description: str) -> None:
    """Refuse to list a skill whose frontmatter name (its line, as written) or description reads
    like prompt injection: what a skill says of itself reaches every session's system prompt (which
    scans the description again, as shown: ``memory.scan`` keeps the findings of short texts)."""
    findings = [*scan(description, "context"), *(scan(name, "context") if name is not None else ())]
    if findings:
        ids = ", ".join(dict.fromkeys(finding.pattern_id for finding in findings))
        raise SkillError(f"its name or description contains potential prompt injection ({ids})")


def _platforms(value: object) -> tuple[str, ...] | None:
    if value is None:
        return None
    items = value if isinstance(value, list) else [value]
    return tuple(str(item).strip().lower() for item in items)


def _body_description(body: str) -> str:
    """The first line of prose, for a skill whose frontmatter has no description (as Hermes does)."""
    for line in body.splitlines():
        line = line.strip()
        if line and not line.startswith(("#", "---")):
            return line
    return ""


# --- frontmatter -----------------------------------------------------------------------------


def _frontmatter_end(text: str) -> int | None:
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


def _split_frontmatter(text: str) -> tuple[str, str] | None:
    """(YAML block, body) of a SKILL.md, or None when it has no closed frontmatter."""
    end = _frontmatter_end(text)
    if end is None:
        return None
    block = text[text.find("\n") + 1 : end + 1]
    after = text.find("\n", end + 1)
    return block, "" if after == -1 else text[after + 1 :]


def _load_yaml(block: str) -> dict[str, Any]:
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
_NAME_LINE = re.compile(r"^name[ \t]*:[ \t]*(.*)$", re.MULTILINE)  # what the scan of a listed skill reads
_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_.-]*")
_PLAIN_ITEM = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]*")
# Plain scalars YAML would not read as strings (numbers, booleans, null, dates): left to PyYAML.
_NOT_A_STRING = re.compile(r"[-+]?\.?[0-9].*|[-+]?\.(?:inf|nan)|true|false|yes|no|on|off|y|n|null|~", re.IGNORECASE)
_UNSURE = object()


def _quick_fields(block: str) -> dict[str, object] | None:
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


@value
class _Frontmatter:
    """The validated frontmatter of a SKILL.md."""

    description: str
    version: str | None
    platforms: tuple[str, ...] | None
    tags: tuple[str, ...]
    related_skills: tuple[str, ...]


def parse_skill(name: str, text: str) -> tuple[_Frontmatter, str]:
    """Check a SKILL.md the way every write is checked; return its frontmatter and body."""
    if len(text) > MAX_SKILL_CHARS:
        raise SkillError(
            f"SKILL.md is {len(text):,} characters; the limit is {MAX_SKILL_CHARS:,}. Move detail into "
            "files under references/ (action 'write_file') and keep SKILL.md to the procedure."
        )
    split = _split_frontmatter(text.lstrip("\ufeff"))
    if split is None:
        raise SkillError(
            "SKILL.md must start with YAML frontmatter: a '---' line, 'name: ...' and 'description: ...' "
            "lines, and a closing '---' line, followed by the Markdown body."
        )
    block, body = split
    fields = _load_yaml(block)
    if fields.get("name") != name:
        raise SkillError(f"the frontmatter must say 'name: {name}' (the skill's folder name).")
    if not body.strip():
        raise SkillError("SKILL.md has no body: write the procedure below the frontmatter.")
    return _checked_frontmatter(fields), body


def _checked_frontmatter(fields: Mapping[str, Any]) -> _Frontmatter:
    description = fields.get("description")
    if not isinstance(description, str) or not description.strip():
        raise SkillError("the frontmatter needs a 'description': one or two sentences on what it is for and when.")
    if len(description) > MAX_DESCRIPTION_CHARS:
        raise SkillError(f"the description is {len(description):,} characters; the limit is {MAX_DESCRIPTION_CHARS}.")
    version = fields.get("version")
    if version is not None and not isinstance(version, (str, int, float)):
        raise SkillError("'version' must be a string such as 1.0.0.")
    platforms = _platforms(fields.get("platforms"))
    unknown = sorted(set(platforms or ()) - set(PLATFORMS))
    if unknown:
        raise SkillError(f"unknown platform(s) {', '.join(unknown)}: use a list of {', '.join(PLATFORMS)}.")
    hermes = _hermes_metadata(fields.get("metadata"))
    return _Frontmatter(
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


# --- names and paths ---------------------------------------------------------------------------


def valid_name(name: str) -> bool:
    """Whether ``name`` is a valid skill or category name (what the index and prompts may show)."""
    return len(name) <= MAX_NAME_CHARS and NAME_PATTERN.fullmatch(name) is not None


def _check_name(name: object, what: str = "skill name") -> str:
    if not isinstance(name, str) or not valid_name(name):
        raise SkillError(
            f"invalid {what} {name!r}: use at most {MAX_NAME_CHARS} characters of lowercase letters, digits, "
            "'.', '_' and '-', starting with a letter or digit (e.g. 'deploy-k8s')."
        )
    return name


def _relative_support_path(file_path: object) -> PurePosixPath:
    """``file_path`` as a safe path under one of the support folders, or a SkillError."""
    if not isinstance(file_path, str) or not file_path.strip():
        raise SkillError(f"file_path is needed: a path such as 'references/notes.md' ({', '.join(SUPPORT_DIRS)}).")
    if "\\" in file_path or "\0" in file_path or PureWindowsPath(file_path).drive:
        raise SkillError(f"file_path {file_path!r}: use forward slashes and a relative path.")
    path = PurePosixPath(file_path)
    parts = file_path.split("/")
    if path.is_absolute() or any(part in ("", ".", "..") for part in parts):
        raise SkillError(f"file_path {file_path!r} must be a plain relative path inside the skill (no '..').")
    if len(parts) < 2 or parts[0] not in SUPPORT_DIRS:
        raise SkillError(
            f"file_path {file_path!r}: supporting files live in {', '.join(f'{d}/' for d in SUPPORT_DIRS)} "
            "(e.g. 'references/api.md'); SKILL.md itself is changed with 'edit' or 'patch'."
        )
    return path


def _inside(path: Path, directory: Path) -> Path:
    """``path`` itself, after checking that no symlink on the way leads it out of ``directory``."""
    real = Path(os.path.realpath(path))
    if real != path or not real.is_relative_to(directory):
        raise SkillError(f"{path} goes through a symlink; skill files must be plain files inside the skill folder.")
    return real


def _read_text(path: Path, limit_bytes: int | None = None) -> str | None:
    """The file's text (None when it does not exist), refusing one over ``limit_bytes``."""
    data = _read_bytes(path, limit_bytes)
    return None if data is None else data.decode("utf-8", errors="replace")


def _read_bytes(path: Path, limit_bytes: int | None = None) -> bytes | None:
    """The file's bytes (None when it does not exist), refusing one over ``limit_bytes``."""
    try:
        with open(path, "rb") as handle:
            if limit_bytes is not None and os.fstat(handle.fileno()).st_size > limit_bytes:
                raise SkillError(f"{path.name} is larger than {limit_bytes:,} bytes; skill files are kept small.")
            return handle.read()
    except FileNotFoundError:
        return None
    except IsADirectoryError:
        raise SkillError(f"{path} is a folder, not a file.") from None


def _scanned(label: str, text: str) -> str:
    findings = scan(text, "strict")
    if findings:
        raise SkillThreatError(label, findings)
    return text


# --- the store -------------------------------------------------------------------------------


class SkillStore:
    """Skills in ``root`` (writable) and in ``external`` folders (read-only)."""

    def __init__(self, root: Path, external: Sequence[Path] = (), *, platform: str | None = None) -> None:
        self.root = Path(os.path.realpath(root))  # so a symlink found under it later is one inside it
        others = (Path(os.path.abspath(path)) for path in external)
        self.external = tuple(path for path in others if os.path.realpath(path) != str(self.root))
        self.platform = platform or current_platform()
        self._snapshot: _Snapshot | None = None
        self._dirty = False  # set by our own writes: rebuild without waiting for the mtime check

    # -- reading

    def skills(self, category: str | None = None) -> tuple[SkillInfo, ...]:
        """Visible skills (of one category), sorted by category then name; see the module docstring."""
        index = self._index()
        return index if category is None else tuple(info for info in index if info.category == category)

    def unchanged(self) -> bool:
        """Whether the cached index still holds: the check every lookup starts with."""
        return self._snapshot is not None and not self._dirty and self._snapshot.unchanged()

    def categories(self) -> list[str]:
        return sorted({info.category for info in self._index() if info.category is not None})

    def find(self, name: str) -> SkillInfo:
        """The skill called ``name`` (or ``category/name``); refused when missing or ambiguous."""
        category, _, bare = name.rpartition("/")
        _check_name(bare)
        matches = [info for info in self._index() if info.name == bare and (not category or info.category == category)]
        if len(matches) == 1:
            return matches[0]
        if not matches:
            raise SkillError(f"No skill named {name!r}. Call skills_list to see the skills there are.")
        listed = "\n".join(f"- {info.qualified_name} ({info.path})" for info in matches)
        raise SkillError(
            f"Ambiguous skill name {name!r}: {len(matches)} skills have it:\n{listed}\nUse 'category/name'."
        )

    def view(self, name: str, file_path: str | None = None) -> SkillView:
        """The SKILL.md body of ``name``, or the text of one of its supporting files."""
        info = self.find(name)
        raw = self._read_skill_file(info)
        front, text = _parse_for_view(info, raw)
        files = tuple(self._support_files(info))
        if file_path == SKILL_FILE:
            text = raw
        elif file_path is not None:
            text = self._read_support_file(info, file_path, files)
        return SkillView(
            info=info,
            text=text,
            file_path=file_path,
            version=front.version,
            tags=front.tags,
            related_skills=front.related_skills,
            files=files,
        )

    # -- preparing changes

    def prepare_create(self, name: str, content: str, category: str | None = None) -> SkillChange:
        _check_name(name)
        if category is not None:
            _check_name(category, "category")
        taken = [info for info in self._index() if info.name == name]
        if taken:
            where = ", ".join(info.qualified_name + (" (read-only)" if info.read_only else "") for info in taken)
            raise SkillError(f"A skill named {name!r} already exists ({where}); edit or patch it, or pick a new name.")
        skill_dir = self.root / category / name if category else self.root / name
        skill_file = self._writable(skill_dir / SKILL_FILE, skill_dir)
        if os.path.lexists(skill_file):
            raise SkillError(f"{skill_file} already exists; edit or patch that skill instead.")
        self._checked_skill_text(name, content)
        where = f" in category {category!r}" if category else ""
        return SkillChange("create", name, skill_dir, (FileEdit(skill_file, None, content),), f"Created {name}{where}.")

    def prepare_edit(self, name: str, content: str) -> SkillChange:
        info, old = self._local_skill(name)
        self._checked_skill_text(info.name, content)
        return SkillChange("edit", info.name, info.path, (FileEdit(info.skill_file, old, content),), f"Rewrote {name}.")

    def prepare_patch(
        self,
        name: str,
        old_string: str,
        new_string: str,
        replace_all: bool = False,
        file_path: str | None = None,
        *,
        replace: Replacer = exact_replace,
    ) -> SkillChange:
        """A find-and-replace in SKILL.md or a supporting file; ``replace`` does the matching."""
        info, skill_text = self._local_skill(name)
        path, label, old = info.skill_file, f"{info.qualified_name}/{SKILL_FILE}", skill_text
        if file_path is not None and file_path != SKILL_FILE:
            label = f"{info.qualified_name}/{file_path}"
            path, existing = self._support_target(info, file_path)
            if existing is None:
                raise SkillError(f"{label} does not exist; create it with action 'write_file'.")
            old = existing
        try:
            new = replace(label, old, old_string, new_string, replace_all)
        except ValueError as error:
            raise SkillError(str(error)) from None
        if path == info.skill_file:
            self._checked_skill_text(info.name, new)
        else:
            self._checked_support_text(label, new)
        return SkillChange("patch", info.name, info.path, (FileEdit(path, old, new),), f"Patched {label}.")

    def prepare_delete(self, name: str) -> SkillChange:
        info, old = self._local_skill(name)
        others = len(self._support_files(info))
        extra = f" and its {counted(others, 'supporting file')}" if others else ""
        return SkillChange(
            "delete", info.name, info.path, (FileEdit(info.skill_file, old, None),), f"Deleted {name}{extra}."
        )

    def prepare_write_file(self, name: str, file_path: str, content: str) -> SkillChange:
        info, _ = self._local_skill(name)
        path, old = self._support_target(info, file_path)
        self._checked_support_text(f"{info.qualified_name}/{file_path}", content)
        verb = "Wrote" if old is None else "Replaced"
        return SkillChange(
            "write_file", info.name, info.path, (FileEdit(path, old, content),), f"{verb} {name}/{file_path}."
        )

    def prepare_remove_file(self, name: str, file_path: str) -> SkillChange:
        info, _ = self._local_skill(name)
        path, old = self._support_target(info, file_path)
        if old is None:
            files = ", ".join(self._support_files(info)) or "none"
            raise SkillError(f"{name}/{file_path} does not exist. Files: {files}.")
        return SkillChange(
            "remove_file", info.name, info.path, (FileEdit(path, old, None),), f"Removed {name}/{file_path}."
        )

    # -- writing

    def apply(self, change: SkillChange) -> SkillChange:
        """Write ``change`` under the store's lock if no file in it changed since it was prepared.

        Blocks while another process holds the lock: call it from a worker thread in async code.
        """
        with exclusive_lock(lock_path_for(self.root)):
            for edit in change.files:
                if _read_text(edit.path) != edit.old_text:
                    raise SkillConflictError(
                        f"{edit.path} changed on disk since this change was prepared; view the skill again and retry."
                    )
            if change.action == "delete":
                _remove_tree(change.skill_dir)
            else:
                for edit in change.files:
                    _write(edit, change.skill_dir)
        self._dirty = True
        log.info("skill %s: %s", change.action, change.message)
        return change

    def create(self, name: str, content: str, category: str | None = None) -> SkillChange:
        return self.apply(self.prepare_create(name, content, category))

    def edit(self, name: str, content: str) -> SkillChange:
        return self.apply(self.prepare_edit(name, content))

    def patch(
        self, name: str, old_string: str, new_string: str, replace_all: bool = False, file_path: str | None = None
    ) -> SkillChange:
        return self.apply(self.prepare_patch(name, old_string, new_string, replace_all, file_path))

    def delete(self, name: str) -> SkillChange:
        return self.apply(self.prepare_delete(name))

    def write_file(self, name: str, file_path: str, content: str) -> SkillChange:
        return self.apply(self.prepare_write_file(name, file_path, content))

    def remove_file(self, name: str, file_path: str) -> SkillChange:
        return self.apply(self.prepare_remove_file(name, file_path))

    # -- internals

    def _index(self) -> tuple[SkillInfo, ...]:
        snapshot = self._snapshot
        if snapshot is None or not self.unchanged():
            self._dirty = False
            snapshot = self._snapshot = self._build(snapshot)
        return snapshot.skills

    def _build(self, previous: _Snapshot | None) -> _Snapshot:
        builder = _Builder({} if previous is None else previous.parsed, self.platform)
        builder.scan_root(self.root, read_only=False)
        for root in self.external:
            builder.scan_root(root, read_only=True)
        settled = max(builder.mtimes, default=-1) < builder.settled_before
        return _Snapshot(_visible(builder.found), builder.watched, builder.mtimes, builder.parsed, settled)

    def _local_skill(self, name: str) -> tuple[SkillInfo, str]:
        """The writable skill ``name`` and its current SKILL.md text."""
        info = self.find(name)
        if info.read_only:
            raise SkillError(
                f"{info.qualified_name} comes from the read-only skills folder {info.source}; it cannot be changed "
                "here. Create a new skill with another name if you need a variant."
            )
        self._writable(info.skill_file, info.path)
        return info, self._read_skill_file(info)

    @staticmethod
    def _writable(path: Path, skill_dir: Path) -> Path:
        """``path``, after checking that neither it nor its skill folder goes through a symlink."""
        if os.path.realpath(skill_dir) != str(skill_dir):
            raise SkillError(f"{skill_dir} is a symlink; skills in this store must be plain folders.")
        return _inside(path, skill_dir)

    def _read_skill_file(self, info: SkillInfo) -> str:
        text = _read_text(info.skill_file, 4 * MAX_SKILL_CHARS)
        if text is None:
            raise SkillError(f"{info.qualified_name} has no SKILL.md any more; call skills_list again.")
        if len(text) > MAX_SKILL_CHARS:
            raise SkillError(f"{info.qualified_name}/SKILL.md is over {MAX_SKILL_CHARS:,} characters; not loaded.")
        return text

    def _support_target(self, info: SkillInfo, file_path: str) -> tuple[Path, str | None]:
        relative = _relative_support_path(file_path)
        path = self._writable(info.path.joinpath(*relative.parts), info.path)
        return path, _read_text(path, MAX_FILE_BYTES)

    def _read_support_file(self, info: SkillInfo, file_path: str, files: Sequence[str]) -> str:
        relative = _relative_support_path(file_path)
        skill_dir = Path(os.path.realpath(info.path))
        path = _inside(skill_dir.joinpath(*relative.parts), skill_dir)
        data = _read_bytes(path, MAX_FILE_BYTES)
        if data is None:
            raise SkillError(f"{info.qualified_name} has no file {file_path!r}. Files: {', '.join(files) or 'none'}.")
        if looks_binary(data):
            return f"[binary file, {len(data):,} bytes: not shown]"
        return data.decode("utf-8", errors="replace")

    def _support_files(self, info: SkillInfo) -> list[str]:
        """Supporting files of a skill, relative to its folder (symlinks are not followed)."""
        found: list[str] = []
        for folder in SUPPORT_DIRS:
            base = info.path / folder
            if base.is_symlink():
                continue
            for directory, dirs, files in os.walk(base):
                dirs[:] = sorted(d for d in dirs if not d.startswith("."))
                prefix = Path(directory).relative_to(info.path).as_posix()
                found += [f"{prefix}/{name}" for name in sorted(files) if not name.startswith(".")]
        return found

    @staticmethod
    def _checked_skill_text(name: str, content: str) -> None:
        parse_skill(name, content)
        _scanned(f"SKILL.md of {name}", content)

    @staticmethod
    def _checked_support_text(label: str, content: str) -> None:
        size = len(content.encode("utf-8"))
        if size > MAX_FILE_BYTES:
            raise SkillError(f"{label} would be {size:,} bytes; supporting files are limited to {MAX_FILE_BYTES:,}.")
        _scanned(label, content)


def _parse_for_view(info: SkillInfo, text: str) -> tuple[_Frontmatter, str]:
    """Frontmatter and body of a skill being loaded: lenient, since others may write skills differently."""
    bare = _Frontmatter(info.description, None, None, (), ())
    split = _split_frontmatter(text.lstrip("\ufeff"))
    if split is None:
        return bare, text
    block, body = split
    try:
        return _checked_frontmatter(_load_yaml(block)), body
    except SkillError:
        return bare, body


def _visible(found: Sequence[SkillInfo]) -> tuple[SkillInfo, ...]:
    """Drop skills hidden by one of the same name in an earlier folder (local first)."""
    owner: dict[str, Path] = {}
    for info in found:
        owner.setdefault(info.name, info.source)
    kept = [info for info in found if owner[info.name] == info.source]
    return tuple(sorted(kept, key=lambda info: (info.category or "", info.name, str(info.source))))


def _write(edit: FileEdit, skill_dir: Path) -> None:
    if edit.new_text is not None:
        write_text_exactly(edit.path, edit.new_text, private=True)  # the path is real already: nothing to resolve
        return
    delete_exactly(edit.path)
    parent = edit.path.parent
    while parent != skill_dir and parent.is_relative_to(skill_dir):
        with contextlib.suppress(OSError):  # not empty: keep it and its parents
            os.rmdir(parent)
        parent = parent.parent


def _remove_tree(skill_dir: Path) -> None:
    """Take the folder out of sight in one rename, then delete it (rmtree follows no symlink)."""
    hidden = skill_dir.with_name(f".{skill_dir.name}.{os.urandom(4).hex()}.deleted")
    os.rename(skill_dir, hidden)
    shutil.rmtree(hidden)
