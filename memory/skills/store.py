"""The skills store: reading skills through the index, and every write in two steps so the user can
review it first.

``prepare_*`` validates the frontmatter, keeps supporting files inside the four subfolders, refuses
traversal and symlinks, scans the new text with ``memory.scan`` and returns a ``SkillChange`` (old
and new text of each file); ``apply`` then writes it under the store's lock, atomically, after
checking that no file changed on disk in between. The ``create``/``edit``/... methods do both at
once.
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import sys
from collections.abc import Callable, Sequence
from pathlib import Path, PurePosixPath, PureWindowsPath

from acp_hermes_memory.fs import delete_exactly, exclusive_lock, lock_path_for, write_text_exactly
from acp_hermes_memory.scan import scan
from acp_hermes_memory.skills.frontmatter import (
    Frontmatter,
    checked_frontmatter,
    load_yaml,
    parse_skill,
    split_frontmatter,
)
from acp_hermes_memory.skills.index import Snapshot, build_index
from acp_hermes_memory.skills.records import (
    MAX_FILE_BYTES,
    MAX_NAME_CHARS,
    MAX_SKILL_CHARS,
    SKILL_FILE,
    SUPPORT_DIRS,
    FileEdit,
    SkillChange,
    SkillConflictError,
    SkillError,
    SkillInfo,
    SkillThreatError,
    SkillView,
    valid_name,
)
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


class SkillStore:
    """Skills in ``root`` (writable) and in ``external`` folders (read-only)."""

    def __init__(self, root: Path, external: Sequence[Path] = (), *, platform: str | None = None) -> None:
        self.root = Path(os.path.realpath(root))  # so a symlink found under it later is one inside it
        others = (Path(os.path.abspath(path)) for path in external)
        self.external = tuple(path for path in others if os.path.realpath(path) != str(self.root))
        self.platform = platform or current_platform()
        self._snapshot: Snapshot | None = None
        self._dirty = False  # set by our own writes: rebuild without waiting for the mtime check

    # -- reading

    def skills(self, category: str | None = None) -> tuple[SkillInfo, ...]:
        """Visible skills (of one category), sorted by category then name; see ``memory.skills``."""
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
            snapshot = self._snapshot = build_index(snapshot, self.root, self.external, self.platform)
        return snapshot.skills


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
