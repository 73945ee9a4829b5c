"""`acp-hermes skills list|show|usage`: the skills a session started in this directory can load.

The same folders a session sees (``Runtime.skills_for``): ``$HERMES_HOME/skills`` (home), the
configured ``skills_external_dirs`` (external) and the project's ``.hermes/skills`` and
``.agents/skills`` (project). Each listed with its state, pin and use (the usage sidecar); archived
and quarantined skills after them. The commands that change skills (pin, archive, history, rollback
and the rest) are ``app.skills_care_cli``'s. ``broken_skills`` is for ``doctor``: every SKILL.md
checked the way a write is, so a skill that silently drops out of the list is named with the reason.
"""

from __future__ import annotations

import argparse
import json
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
    SkillStatus,
    SkillStore,
    parse_skill,
    valid_name,
)
from acp_hermes_memory.skills.clock import iso

_DESCRIPTION_CHARS = 90


def skill_store(paths: Paths, settings: Settings, cwd: Path) -> SkillStore:
    from acp_hermes.core.runtime import Runtime

    return Runtime(settings, paths).skills_for(cwd)


def source_of(info: SkillInfo) -> str:
    """home, project or external: which kind of folder the skill comes from."""
    return info.origin


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
    for root in (store.root, *store.external, *store.project):
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
    from acp_hermes.app import skills_care_cli

    skills = commands.add_parser("skills", parents=[common],
                                 help="list, show, pin, archive, restore or roll back the skills sessions here load")
    actions = skills.add_subparsers(dest="action", metavar="action", required=True)
    listing = actions.add_parser("list", parents=[common],
                                 help="each skill with its source, state, pin, uses and last use")
    show = actions.add_parser("show", parents=[common], help="one skill's SKILL.md and its files")
    show.add_argument("name", help="the skill's name, or category/name")
    usage = actions.add_parser("usage", parents=[common], help="the usage sidecar: counts and times of every skill")
    for parser in (listing, show, usage):
        parser.add_argument("--json", action="store_true", help="machine-readable output")
    skills_care_cli.add_commands(actions, common)


def run_skills(args: argparse.Namespace) -> int:
    paths = paths_from_env()
    cwd = Path.cwd()
    store = skill_store(paths, settings_or_defaults(paths), cwd)
    if args.action == "list":
        return _list(store, args.json)
    if args.action == "show":
        return _show(store, args.name, args.json)
    if args.action == "usage":
        return _usage(store, args.json)
    from acp_hermes.app.skills_care_cli import run_care

    return run_care(store, args)


def _list(store: SkillStore, as_json: bool) -> int:
    statuses = store.statuses()
    archived = store.archived()
    quarantined = store.quarantined()
    if as_json:
        entries = [_summary(status) for status in statuses]
        entries += [{"name": skill.name, "description": skill.description, "source": "home", "state": "archived",
                     "path": str(skill.path), "read_only": False} for skill in archived]
        entries += [{"name": item.info.qualified_name, "description": item.info.description, "source": "project",
                     "state": "quarantined", "reason": item.reason, "path": str(item.info.path), "read_only": True}
                    for item in quarantined]
        print(json.dumps(entries, indent=2, ensure_ascii=False))
        return 0
    if not statuses:
        folders = ", ".join(str(path) for path in (store.root, *store.external, *store.project))
        print(f"No skills. Looked in: {folders}.")
    width = max((len(s.info.qualified_name) for s in statuses), default=0)
    for status in statuses:
        info, usage = status.info, status.usage
        description = info.description
        if len(description) > _DESCRIPTION_CHARS:
            description = description[: _DESCRIPTION_CHARS - 1].rstrip() + "…"
        last = _day(usage.last_use) or "never"
        uses = usage.use_count + usage.view_count
        print(f"{info.qualified_name:<{width}}  {source_of(info):<8}  {status.state:<6}  "
              f"{'pinned' if status.pinned else '-':<6}  {uses:>4}  {last:<10}  {description}")
    if archived:
        print(f"\nArchived (`acp-hermes skills restore NAME`): {', '.join(skill.name for skill in archived)}")
    for item in quarantined:
        print(f"Quarantined, not loaded: {item.info.qualified_name} ({item.info.path}): {item.reason}")
    left_out = [skill.name for skill in broken_skills(store, [s.info for s in statuses]) if not skill.listed]
    if left_out:  # a skill that is silently missing looks like a bug of ours: name it, doctor says why
        print(f"Not listed, as {'it does' if len(left_out) == 1 else 'they do'} not load: {', '.join(left_out)} "
              "(`acp-hermes doctor` says why).", file=sys.stderr)
    return 0


def _day(moment: float | None) -> str:
    from datetime import datetime

    return "" if moment is None else f"{datetime.fromtimestamp(moment):%Y-%m-%d}"


def _summary(status: SkillStatus) -> dict[str, Any]:
    info, usage = status.info, status.usage
    return {"name": info.qualified_name, "category": info.category, "description": info.description,
            "source": source_of(info), "path": str(info.path), "read_only": info.read_only, "state": status.state,
            "pinned": status.pinned, "created_by": status.created_by, "use_count": usage.use_count,
            "view_count": usage.view_count, "patch_count": usage.patch_count,
            "last_used_at": None if usage.last_use is None else iso(usage.last_use)}


def _usage(store: SkillStore, as_json: bool) -> int:
    """Every record of the usage sidecar (skills listed here or not), the most used first."""
    records = store.usage.file.records()
    rows = sorted(records.items(), key=lambda item: (-(item[1].use_count + item[1].view_count), item[0]))
    if as_json:
        print(json.dumps({name: {"use_count": u.use_count, "view_count": u.view_count, "patch_count": u.patch_count,
                                 "last_used_at": u.last_used_at, "last_viewed_at": u.last_viewed_at,
                                 "last_patched_at": u.last_patched_at, "created_by": u.created_by,
                                 "state": u.state, "pinned": u.pinned} for name, u in rows}, indent=2))
        return 0
    if not rows:
        print(f"No usage recorded yet ({store.usage.file.path}).")
        return 0
    width = max(len(name) for name, _ in rows)
    print(f"{'skill':<{width}}  {'uses':>4}  {'views':>5}  {'patches':>7}  {'last use':<10}  {'state':<8}  "
          f"{'pin':<6}  by")
    for name, u in rows:
        print(f"{name:<{width}}  {u.use_count:>4}  {u.view_count:>5}  {u.patch_count:>7}  "
              f"{_day(u.last_use) or 'never':<10}  {u.state:<8}  {'pinned' if u.pinned else '-':<6}  "
              f"{u.created_by or '-'}")
    return 0


def _show(store: SkillStore, name: str, as_json: bool) -> int:
    try:
        view = store.view(name, SKILL_FILE)
    except SkillError as exc:
        known = {n for info in store.skills() for n in (info.name, info.qualified_name)}
        message = str(exc) if name in known else f"no skill named {name!r} (see `acp-hermes skills list`)"
        print(f"acp-hermes: {message}", file=sys.stderr)
        return 1
    info = view.info
    if as_json:
        print(json.dumps({**_summary(store.status(info)), "version": view.version, "tags": list(view.tags),
                          "related_skills": list(view.related_skills), "skill_md": view.text,
                          "files": list(view.files)}, indent=2, ensure_ascii=False))
        return 0
    print(f"{info.qualified_name} ({source_of(info)}): {info.skill_file}\n")
    print(view.text.rstrip("\n"))
    print(f"\nFiles: {len(view.files)}" if view.files else "\nFiles: none besides SKILL.md")
    for file in view.files:
        print(f"  {file}")
    return 0
