"""`acp-hermes skills pin|unpin|archive|restore|prune|history|rollback`: steering skills from a terminal.

Every change here is the user's own (the history records it as ``user``'s), made under the skills
store's lock like a session's. ``prune`` archives the skills the agent created that have gone unused
for a number of days (never the user's own, external or project skills, never a pinned one, never
deleted). ``history`` prints each recorded change of a skill with its diff, numbered: version N is
the skill after change N; ``rollback NAME [N]`` puts it back as version N was (the one before the
last change by default) and is itself recorded.
"""

from __future__ import annotations

import argparse
import json
import sys
from datetime import datetime
from typing import Any

from acp_hermes_memory.skills import SkillError, SkillStore
from acp_hermes_memory.skills.clock import iso
from acp_hermes_memory.skills.history import diff_text
from acp_hermes_memory.text import counted


def add_commands(actions: Any, common: argparse.ArgumentParser) -> None:
    """The subcommands of `skills` that change or trace skills (``actions``: its subparsers object)."""
    for action, text in (("pin", "keep a skill from ever going stale or being archived"),
                         ("unpin", "let a pinned skill age again"),
                         ("archive", "move a skill to skills/.archive/ (out of every index, never deleted)"),
                         ("restore", "bring an archived skill back")):
        parser = actions.add_parser(action, parents=[common], help=text)
        parser.add_argument("name", help="the skill's name" + (", or category/name" if action != "restore" else ""))
    prune = actions.add_parser("prune", parents=[common],
                               help="archive the skills the agent created that were unused for DAYS days")
    prune.add_argument("--days", type=int, required=True, help="unused for at least this many days")
    prune.add_argument("--dry-run", action="store_true", help="only say which skills would be archived")
    history = actions.add_parser("history", parents=[common], help="every recorded change of a skill, with diffs")
    history.add_argument("name", help="the skill's name")
    history.add_argument("--json", action="store_true", help="machine-readable output")
    rollback = actions.add_parser("rollback", parents=[common], help="put a skill back as an earlier version was")
    rollback.add_argument("name", help="the skill's name")
    rollback.add_argument("version", nargs="?", type=int,
                          help="the version to go back to (see `skills history`); default: the one before the last")


def run_care(store: SkillStore, args: argparse.Namespace) -> int:
    mine = store.with_author("user")
    try:
        if args.action in ("pin", "unpin"):
            info = mine.set_pinned(args.name, args.action == "pin")
            print(f"{'Pinned' if args.action == 'pin' else 'Unpinned'} {info.qualified_name}.")
        elif args.action == "archive":
            print(f"Archived {args.name}: moved to {mine.archive(args.name)}.")
        elif args.action == "restore":
            print(f"Restored {args.name} to {mine.restore(args.name)}.")
        elif args.action == "prune":
            return _prune(mine, args.days, args.dry_run)
        elif args.action == "history":
            return _history(mine, args.name.rpartition("/")[2], args.json)
        else:
            return _rollback(mine, args.name.rpartition("/")[2], args.version)
    except SkillError as error:
        print(f"acp-hermes: {error}", file=sys.stderr)
        return 1
    return 0


def _prune(store: SkillStore, days: int, dry_run: bool) -> int:
    from acp_hermes_memory.skills.lifecycle import prune

    if days < 1:
        print("acp-hermes: --days must be at least 1", file=sys.stderr)
        return 2
    moves = prune(store, days, dry_run=dry_run)
    if not moves:
        print(f"No skill the agent created has been unused for {days} days.")
        return 0
    verb = "Would archive" if dry_run else "Archived"
    print(f"{verb} {counted(len(moves), 'skill')}:")
    for move in moves:
        print(f"  {move.name} (unused for {move.idle_days} days)")
    return 0


def _history(store: SkillStore, name: str, as_json: bool) -> int:
    entries = store.history.entries(name) if store.history is not None else []
    if as_json:
        print(json.dumps([{"version": number, "at": iso(e.at), "by": e.by, "session": e.session, "action": e.action,
                           "folder": e.directory, "note": e.note, "diff": diff_text(e)}
                          for number, e in _numbered(entries)], indent=2, ensure_ascii=False))
        return 0
    if not entries:
        print(f"No recorded change to a skill named {name!r}.")
        return 0
    for number, entry in _numbered(entries):
        label = f"version {number}" if number is not None else "—"
        session = f", session {entry.session}" if entry.session else ""
        print(f"{label}: {datetime.fromtimestamp(entry.at):%Y-%m-%d %H:%M} {entry.action} by {entry.by}{session}"
              f" — {entry.note}")
        diff = diff_text(entry)
        if diff:
            print("".join(f"    {line}" for line in diff.splitlines(keepends=True)), end="")
    return 0


def _numbered(entries: list[Any]) -> list[tuple[int | None, Any]]:
    """Each entry with its version number: changes to files count, archive and restore do not."""
    numbered, count = [], 0
    for entry in entries:
        if entry.files:
            count += 1
        numbered.append((count if entry.files else None, entry))
    return numbered


def _rollback(store: SkillStore, name: str, version: int | None) -> int:
    changed = store.rollback(name, version)
    if not changed:
        print(f"{name} is already as that version was.")
        return 0
    entry = store.history.entries(name)[-1] if store.history is not None else None
    print(entry.note if entry is not None else f"Rolled back {name}.")
    if entry is not None:
        print(diff_text(entry), end="")
    return 0
