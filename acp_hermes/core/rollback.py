"""``/rollback`` and the editor's rewind: put back what the agent changed since a checkpoint.

The files put back are those the agent changed since checkpoint ``n`` (its ledger, see
``core.checkpoints``), each as it was at ``n``. A file the user changed by hand after the agent last
wrote it is listed and left alone unless the user includes it. Before anything changes the user sees
one tool call with a diff per file and, in ``default`` mode, is asked like for an edit — with a second
way to allow that also rewinds the conversation to just before that checkpoint's turn. The restore
is itself checkpointed first (a checkpoint of kind ``restore``), so a rollback can be rolled back.
"""

from __future__ import annotations

import os
import time
import uuid
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

import anyio

from acp_hermes.core.events import ToolCallFinished, ToolCallStarted
from acp_hermes_memory.values import value
from acp_hermes_tools.context import RestoreChoice
from acp_hermes_tools.contracts import DiffDisplay, Display, FileChange, Location, PermissionDenied, TextDisplay

if TYPE_CHECKING:
    from acp_hermes.core.checkpoints import Checkpoint
    from acp_hermes.core.session import Session
    from acp_hermes_tools.checkpoints import CheckpointStore, FileState

RESTORE = "restore"
RESTORE_AND_REWIND = "restore_and_rewind"
RESTORE_ALL = "restore_all"
SHOWN_BYTES = 256 * 1024  # a file bigger than this is named in the preview, not diffed
SYMLINK = "120000"  # a link's target is shown as a note, not diffed


@value
class FilePlan:
    """One file a rollback would put back."""

    path: str  # relative to the workspace
    target: FileState  # as at the checkpoint (blob None: it did not exist)
    current: FileState  # as it is now
    edited: bool  # the user changed it after the agent last wrote it


@value
class RollbackResult:
    """What a rollback did (or, on a dry run, would do)."""

    done: bool
    message: str
    restored: tuple[str, ...] = ()
    skipped: tuple[str, ...] = ()  # edited by the user, left as they are
    failed: tuple[str, ...] = ()
    rewound_messages: int | None = None  # None: the conversation was not rewound
    refused: bool = False  # it could not be done (no such checkpoint, store off, the user said no)


async def list_text(session: Session) -> str:
    """``/rollback`` without an argument: the session's checkpoints."""
    checkpoints = session.checkpoints
    if not checkpoints.enabled:
        return "Checkpoints are off for this session (`checkpoints.enabled` in config.yaml, or the store failed)."
    entries = await checkpoints.entries()
    if not entries:
        return "No checkpoints yet: one is taken before the first change of each turn that changes files."
    lines = ["Checkpoints (restore with `/rollback <n>`, one file with `/rollback <n> <path>`):"]
    for entry in entries:
        changed = sorted(await checkpoints.agent_changes(entry.number))
        what = ", ".join(f"`{path}`" for path in changed[:6]) + (f" and {len(changed) - 6} more"
                                                               if len(changed) > 6 else "")
        label = "before a rollback" if entry.kind == "restore" else f"“{entry.prompt}”"
        lines.append(f"{entry.number}. {_when(entry.created_at)} — {label}"
                     + (f" · changed since: {what}" if changed else " · nothing changed since"))
    return "\n".join(lines)


