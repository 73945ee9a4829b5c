"""What ``/rollback`` puts back in the skills: the agent's changes to skill files since a checkpoint.

Skills live in ``$HERMES_HOME``, outside the workspace the checkpoint store keeps, so a rollback
asks the skills history instead: each checkpoint kept the history's mark when it was taken
(``Checkpoint.skills_mark``), and the changes this session's agent made after it (its turns, its
reviews, its curation pass, and the rollbacks it was asked for) are what goes back. Each file is
put back as it was before the first of those changes; one the user changed since the agent last
wrote it is left alone unless included, as workspace files are. The plan joins the workspace's in
the rollback's one question; the restore writes through the store (its lock, its history).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import anyio

from acp_hermes_memory.skills import FileRestore, SkillStore
from acp_hermes_memory.skills.history import AGENT_AUTHORS
from acp_hermes_memory.values import value
from acp_hermes_tools.contracts import DiffDisplay, Display

if TYPE_CHECKING:
    from acp_hermes.core.checkpoints import Checkpoint
    from acp_hermes_tools.context import ToolContext, ToolScope


@value
class SkillFilePlan:
    """One skill file a rollback would put back."""

    restore: FileRestore  # as it was at the checkpoint (text None: it did not exist)
    path: Path  # where it is
    current: str | None  # as it is now (None: it does not exist)
    edited: bool  # changed by someone else after the agent last wrote it

    @property
    def label(self) -> str:
        return f"skill {self.restore.skill} ({self.restore.path})"


async def plan(tools: ToolScope, checkpoint: Checkpoint) -> list[SkillFilePlan]:
    """The skill files the agent changed since ``checkpoint`` that are not as they were then (those
    of the session ``tools`` serves)."""
    store = tools.services.skills
    if store is None or store.history is None or checkpoint.skills_mark is None:
        return []
    return await anyio.to_thread.run_sync(_plan, store, tools.session_id, checkpoint.skills_mark)


def _plan(store: SkillStore, session_id: str, mark: int) -> list[SkillFilePlan]:
    assert store.history is not None
    entries = [e for e in store.history.entries(since=mark)
               if e.session == session_id and (e.by in AGENT_AUTHORS or e.action == "rollback") and e.files]
    first: dict[tuple[str, str], FileRestore] = {}
    last: dict[tuple[str, str], str | None] = {}
    for entry in entries:
        for version in entry.files:
            key = (entry.directory, version.path)
            first.setdefault(key, FileRestore(entry.skill, entry.directory, version.path, version.old))
            last[key] = version.new
    plans = []
    for key, restore in first.items():
        found = store.current_text(restore.directory, restore.path)
        if found is None:
            continue  # the skill is archived now, or its path is no longer a plain file in the store
        path, current = found
        if current != restore.text:
            plans.append(SkillFilePlan(restore, path, current, current != last[key]))
    return plans


def preview(plans: list[SkillFilePlan]) -> tuple[Display, ...]:
    """A diff per skill file put back (now → then)."""
    return tuple(DiffDisplay(str(p.path), p.current, p.restore.text or "") for p in plans)


async def put_back(ctx: ToolContext, plans: list[SkillFilePlan], number: int) -> list[str]:
    """Write ``plans`` through the store (the gate allowed them with the rollback); the skills restored."""
    store = ctx.scope.services.skills
    if store is None or not plans:
        return []
    mover = store.with_author("user")
    restores = [p.restore for p in plans]
    session_id = ctx.scope.session_id
    await ctx.restore_files([p.path for p in plans],
                            lambda: mover.put_back(restores, session=session_id, note=f"/rollback {number}"))
    return sorted({p.restore.skill for p in plans})
