"""The skills index: which skills there are (name, description, category, folder), kept between lookups.

It is what ``skills_list`` shows and what every lookup goes through, so it must be cheap: it is
built once, kept, and rebuilt only when the mtime of a watched path changed (the roots, their
category folders and every SKILL.md), with parsed entries reused for skills whose SKILL.md did not
change. An mtime younger than ``RACY_NS`` at scan time is not trusted (see there), so for a second
after a change every lookup rescans. Listing parses only the top-level ``description`` and
``platforms`` of each frontmatter (``memory.skills.frontmatter.quick_fields``).

A project's skill folders (``project``) are read whole and scanned by ``memory.skills.quarantine``
whenever a file of theirs changes: a flagged skill is quarantined (``Snapshot.quarantined``) instead
of listed, and every file of such skills is watched.

What reaches a prompt from a skill folder is checked here: a folder whose name is not a valid
skill name (``NAME_PATTERN``, at most ``MAX_NAME_CHARS``) is not listed (a name with a newline or a
"## System: ..." could forge a section of the system prompt), and a skill whose frontmatter ``name``
or ``description`` trips the injection scanner (``context`` scope) is not listed either; both are
logged, the scan once per change of the SKILL.md.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Sequence
from pathlib import Path

from acp_hermes_memory.scan import scan
from acp_hermes_memory.skills.frontmatter import (
    NAME_LINE,
    frontmatter_end,
    load_yaml,
    platforms_of,
    quick_fields,
    split_frontmatter,
)
from acp_hermes_memory.skills.quarantine import ProjectScanner
from acp_hermes_memory.skills.records import (
    EXCLUDED_DIRS,
    MAX_DESCRIPTION_CHARS,
    MAX_NAME_CHARS,
    SKILL_FILE,
    Quarantined,
    SkillError,
    SkillInfo,
    valid_name,
)
from acp_hermes_memory.values import value

log = logging.getLogger(__name__)

_HEAD_BYTES = 8192  # listing reads this much of a SKILL.md; the frontmatter nearly always fits
# File systems stamp mtimes with a coarse clock (a kernel tick; a whole second on some), so a
# change made within this long of a scan may carry the mtime the scan saw: such an mtime
# proves nothing, and what it guards is looked at again (git's "racy" index entries).
RACY_NS = 1_000_000_000


@value
class _Parsed:
    """What listing needs from one SKILL.md, kept while the file's mtime stays the same."""

    mtime: int
    settled: bool  # the mtime was old when parsed: an unchanged mtime means unchanged text
    description: str
    platforms: tuple[str, ...] | None  # None: every platform
    error: str | None = None  # why the skill is not listed (logged once, when parsed)


# A plain class, not a dataclass: defining one costs about a millisecond before the first prompt.
class Snapshot:
    """The index and the mtimes it was built from."""

    __slots__ = ("mtimes", "parsed", "quarantined", "settled", "skills", "watched")

    def __init__(self, skills: tuple[SkillInfo, ...], watched: list[str], mtimes: list[int],
                 parsed: dict[str, _Parsed] | None = None, settled: bool = True,
                 quarantined: tuple[Quarantined, ...] = ()) -> None:
        self.skills = skills
        self.watched = watched
        self.mtimes = mtimes
        self.parsed: dict[str, _Parsed] = {} if parsed is None else parsed
        self.settled = settled  # no watched mtime was recent when it was built
        self.quarantined = quarantined  # project skills the scanner flagged

    def unchanged(self) -> bool:
        if not self.settled:
            return False
        try:
            return [os.stat(path).st_mtime_ns for path in self.watched] == self.mtimes
        except OSError:
            return False