async def rollback(session: Session, number: int, *, path: str | None = None, include_edited: bool = False,
                   conversation: bool = False, requested: bool = False, dry_run: bool = False) -> RollbackResult:
    """Put back what the agent changed since checkpoint ``number`` (only ``path`` when given).

    ``conversation``: also rewind the conversation to before that checkpoint's turn. ``requested``: the
    client asked for exactly this (the rewind extension), so the mode decides without a question.
    """
    checkpoints = session.checkpoints
    only = None if path is None else _relative(session.cwd, path)
    if only == "":
        return RollbackResult(False, f"`{path}` is not a file in the workspace {session.cwd}: checkpoints keep only "
                              "the workspace's files, so nothing was restored.", refused=True)
    entry = await checkpoints.get(number)
    store = await checkpoints.store()
    if entry is None or store is None:
        return RollbackResult(False, f"There is no checkpoint {number}; `/rollback` lists them."
                              if store is not None else "Checkpoints are off for this session.", refused=True)
    checkpoints.begin(f"/rollback {number}", lambda: None, kind="restore")
    before = await checkpoints.take()
    if before is None:
        return RollbackResult(False, "Could not take a checkpoint of the workspace first, so nothing was restored.",
                              refused=True)
    files = await _plan(session, store, entry, before, only)
    chosen = [f for f in files if include_edited or path is not None or not f.edited]
    skipped = tuple(f.path for f in files if f not in chosen)
    rewind_possible = entry.prompt_row is not None and await session.can_rewind_to(entry.prompt_row)
    if dry_run or not files:
        await checkpoints.abandon()
        message = (f"Nothing to roll back: what the agent changed since checkpoint {number} is as it was then."
                   if not files else f"Would restore {len(chosen)} file(s).")
        return RollbackResult(False, message, tuple(f.path for f in chosen), skipped)
    call_id = f"rollback-{uuid.uuid4()}"
    title = f"Roll back to checkpoint {number} ({_when(entry.created_at)})"
    root = session.cwd
    display = await anyio.to_thread.run_sync(_preview, store, root, files, chosen)
    await session.emit(ToolCallStarted(call_id, "rollback", title, "edit", {"checkpoint": number, "path": path},
                                       tuple(Location(str(root / f.path)) for f in files)))
    ctx = session.tool_context(call_id, title)
    choices = [RestoreChoice(RESTORE, f"Restore {len(chosen)} file(s)" if chosen else "Restore nothing")]
    if rewind_possible and not conversation:
        choices.append(RestoreChoice(RESTORE_AND_REWIND, "Restore and rewind the conversation to before that turn"))
    edited = [f for f in files if f.edited and f not in chosen]
    if edited:
        choices.append(RestoreChoice(RESTORE_ALL, f"Restore, including the {len(edited)} file(s) you edited"))
    try:
        answer = await ctx.authorize_restore(
            [FileChange(root / f.path, None, None) for f in files], choices, display, requested=requested)
    except PermissionDenied as refused:
        await checkpoints.abandon()
        await session.emit(ToolCallFinished(call_id, "failed", display))
        return RollbackResult(False, f"Rollback not done: {refused}", refused=True)
    if answer == RESTORE_ALL:
        chosen, skipped = list(files), ()
    conversation = conversation or answer == RESTORE_AND_REWIND
    from acp_hermes_tools.checkpoints import CheckpointError

    try:
        report = await ctx.restore_files([root / f.path for f in chosen],
                                         lambda: store.restore({f.path: f.target for f in chosen}))
    except CheckpointError as failure:  # the store broke under it: each file is before or after, said so
        await checkpoints.end()
        await session.emit(ToolCallFinished(call_id, "failed", display))
        return RollbackResult(False, f"The restore failed: {failure}. Files it did not reach are unchanged; "
                              "`/rollback` lists the checkpoints.", refused=True)
    after = await checkpoints.end()
    rewound = None
    if conversation and entry.prompt_row is not None and rewind_possible:
        rewound = await session.rewind_conversation(entry.prompt_row)
    failed = tuple(failure[0] for failure in report.failed)
    restored = tuple(p for p in (*report.written, *report.deleted))
    await session.emit(ToolCallFinished(call_id, "failed" if failed and not restored else "completed", display))
    session.note_for_model(_model_note(number, restored, rewound is not None))
    return RollbackResult(True, _summary(number, restored, skipped, failed, rewound, after), restored, skipped,
                          failed, rewound)


async def _plan(session: Session, store: CheckpointStore, entry: Checkpoint, before: Checkpoint,
                only: str | None) -> list[FilePlan]:
    agent = await session.checkpoints.agent_changes(entry.number, now=before.commit)
    paths = sorted(agent) if only is None else [only]
    target = await anyio.to_thread.run_sync(store.states, entry.commit, paths)
    current = await anyio.to_thread.run_sync(store.states, before.commit, paths)
    return [FilePlan(p, target[p], current[p], p in agent and current[p] != agent[p])
            for p in paths if target[p] != current[p]]


