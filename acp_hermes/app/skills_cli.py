"""`acp-hermes skills list|show NAME`: the skills a session started in this directory can load.

The same folders a session sees (``Runtime.skills_for``): ``$HERMES_HOME/skills`` (home), the
configured ``skills_external_dirs`` (external) and the project's ``.hermes/skills`` (project).
``broken_skills`` is for ``doctor``: every SKILL.md checked the way a write is, so a skill that
silently drops out of the list is named with the reason.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from acp_hermes.app.local_settings import settings_or_defaults
from acp_hermes.config import Paths, Settings, paths_from_env
from acp_hermes_memory.skills import (
    EXCLUDED_DIRS,
    MAX_NAME_CHARS,
    MAX_SKILL_CHARS,
    SKILL_FILE,
    SkillError,
    SkillInfo,
    SkillStore,
    parse_skill,
    valid_name,
)

_DESCRIPTION_CHARS = 90


def skill_store(paths: Paths, settings: Settings, cwd: Path) -> SkillStore:
    from acp_hermes.core.runtime import Runtime

    return Runtime(settings, paths).skills_for(cwd)


def source_of(info: SkillInfo, store: SkillStore, cwd: Path) -> str:
    """home, project or external: which kind of folder the skill comes from."""
    if info.source == store.root:
        return "home"
    if info.source == Path(os.path.abspath(cwd / ".hermes" / "skills")):
        return "project"
    return "external"


@dataclass(frozen=True, slots=True)
class BrokenSkill:
    name: str  # category/name as found on disk
    skill_file: Path
    reason: str
    listed: bool  # the store still lists it (leniently): only a write would refuse it


def broken_skills(store: SkillStore, listed: Sequence[SkillInfo]) -> list[BrokenSkill]:
    """Every SKILL.md in the store's folders that fails the checks a write must pass (``listed``: what
    the store lists, passed in so one look at the folders serves both)."""
    shown = {info.skill_file for info in listed}
    broken = []
    for root in (store.root, *store.external):
        for skill_file, name in _skill_files(root):
            problem = _folder_problem(name) or _problem(skill_file, name.rpartition("/")[2])
            if problem is not None:
                broken.append(BrokenSkill(name, skill_file, problem, skill_file in shown))
    return broken


def _folder_problem(name: str) -> str | None:
    """Why a skill's folder (or its category's) keeps it out of every list, or None.

    Checked before the frontmatter: a folder name the store refuses is the one cause to fix (its
    ``name:`` line must then match the new folder name anyway).
    """
    folders = name.split("/")
    rule = f"lowercase letters, digits, '.', '_' and '-', at most {MAX_NAME_CHARS} characters"
    for depth, folder in enumerate(folders, 1):
        if valid_name(folder):
            continue
        if depth < len(folders):
            return f"its category folder's name {folder!r} is not a valid name ({rule}): rename that folder"
        return (f"its folder's name {folder!r} is not a valid skill name ({rule}): rename the folder, and the "
                "frontmatter's `name:` to match")
    return None


def _skill_files(root: Path) -> Iterator[tuple[Path, str]]:
    """(SKILL.md, category/name) for each skill folder under ``root``, one category level deep."""
    for entry in _folders(root):
        if (entry / SKILL_FILE).is_file():
            yield entry / SKILL_FILE, entry.name
            continue
        for inner in _folders(entry):
            if (inner / SKILL_FILE).is_file():
                yield inner / SKILL_FILE, f"{entry.name}/{inner.name}"


def _folders(path: Path) -> list[Path]:
    try:
        found = [p for p in path.iterdir() if not p.name.startswith(".") and p.name not in EXCLUDED_DIRS]
    except OSError:
        return []
    return sorted(p for p in found if p.is_dir())


def _problem(skill_file: Path, name: str) -> str | None:
    try:
        if skill_file.stat().st_size > 4 * MAX_SKILL_CHARS:
            return f"SKILL.md is {skill_file.stat().st_size:,} bytes; the limit is {MAX_SKILL_CHARS:,} characters"
        parse_skill(name, skill_file.read_text(encoding="utf-8", errors="replace"))
    except OSError as exc:
        return f"cannot be read: {exc.strerror or exc}"
    except SkillError as exc:
        return str(exc)
    return None


def add_commands(commands: Any, common: argparse.ArgumentParser) -> None:
    """The `skills` command and its subcommands (``commands`` is the top-level subparsers object)."""
    skills = commands.add_parser("skills", parents=[common], help="list or show the skills sessions here can load")
    actions = skills.add_subparsers(dest="action", metavar="action", required=True)
    listing = actions.add_parser("list", parents=[common], help="name, source and description of each skill")
    show = actions.add_parser("show", parents=[common], help="one skill's SKILL.md and its files")
    show.add_argument("name", help="the skill's name, or category/name")
    for parser in (listing, show):
        parser.add_argument("--json", action="store_true", help="machine-readable output")


def run_skills(args: argparse.Namespace) -> int:
    paths = paths_from_env()
    cwd = Path.cwd()
    store = skill_store(paths, settings_or_defaults(paths), cwd)
    if args.action == "list":
        return _list(store, cwd, args.json)
    return _show(store, cwd, args.name, args.json)


def _list(store: SkillStore, cwd: Path, as_json: bool) -> int:
    skills = store.skills()
    if as_json:
        print(json.dumps([_summary(info, store, cwd) for info in skills], indent=2, ensure_ascii=False))
        return 0
    if not skills:
        folders = ", ".join(str(path) for path in (store.root, *store.external))
        print(f"No skills. Looked in: {folders}.")
    width = max((len(info.qualified_name) for info in skills), default=0)
    for info in skills:
        description = info.description
        if len(description) > _DESCRIPTION_CHARS:
            description = description[: _DESCRIPTION_CHARS - 1].rstrip() + "…"
        print(f"{info.qualified_name:<{width}}  {source_of(info, store, cwd):<8}  {description}")
    left_out = [skill.name for skill in broken_skills(store, skills) if not skill.listed]
    if left_out:  # a skill that is silently missing looks like a bug of ours: name it, doctor says why
        print(f"Not listed, as {'it does' if len(left_out) == 1 else 'they do'} not load: {', '.join(left_out)} "
              "(`acp-hermes doctor` says why).", file=sys.stderr)
    return 0


def _summary(info: SkillInfo, store: SkillStore, cwd: Path) -> dict[str, Any]:
    return {"name": info.qualified_name, "category": info.category, "description": info.description,
            "source": source_of(info, store, cwd), "path": str(info.path), "read_only": info.read_only}


def _show(store: SkillStore, cwd: Path, name: str, as_json: bool) -> int:
    try:
        view = store.view(name, SKILL_FILE)
    except SkillError as exc:
        known = {n for info in store.skills() for n in (info.name, info.qualified_name)}
        message = str(exc) if name in known else f"no skill named {name!r} (see `acp-hermes skills list`)"
        print(f"acp-hermes: {message}", file=sys.stderr)
        return 1
    info = view.info
    if as_json:
        print(json.dumps({**_summary(info, store, cwd), "version": view.version, "tags": list(view.tags),
                          "related_skills": list(view.related_skills), "skill_md": view.text,
                          "files": list(view.files)}, indent=2, ensure_ascii=False))
        return 0
    print(f"{info.qualified_name} ({source_of(info, store, cwd)}): {info.skill_file}\n")
    print(view.text.rstrip("\n"))
    print(f"\nFiles: {len(view.files)}" if view.files else "\nFiles: none besides SKILL.md")
    for file in view.files:
        print(f"  {file}")
    return 0