class _Builder:
    """One scan of the skill folders: found skills, and every path whose mtime it depends on."""

    def __init__(self, previous: dict[str, _Parsed], platform: str, scanner: ProjectScanner | None) -> None:
        self.previous = previous
        self.platform = platform
        self.scanner = scanner
        self.quarantined: list[Quarantined] = []
        self.settled_before = time.time_ns() - RACY_NS
        self.watched: list[str] = []
        self.mtimes: list[int] = []
        self.parsed: dict[str, _Parsed] = {}
        self.found: list[SkillInfo] = []

    def scan_root(self, root: Path, origin: str) -> None:
        if not self._watch(str(root)):
            return
        for entry in _subdirectories(str(root)):
            if not self._add_skill(root, entry, None, origin):
                self._scan_category(root, entry, origin)

    def _scan_category(self, root: Path, category: os.DirEntry[str], origin: str) -> None:
        if not valid_name(category.name) or not self._watch(category.path):
            return
        for entry in _subdirectories(category.path):
            if not self._add_skill(root, entry, category.name, origin):
                self._watch(entry.path)  # a SKILL.md may be added to it later

    def _add_skill(self, root: Path, entry: os.DirEntry[str], category: str | None, origin: str) -> bool:
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
            info = SkillInfo(entry.name, parsed.description, category, Path(entry.path), root, origin != "home", origin)
            if origin == "project" and self.scanner is not None:
                verdict = self.scanner.check(entry.path, self.settled_before)
                for path, mtime in verdict.watched:
                    self.watched.append(path)
                    self.mtimes.append(mtime)
                if verdict.reason is not None:
                    self.quarantined.append(Quarantined(info, verdict.reason))
                    return True
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
    if frontmatter_end(text) is None and len(head) == _HEAD_BYTES:
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
    split = split_frontmatter(text)
    if split is None:
        description = " ".join(_body_description(text).split())[:MAX_DESCRIPTION_CHARS]
        _check_listed_text(None, description)
        return description, None
    block, body = split
    fields = quick_fields(block)
    if fields is None:
        fields = load_yaml(block)
    given = fields.get("description")
    raw = given if isinstance(given, str) and given.strip() else _body_description(body)
    description = " ".join(raw.split())[:MAX_DESCRIPTION_CHARS]
    name = NAME_LINE.search(block)
    _check_listed_text(name.group(1) if name else None, description)
    return description, platforms_of(fields.get("platforms"))


def _check_listed_text(name: str | None, description: str) -> None:
    """Refuse to list a skill whose frontmatter name (its line, as written) or description reads
    like prompt injection: what a skill says of itself reaches every session's system prompt (which
    scans the description again, as shown: ``memory.scan`` keeps the findings of short texts)."""
    findings = [*scan(description, "context"), *(scan(name, "context") if name is not None else ())]
    if findings:
        ids = ", ".join(dict.fromkeys(finding.pattern_id for finding in findings))
        raise SkillError(f"its name or description contains potential prompt injection ({ids})")


def _body_description(body: str) -> str:
    """The first line of prose, for a skill whose frontmatter has no description (as Hermes does)."""
    for line in body.splitlines():
        line = line.strip()
        if line and not line.startswith(("#", "---")):
            return line
    return ""


def build_index(previous: Snapshot | None, root: Path, external: Sequence[Path], platform: str,
                project: Sequence[Path] = (), scanner: ProjectScanner | None = None) -> Snapshot:
    """Scan ``root`` (writable), the ``external`` folders and the ``project`` ones (read-only, and read
    whole by ``scanner``), reusing what ``previous`` parsed of SKILL.md files that did not change."""
    builder = _Builder({} if previous is None else previous.parsed, platform, scanner)
    builder.scan_root(root, "home")
    for folder in external:
        builder.scan_root(folder, "external")
    for folder in project:
        builder.scan_root(folder, "project")
    settled = max(builder.mtimes, default=-1) < builder.settled_before
    return Snapshot(_visible(builder.found), builder.watched, builder.mtimes, builder.parsed, settled,
                    tuple(builder.quarantined))


def _visible(found: Sequence[SkillInfo]) -> tuple[SkillInfo, ...]:
    """Drop skills hidden by one of the same name in an earlier folder (local first)."""
    owner: dict[str, Path] = {}
    for info in found:
        owner.setdefault(info.name, info.source)
    kept = [info for info in found if owner[info.name] == info.source]
    return tuple(sorted(kept, key=lambda info: (info.category or "", info.name, str(info.source))))