def _relative(root: Path, raw: str) -> str:
    """``raw`` (absolute, or relative to the workspace) as a path inside the workspace, or "" when it
    names no file in it (``..`` and absolute paths elsewhere included), so nothing outside is planned."""
    path = Path(raw).expanduser()
    relative = os.path.relpath(os.path.normpath(path if path.is_absolute() else root / path), root)
    parts = Path(relative).parts
    return "" if not parts or parts[0] in (".", "..") else Path(*parts).as_posix()


def _preview(store: CheckpointStore, root: Path, files: list[FilePlan], chosen: list[FilePlan]) -> tuple[Display, ...]:
    """A diff per file put back (now → then: deletions and re-creations too), then the files left alone
    (blocking: reads the blobs, all through one git process)."""
    contents = store.read_many(state.blob for plan in chosen for state in (plan.current, plan.target)
                               if state.blob is not None and state.mode != SYMLINK)
    shown: list[Display] = []
    for plan in chosen:
        now, then = _text(contents, plan.current), _text(contents, plan.target)
        if now is None or then is None:
            shown.append(TextDisplay(f"Restore `{plan.path}` (binary, large or a link: not shown)."))
        elif now == then and plan.current.blob is not None and plan.target.blob is not None:
            shown.append(TextDisplay(f"Restore the file mode of `{plan.path}` ({plan.target.mode})."))
        else:  # a deletion ends empty; a re-creation starts from nothing
            shown.append(DiffDisplay(str(root / plan.path), now if plan.current.blob is not None else None, then))
    left = [f.path for f in files if f not in chosen]
    if left:
        shown.append(TextDisplay("Left as they are (you changed them after the agent did): "
                                 + ", ".join(f"`{p}`" for p in left)))
    return tuple(shown)


def _text(contents: dict[str, bytes], state: FileState) -> str | None:
    """A blob as text for a diff; "" for an absent file; None when binary, a symlink or too big."""
    if state.blob is None:
        return ""
    data = contents.get(state.blob)
    if data is None or len(data) > SHOWN_BYTES or b"\0" in data[:8192]:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def _summary(number: int, restored: tuple[str, ...], skipped: tuple[str, ...], failed: tuple[str, ...],
             rewound: int | None, after: Checkpoint | None) -> str:
    lines = [f"Restored {len(restored)} file(s) to checkpoint {number}" + (f": {_names(restored)}." if restored
                                                                           else ".")]
    if skipped:
        lines.append(f"Left {len(skipped)} file(s) you edited as they are: {_names(skipped)} "
                     f"(`/rollback {number} <path>` restores one anyway).")
    if failed:
        lines.append(f"Could not restore: {_names(failed)} (see the log).")
    if rewound is not None:
        lines.append(f"The conversation is rewound to before that turn ({rewound} message(s) set aside; "
                     "`session_search` still finds them).")
    if after is not None:
        lines.append(f"`/rollback {after.number}` undoes this rollback.")
    return "\n".join(lines)


def _model_note(number: int, restored: tuple[str, ...], rewound: bool) -> str:
    what = "the conversation and " if rewound else ""
    return (f"[The user rolled back {what}these files to checkpoint {number}; they are no longer as you left them: "
            f"{', '.join(restored[:20])}{' …' if len(restored) > 20 else ''}. Read them again before editing.]")


def _names(paths: tuple[str, ...]) -> str:
    return ", ".join(f"`{p}`" for p in paths[:10]) + (f" and {len(paths) - 10} more" if len(paths) > 10 else "")


def _when(created_at: float) -> str:
    moment = datetime.fromtimestamp(created_at)
    return moment.strftime("%H:%M:%S" if time.time() - created_at < 86_400 else "%Y-%m-%d %H:%M")
