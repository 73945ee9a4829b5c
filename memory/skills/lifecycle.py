"""Active, stale, archived: how skills the agent created age, and the daily run that moves them.

Only skills the agent created move (``created_by: agent`` in the usage sidecar, in the home
folder): the user's own skills, external folders' and a project's never do, and a pinned skill
never does. Age is counted from a skill's last activity (its creation, last use, view, patch or
restore): after ``stale_after_days`` it is stale (still listed, marked so, active again once used);
after ``archive_after_days`` it is moved to ``.archive/`` (never deleted; ``restore`` brings it
back). The same records, time and thresholds always give the same moves.

``run_daily`` runs this at most once a day for a ``HERMES_HOME`` (the time of the last run is kept
in a state file, checked and written under its lock, so of several processes starting together
one runs it) and says what moved, for the chat to announce once.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path

from acp_hermes_memory.fs import exclusive_lock, lock_path_for, write_text_exactly
from acp_hermes_memory.skills.clock import DAY_SECONDS, iso, parse_iso
from acp_hermes_memory.skills.records import SkillError, SkillStatus
from acp_hermes_memory.skills.store import SkillStore
from acp_hermes_memory.skills.usage import Records
from acp_hermes_memory.text import counted
from acp_hermes_memory.values import value


@value
class Transition:
    name: str
    to: str  # stale, archived or active
    idle_days: int


@value
class Outcome:
    """What a run moved."""

    stale: tuple[str, ...] = ()
    archived: tuple[str, ...] = ()
    reactivated: tuple[str, ...] = ()

    def announcement(self, stale_after_days: int, archive_after_days: int) -> str:
        """The chat's one notice of it ("" when nothing the user should hear of moved)."""
        lines = []
        if self.stale:
            lines.append(f"{counted(len(self.stale), 'skill')} went stale (unused for {stale_after_days} days): "
                         f"{_names(self.stale)}. Still listed; using one makes it active again, `/skills pin NAME` "
                         "keeps it from aging.")
        if self.archived:
            lines.append(f"{counted(len(self.archived), 'skill')} archived (unused for {archive_after_days} days): "
                         f"{_names(self.archived)} — `/skills restore NAME` brings one back.")
        return "\n".join(lines)


def movable(status: SkillStatus) -> bool:
    """Whether the lifecycle may move this skill: the agent created it, it is in the home folder, unpinned."""
    return status.created_by == "agent" and status.info.origin == "home" and not status.pinned


def idle_days(status: SkillStatus, now: float) -> int:
    """Whole days since the skill's last activity (its SKILL.md's mtime when the record has no time)."""
    since = status.usage.last_activity
    if since is None:
        try:
            since = os.stat(status.info.skill_file).st_mtime
        except OSError:
            since = now
    return max(0, int((now - since) // DAY_SECONDS))


def plan(statuses: Sequence[SkillStatus], now: float, stale_after_days: int,
         archive_after_days: int) -> list[Transition]:
    """The moves due at ``now``, in the order of ``statuses``."""
    moves = []
    for status in statuses:
        if not movable(status):
            continue
        idle = idle_days(status, now)
        if idle >= archive_after_days:
            moves.append(Transition(status.info.name, "archived", idle))
        elif idle >= stale_after_days:
            if status.state != "stale":
                moves.append(Transition(status.info.name, "stale", idle))
        elif status.state == "stale":
            moves.append(Transition(status.info.name, "active", idle))
    return moves


def carry_out(store: SkillStore, moves: Sequence[Transition], *, by: str = "lifecycle") -> Outcome:
    """Make ``moves``: states in the sidecar, archives by moving folders (recorded in the history as ``by``'s)."""
    states = {move.name: move.to for move in moves if move.to != "archived"}
    if states:
        def edit(records: Records) -> bool:
            for name, state in states.items():
                if name in records:
                    records[name]["state"] = state
            return True

        store.usage.file.change(edit)
    archived = []
    mover = store.with_author(by)
    for move in moves:
        if move.to == "archived":
            try:
                mover.archive(move.name, note=f"Archived {move.name}: unused for {move.idle_days} days.")
            except (SkillError, OSError):
                continue  # gone meanwhile, or taken by a name clash: the next run sees it again
            archived.append(move.name)
    return Outcome(tuple(m.name for m in moves if m.to == "stale"), tuple(archived),
                   tuple(m.name for m in moves if m.to == "active"))


def prune(store: SkillStore, days: int, *, dry_run: bool = False) -> list[Transition]:
    """Archive now every skill the agent created that has been unused for ``days`` (pinned ones stay)."""
    store.usage.flush()
    now = store.clock()
    moves = [Transition(s.info.name, "archived", idle) for s in store.statuses()
             if movable(s) and (idle := idle_days(s, now)) >= days]
    if not dry_run:
        done = carry_out(store, moves, by=store.author).archived
        moves = [move for move in moves if move.name in done]
    return moves


def run_daily(store: SkillStore, state_file: Path, stale_after_days: int, archive_after_days: int) -> Outcome | None:
    """The lifecycle run, when the last one was a day ago or more (None: not due). Blocking."""
    now = store.clock()
    with exclusive_lock(lock_path_for(state_file)):
        last = parse_iso(_read_state(state_file).get("last_run_at"))
        if last is not None and 0 <= now - last < DAY_SECONDS:
            return None
        store.usage.flush()  # this process's uses count before anything ages
        outcome = carry_out(store, plan(store.statuses(), now, stale_after_days, archive_after_days))
        text = json.dumps({"last_run_at": iso(now)})
        write_text_exactly(Path(os.path.realpath(state_file)), text, private=True)
    return outcome


def _read_state(path: Path) -> dict[str, object]:
    try:
        loaded = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return loaded if isinstance(loaded, dict) else {}


def _names(names: Sequence[str]) -> str:
    shown = ", ".join(f"`{name}`" for name in names[:8])
    return shown + (f" and {len(names) - 8} more" if len(names) > 8 else "")
