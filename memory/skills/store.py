"""The skills store: reading skills through the index, and every write in two steps so the user can
review it first.

``prepare_*`` validates the frontmatter, keeps supporting files inside the four subfolders, refuses
traversal and symlinks, scans the new text with ``memory.scan`` and returns a ``SkillChange`` (old
and new text of each file); ``apply`` then writes it under the store's lock, atomically, after
checking that no file changed on disk in between. The ``create``/``edit``/... methods do both at
once.

Around the files it keeps what listing and undo need: each skill's usage in the sidecar
(``memory.skills.usage``), every change in the history ledger (``memory.skills.history``), archived
skills in ``.archive/`` (``memory.skills.archive``), and the verdicts of project skills
(``memory.skills.quarantine``). A store speaks for one ``author`` (``with_author``): the model's
turns, the learning loop's review, the curation pass or the user, as the history records it.
"""

from __future__ import annotations

import contextlib
import copy
import functools
import logging
import os
import shutil
import sys
from collections.abc import Callable, Sequence
from pathlib import Path, PurePosixPath, PureWindowsPath

from acp_hermes_memory.fs import (
    delete_exactly,
    exclusive_lock,
    lock_path_for,
    make_private_directories,
    write_text_exactly,
)
from acp_hermes_memory.scan import scan
from acp_hermes_memory.skills.archive import ArchivedSkill, archived_skills, archived_slot, free_slot
from acp_hermes_memory.skills.clock import Clock, iso, system_clock
from acp_hermes_memory.skills.frontmatter import (
    Frontmatter,
    checked_frontmatter,
    load_yaml,
    parse_skill,
    split_frontmatter,
)
from acp_hermes_memory.skills.history import AGENT_AUTHORS, FileVersion, SkillHistory
from acp_hermes_memory.skills.index import Snapshot, build_index
from acp_hermes_memory.skills.quarantine import ProjectScanner
from acp_hermes_memory.skills.records import (
    MAX_FILE_BYTES,
    MAX_NAME_CHARS,
    MAX_SKILL_CHARS,
    SKILL_FILE,
    SUPPORT_DIRS,
    FileEdit,
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
from acp_hermes_memory.skills.usage import NO_USAGE, Records, Usage, UsageRecorder, new_record, recorder_for
from acp_hermes_memory.text import counted, looks_binary

log = logging.getLogger(__name__)

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


# A plain class, not a dataclass: defining one costs about a millisecond before the first prompt.
class _Shared:
    """A store's index and what is built on it, shared by the copies ``with_author`` makes."""

    __slots__ = ("dirty", "snapshot", "statuses")

    def __init__(self, snapshot: Snapshot | None = None, dirty: bool = False,
                 statuses: tuple[tuple[SkillInfo, ...], dict[str, Usage], tuple[SkillStatus, ...]] | None = None,
                 ) -> None:
        self.snapshot = snapshot
        self.dirty = dirty
        self.statuses = statuses


class SkillStore:
    """Skills in ``root`` (writable), in ``external`` folders and a project's ``project`` folders (read-only)."""

    def __init__(self, root: Path, external: Sequence[Path] = (), *, project: Sequence[Path] = (),
                 platform: str | None = None, history: Path | None = None, scan_cache: Path | None = None,
                 clock: Clock | None = None, author: str = "agent") -> None:
        self.root = Path(os.path.realpath(root))  # so a symlink found under it later is one inside it
        others = (Path(os.path.abspath(path)) for path in external)
        self.external = tuple(path for path in others if os.path.realpath(path) != str(self.root))
        mine = (Path(os.path.abspath(path)) for path in project)
        self.project = tuple(path for path in mine if os.path.realpath(path) != str(self.root))
        self.platform = platform or current_platform()
        self.clock = clock or system_clock()
        self.usage: UsageRecorder = recorder_for(self.root, lock_path_for(self.root), self.clock)
        self.history = SkillHistory(history) if history is not None else None
        self._scanner = ProjectScanner(scan_cache) if self.project else None
        self.author = author  # whose changes these are, for the history (see the module docstring)
        self._shared = _Shared()  # the index, shared with this store's copies for other authors

    @property
    def _dirty(self) -> bool:
        """Set by our own writes (any author's): rebuild without waiting for the mtime check."""
        return self._shared.dirty

    @_dirty.setter
    def _dirty(self, dirty: bool) -> None:
        self._shared.dirty = dirty

    def with_author(self, author: str) -> SkillStore:
        """This store, its changes recorded as ``author``'s (``review``, ``curator``, ``user``). The
        curation pass may change only skills the agent created."""
        other = copy.copy(self)
        other.author = author
        return other

    # -- reading

    def skills(self, category: str | None = None) -> tuple[SkillInfo, ...]:
        """Visible skills (of one category), sorted by category then name; see ``memory.skills``."""
        index = self._index()
        return index if category is None else tuple(info for info in index if info.category == category)

    def unchanged(self) -> bool:
        """Whether the cached index still holds: the check every lookup starts with."""
        snapshot = self._shared.snapshot
        return snapshot is not None and not self._dirty and snapshot.unchanged()

    def quarantined(self) -> tuple[Quarantined, ...]:
        """Project skills kept out of the index because the threat scanner flagged them (as of the
        last lookup: ``skills`` or ``statuses`` first, for the present)."""
        if self._shared.snapshot is None:
            self._index()
        snapshot = self._shared.snapshot
        return snapshot.quarantined if snapshot is not None else ()

    def statuses(self, category: str | None = None) -> tuple[SkillStatus, ...]:
        """``skills`` with each one's usage and provenance (kept while neither the index nor the sidecar
        changed: both hand back the very same objects then)."""
        index, records = self._index(), self.usage.file.records()
        kept = self._shared.statuses
        if kept is None or kept[0] is not index or kept[1] is not records:
            built = tuple(SkillStatus(info, records.get(info.name, NO_USAGE), self._provenance(info, records))
                          for info in index)
            kept = self._shared.statuses = (index, records, built)
        return kept[2] if category is None else tuple(s for s in kept[2] if s.info.category == category)

    def status(self, info: SkillInfo) -> SkillStatus:
        records = self.usage.file.records()
        return SkillStatus(info, records.get(info.name, NO_USAGE), self._provenance(info, records))

    def archived(self) -> list[ArchivedSkill]:
        """Skills moved to ``.archive/`` (newest archive of each name first)."""
        return archived_skills(self.root)

    def record_use(self, info: SkillInfo, kind: str = "use") -> None:
        """Count a use (its instructions loaded to be followed) or a ``view`` of ``info``; never blocks."""
        self.usage.record(info.name, "view" if kind == "view" else "use", self._provenance(info, None))

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
            shut = [q for q in self.quarantined() if q.info.name == bare]
            if shut:
                raise SkillError(f"The project skill {name!r} is quarantined and cannot be loaded: {shut[0].reason}.")
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

    def apply(self, change: SkillChange, *, session: str | None = None) -> SkillChange:
        """Write ``change`` under the store's lock if no file in it changed since it was prepared;
        record it in the history (with ``session``) and the usage sidecar.

        Blocks while another process holds the lock: call it from a worker thread in async code.
        """
        with exclusive_lock(lock_path_for(self.root)):
            for edit in change.files:
                if _read_text(edit.path) != edit.old_text:
                    raise SkillConflictError(
                        f"{edit.path} changed on disk since this change was prepared; view the skill again and retry."
                    )
            versions = self._versions(change)
            if change.action == "delete":
                _remove_tree(change.skill_dir)
            else:
                for edit in change.files:
                    _write(edit, change.skill_dir)
            self._remember(change.name, change.skill_dir, change.action, versions, change.message, session)
            self._count_change(change)
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

    # -- lifecycle: pins, archive, restore

    def set_pinned(self, name: str, pinned: bool) -> SkillInfo:
        """Pin (or unpin) a listed skill: a pinned skill never goes stale nor is archived."""
        try:
            info = self.find(name)
        except SkillError:
            if archived_slot(self.root, name.rpartition("/")[2]) is not None:
                raise SkillError(f"{name!r} is archived: restore it first.") from None
            raise
        moment = self.clock()

        def edit(records: Records) -> bool:
            record = records.setdefault(info.name, new_record(moment, self._provenance(info, None)))
            record["pinned"] = pinned
            if pinned and record.get("state") == "stale":
                record["state"] = "active"
            return True

        self.usage.flush()
        self.usage.file.change(edit)
        return info

    def archive(self, name: str, *, session: str | None = None, note: str = "") -> Path:
        """Move the home skill ``name`` to ``.archive/`` (out of every index, never deleted); its new folder."""
        info, _ = self._local_skill(name)
        moment = self.clock()
        with exclusive_lock(lock_path_for(self.root)):
            target = free_slot(self.root, info.name, moment)
            make_private_directories(target.parent)
            os.rename(info.path, target)
            relative = info.path.relative_to(self.root).as_posix()

            def edit(records: Records) -> bool:
                record = records.setdefault(info.name, new_record(moment, self._provenance(info, None)))
                record.update(state="archived", archived_at=iso(moment), archived_from=relative)
                return True

            self.usage.file.change_locked(edit)
            self._remember(info.name, info.path, "archive", (), note or f"Archived {info.qualified_name}.", session)
        self._dirty = True
        log.info("skill %s archived to %s", info.qualified_name, target)
        return target

    def restorable(self, name: str) -> tuple[Path, str] | None:
        """The SKILL.md a restore of the archived ``name`` brings back, and its text; None when there is
        no such archived skill (or one of that name is listed)."""
        slot = archived_slot(self.root, name) if valid_name(name) else None
        if slot is None or any(info.name == name for info in self._index()):
            return None
        text = _read_text(slot / SKILL_FILE, 4 * MAX_SKILL_CHARS)
        if text is None:
            return None
        came_from = self.usage.file.records().get(name, NO_USAGE).archived_from
        folder = self.root / came_from if came_from and _plain_relative(came_from) else self.root / name
        return folder / SKILL_FILE, text

    def restore(self, name: str, *, session: str | None = None) -> Path:
        """Bring the archived skill ``name`` back where it was; its folder again."""
        _check_name(name)
        if any(info.name == name for info in self._index()):
            raise SkillError(f"A skill named {name!r} is listed already; nothing to restore.")
        moment = self.clock()
        with exclusive_lock(lock_path_for(self.root)):
            slot = archived_slot(self.root, name)
            if slot is None:
                raise SkillError(f"No archived skill named {name!r}.")
            records = self.usage.file.read_raw() or {}
            came_from = (records.get(name) or {}).get("archived_from")
            target = self.root / name
            if isinstance(came_from, str) and _plain_relative(came_from) and not os.path.lexists(self.root / came_from):
                target = self.root / came_from
            if os.path.lexists(target):
                raise SkillError(f"{target} exists; move it away before restoring {name!r}.")
            make_private_directories(target.parent)
            os.rename(slot, target)

            def edit(records: Records) -> bool:
                record = records.setdefault(name, new_record(moment, "user"))
                record.update(state="active", archived_at=None, restored_at=iso(moment))
                record.pop("archived_from", None)
                return True

            self.usage.file.change_locked(edit)
            self._remember(name, target, "restore", (), f"Restored {name} from the archive.", session)
        self._dirty = True
        log.info("skill %s restored to %s", name, target)
        return target

    # -- history: putting files back

    def put_back(self, files: Sequence[FileRestore], *, session: str | None = None, note: str = "") -> list[Path]:
        """Put each skill file back as ``files`` say (a rollback), one history entry per skill; the
        paths written or removed. Refused for a skill that is archived now."""
        changed: list[Path] = []
        by_skill: dict[tuple[str, str], list[FileRestore]] = {}
        for item in files:
            if not _plain_relative(item.directory):
                raise SkillError(f"{item.directory!r} is not a skill folder inside the skills folder.")
            by_skill.setdefault((item.skill, item.directory), []).append(item)
        moment = self.clock()
        with exclusive_lock(lock_path_for(self.root)):
            for (skill, directory), items in by_skill.items():
                skill_dir = self.root / directory
                versions = []
                for item in items:
                    path = _inside(skill_dir.joinpath(*_relative_file(item.path).parts), skill_dir)
                    old = _read_text(path, MAX_FILE_BYTES)
                    if old == item.text:
                        continue
                    _write(FileEdit(path, old, item.text), skill_dir)
                    versions.append(FileVersion(item.path, old, item.text))
                    changed.append(path)
                if not versions:
                    continue
                if not os.path.lexists(skill_dir / SKILL_FILE):
                    with contextlib.suppress(OSError):
                        os.rmdir(skill_dir)
                self._remember(skill, skill_dir, "rollback", versions, note or f"Rolled back {skill}.", session)
                self.usage.file.change_locked(
                    functools.partial(_after_put_back, name=skill, skill_dir=skill_dir, moment=moment,
                                      agents=self._created_by_agent(skill)))
        self._dirty = True
        return changed

    def current_text(self, directory: str, path: str) -> tuple[Path, str | None] | None:
        """A skill file named as the history names it: where it is and its text now (None: absent). None
        when it cannot be put back there: its skill is archived, or the path is not a plain one."""
        if not _plain_relative(directory) or not _plain_relative(path):
            return None
        skill_dir = self.root / directory
        if not os.path.lexists(skill_dir) and archived_slot(self.root, skill_dir.name) is not None:
            return None
        try:
            target = _inside(skill_dir.joinpath(*PurePosixPath(path).parts), skill_dir)
            return target, _read_text(target, MAX_FILE_BYTES)
        except SkillError:
            return None

    def rollback(self, name: str, version: int | None = None, *, session: str | None = None) -> list[Path]:
        """Put ``name`` back as it was after its ``version``-th history entry (default: the one before the
        last); the paths written or removed. The rollback is itself a new entry."""
        if self.history is None:
            raise SkillError("This store keeps no history.")
        entries = [e for e in self.history.entries(name) if e.files]
        if not entries:
            raise SkillError(f"No recorded change to a skill named {name!r}.")
        chosen = len(entries) - 1 if version is None else version
        if not 0 <= chosen <= len(entries):
            raise SkillError(f"{name!r} has versions 0 to {len(entries)} (0: before its first recorded change, "
                             f"{len(entries)}: the latest).")
        if archived_slot(self.root, name) is not None and not any(i.name == name for i in self._index()):
            raise SkillError(f"{name!r} is archived: restore it first (`acp-hermes skills restore {name}`).")
        targets: dict[tuple[str, str], FileRestore] = {}
        for entry in entries[chosen:]:
            for version_ in entry.files:
                targets.setdefault((entry.directory, version_.path),
                                   FileRestore(name, entry.directory, version_.path, version_.old))
        return self.put_back(list(targets.values()), session=session, note=f"Rolled back {name} to version {chosen}.")

    # -- internals

    def _index(self) -> tuple[SkillInfo, ...]:
        snapshot = self._shared.snapshot
        if snapshot is None or not self.unchanged():
            self._dirty = False
            snapshot = self._shared.snapshot = build_index(snapshot, self.root, self.external, self.platform,
                                                           self.project, self._scanner)
        return snapshot.skills

    @staticmethod
    def _provenance(info: SkillInfo, records: dict[str, Usage] | None) -> str:
        """agent, user, external or project: its folder's kind, and for the home folder's skills "agent"
        only when its record says the agent created it (anything else there is the user's)."""
        if info.origin != "home":
            return info.origin
        found = records.get(info.name) if records is not None else None
        return "agent" if found is not None and found.created_by == "agent" else "user"

    def _created_by_agent(self, name: str) -> bool:
        """Whether the history's first change to ``name`` was the agent's creating it."""
        if self.history is None:
            return False
        first = next((e for e in self.history.entries(name) if e.action == "create"), None)
        return first is not None and first.by in AGENT_AUTHORS

    def _versions(self, change: SkillChange) -> list[FileVersion]:
        """Each file of ``change`` before and after, relative to its skill; a delete keeps every file."""
        if change.action == "delete":
            return [FileVersion(rel, text, None) for rel, text in _folder_texts(change.skill_dir)]
        return [FileVersion(edit.path.relative_to(change.skill_dir).as_posix(), edit.old_text, edit.new_text)
                for edit in change.files]

    def _remember(self, name: str, skill_dir: Path, action: str, versions: Sequence[FileVersion], note: str,
                  session: str | None) -> None:
        """One history entry (the caller holds the lock); a failure to write it is logged, never raised."""
        if self.history is None:
            return
        try:
            self.history.append_locked(skill=name, directory=skill_dir.relative_to(self.root).as_posix(),
                                       at=self.clock(), by=self.author, session=session, action=action,
                                       files=versions, note=note)
        except OSError as error:
            log.warning("the skills history could not record %s of %s: %s", action, name, error)

    def _count_change(self, change: SkillChange) -> None:
        """The sidecar after a change (the caller holds the lock): a create starts a record, a delete ends it."""
        moment = self.clock()

        def edit(records: Records) -> bool:
            if change.action == "delete":
                return records.pop(change.name, None) is not None
            if change.action == "create":
                records[change.name] = new_record(moment, "agent" if self.author in AGENT_AUTHORS else "user")
                return True
            record = records.setdefault(change.name, new_record(moment, "user"))
            count = record.get("patch_count")
            record["patch_count"] = (count if isinstance(count, int) and not isinstance(count, bool) else 0) + 1
            record["last_patched_at"] = iso(moment)
            if record.get("state") == "stale":
                record["state"] = "active"
            return True

        try:
            self.usage.file.change_locked(edit)
        except OSError as error:
            log.warning("skill usage could not be recorded for %s: %s", change.name, error)


    def _local_skill(self, name: str) -> tuple[SkillInfo, str]:
        """The writable skill ``name`` and its current SKILL.md text."""
        info = self.find(name)
        if info.read_only:
            raise SkillError(
                f"{info.qualified_name} comes from the read-only skills folder {info.source}; it cannot be changed "
                "here. Create a new skill with another name if you need a variant."
            )
        if self.author == "curator" and self._provenance(info, self.usage.file.records()) != "agent":
            raise SkillError(f"{info.qualified_name} is not a skill the agent created: the curation pass leaves it "
                             "as it is.")
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


def _parse_for_view(info: SkillInfo, text: str) -> tuple[Frontmatter, str]:
    """Frontmatter and body of a skill being loaded: lenient, since others may write skills differently."""
    bare = Frontmatter(info.description, None, None, (), ())
    split = split_frontmatter(text.lstrip("\ufeff"))
    if split is None:
        return bare, text
    block, body = split
    try:
        return checked_frontmatter(load_yaml(block)), body
    except SkillError:
        return bare, body


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


def _folder_texts(skill_dir: Path) -> list[tuple[str, str]]:
    """(relative path, text) of every text file of a skill folder (binary ones are not kept)."""
    found = []
    for directory, dirs, files in os.walk(skill_dir):
        dirs.sort()
        for name in sorted(files):
            path = Path(directory) / name
            if path.is_symlink():
                continue
            try:
                text = _read_text(path, MAX_FILE_BYTES)
            except SkillError:
                continue
            if text is not None and "\0" not in text[:8192]:
                found.append((path.relative_to(skill_dir).as_posix(), text))
    return found


def _after_put_back(records: Records, name: str, skill_dir: Path, moment: float, agents: bool) -> bool:
    """The sidecar after a rollback: a skill it removed loses its record, one it re-created gets one."""
    if not os.path.lexists(skill_dir / SKILL_FILE):
        return records.pop(name, None) is not None
    if name in records:
        return False
    records[name] = new_record(moment, "agent" if agents else "user")
    return True


def _plain_relative(directory: str) -> bool:
    """Whether ``directory`` is a plain relative folder path (no ``..``, not absolute)."""
    parts = directory.split("/")
    return bool(directory) and not directory.startswith("/") and all(p and p not in (".", "..") for p in parts)


def _relative_file(path: str) -> PurePosixPath:
    if not _plain_relative(path) or "\\" in path or "\0" in path:
        raise SkillError(f"{path!r} is not a file inside the skill's folder.")
    return PurePosixPath(path)
