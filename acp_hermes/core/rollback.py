"""``/rollback`` and the editor's rewind: put back what the agent changed since a checkpoint.

The files put back are those the agent changed since checkpoint ``n`` (its ledger, see
``core.checkpoints``) that differ from ``n`` now, each as it was at ``n``. A file the user changed
by hand after the agent last wrote it is listed and left alone unless the user includes it
(``--include-edited``). Before anything changes the user sees one tool call with a diff per file
and, in ``default`` mode, one question asked like for an edit: restore (exactly what the command
said) or keep things as they are. What ``--conversation`` and ``--include-edited`` would add is said
in the question's text, never offered as a second way to allow: a client may show options only by
their kind, and two "allow" options would look alike there. The restore is itself checkpointed
first (a checkpoint of kind ``restore``), so a rollback can be rolled back.
"""

from __future__ import annotations

import os
import time
import uuid
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

import anyio

from acp_hermes.core import skill_rollback
from acp_hermes.core.side_calls import SideCall
from acp_hermes.core.turn_input import FilesRolledBack
from acp_hermes_memory.text import counted, looks_binary
from acp_hermes_memory.values import value
from acp_hermes_tools.contracts import DiffDisplay, Display, FileChange, Location, PermissionDenied, TextDisplay

if TYPE_CHECKING:
    from acp_hermes.core.checkpoints import Checkpoint, SessionCheckpoints
    from acp_hermes.core.services import SessionServices
    from acp_hermes.core.state import SessionState
    from acp_hermes_tools.checkpoints import CheckpointStore, FileState

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


async def list_text(services: SessionServices) -> str:
    """``/rollback`` without an argument: the session's checkpoints, each with the files a rollback to
    it would put back (those the agent changed since that are not as they were then)."""
    checkpoints = services.checkpoints
    if not checkpoints.enabled:
        return "Checkpoints are off for this session (`checkpoints.enabled` in config.yaml, or the store failed)."
    entries = await checkpoints.entries()
    store = await checkpoints.store()
    if not entries or store is None:
        return "No checkpoints yet: one is taken before the first change of each turn that changes files."
    changes = {entry.number: sorted(await checkpoints.agent_changes(entry.number)) for entry in entries}
    everything = sorted({path for paths in changes.values() for path in paths})
    now = await anyio.to_thread.run_sync(store.states_now, everything)
    lines = ["Checkpoints (restore with `/rollback <n>`, one file with `/rollback <n> <path>`):"]
    for entry in entries:
        then = await anyio.to_thread.run_sync(store.states, entry.commit, changes[entry.number])
        differ = [path for path in changes[entry.number] if then[path] != now[path]]
        differ += sorted({f"skill {p.restore.skill}" for p in await skill_rollback.plan(services.tools, entry)})
        what = ", ".join(f"`{path}`" for path in differ[:6]) + (f" and {len(differ) - 6} more"
                                                              if len(differ) > 6 else "")
        label = "before a rollback" if entry.kind == "restore" else f"“{entry.prompt}”"
        lines.append(f"{entry.number}. {_when(entry.created_at)} — {label}"
                     + (f" · changed since: {what}" if differ else " · nothing to restore"))
    return "\n".join(lines)


async def rollback(state: SessionState, services: SessionServices, number: int, *, path: str | None = None,
                   include_edited: bool = False, conversation: bool = False, requested: bool = False,
                   dry_run: bool = False) -> RollbackResult:
    """Put back what the agent changed since checkpoint ``number`` (only ``path`` when given).

    ``conversation``: also rewind the conversation to before that checkpoint's turn. ``requested``: the
    client asked for exactly this (the rewind extension), so the mode decides without a question.
    """
    checkpoints = services.checkpoints
    only = None if path is None else _relative(state.cwd, path)
    if only == "":
        return RollbackResult(False, f"`{path}` is not a file in the workspace {state.cwd}: checkpoints keep only "
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
    files = await _plan(checkpoints, store, entry, before, only)
    chosen = [f for f in files if include_edited or path is not None or not f.edited]
    skills = await skill_rollback.plan(services.tools, entry) if only is None else []
    skills_chosen = [s for s in skills if include_edited or not s.edited]
    skipped = (*(f.path for f in files if f not in chosen), *(s.label for s in skills if s not in skills_chosen))
    can_rewind = entry.prompt_row is not None and await state.can_rewind_to(services.db, entry.prompt_row)
    rewind = conversation and can_rewind
    if dry_run or not (files or skills) or not (chosen or skills_chosen or rewind):
        await checkpoints.abandon()
        if dry_run and (files or skills):
            message = f"Would restore {_what(len(chosen), len(skills_chosen))}."
        elif files or skills:
            message = (f"Nothing to restore but your own edits: you changed {_names(skipped)} after the agent did "
                       f"(`/rollback {number} --include-edited` restores {_pronoun(skipped)} too).")
        else:
            message = f"Nothing to restore: what the agent changed since checkpoint {number} is as it was then."
        return RollbackResult(False, message, tuple(f.path for f in chosen), skipped)
    title = f"Roll back to checkpoint {number} ({_when(entry.created_at)})"
    root = state.cwd
    command = f"/rollback {number}" + (f" {path}" if path is not None else "")
    preview = await anyio.to_thread.run_sync(_preview, store, root, chosen)
    left = tuple(s.label for s in skills if s not in skills_chosen)
    shown = (*preview, *skill_rollback.preview(skills_chosen))
    display = (*shown, *_notes(command, files, chosen, rewind=rewind, can_rewind=can_rewind, undo=before.number,
                               skills_left=left))
    locations = (*(Location(str(root / f.path)) for f in chosen), *(Location(str(s.path)) for s in skills_chosen))
    async with SideCall(services.sink, services.tool_context, f"rollback-{uuid.uuid4()}", "rollback", title, "edit",
                        {"checkpoint": number, "path": path}, locations) as card:
        try:
            await card.ctx.authorize_restore([*(FileChange(root / f.path, None, None) for f in chosen),
                                              *(FileChange(s.path, None, None) for s in skills_chosen)],
                                             _allow_label(len(chosen), rewind, len(skills_chosen)), display,
                                             requested=requested, replaces_own_edits=any(
                                                 f.edited for f in chosen) or any(s.edited for s in skills_chosen))
        except PermissionDenied as refused:
            await checkpoints.abandon()
            kept = _notes(command, files, chosen, rewind=rewind, can_rewind=can_rewind, undo=None, skills_left=left)
            await card.finish(False, (*shown, *kept, TextDisplay(refused.shown)))
            return RollbackResult(False, refused.shown, refused=True)
        from acp_hermes_memory.skills import SkillError
        from acp_hermes_tools.checkpoints import CheckpointError

        try:
            report = await card.ctx.restore_files([root / f.path for f in chosen],
                                                  lambda: store.restore({f.path: f.target for f in chosen}))
            restored_skills = await skill_rollback.put_back(card.ctx, skills_chosen, number)
        except (CheckpointError, SkillError, OSError) as failure:  # each file is before or after, said so
            await checkpoints.end()
            await card.finish(False, display)
            return RollbackResult(False, f"The restore failed: {failure}. Files it did not reach are unchanged; "
                                  "`/rollback` lists the checkpoints.", refused=True)
        after = await checkpoints.end()
        rewound = None
        if rewind and entry.prompt_row is not None:
            from acp_hermes.core.truncation import cut_conversation

            rewound = (await cut_conversation(state, services, entry.prompt_row)).dropped
        failed = tuple(failure[0] for failure in report.failed)
        restored = tuple(p for p in (*report.written, *report.deleted))
        await card.finish(not (failed and not restored and not restored_skills and rewound is None), display)
    skill_names = tuple(f"skill {name}" for name in restored_skills)
    state.notes.append(FilesRolledBack(number, (*restored, *skill_names), rewound is not None))  # the next prompt
    summary = _summary(number, report.written, report.deleted, skipped, failed, rewound, after)
    if restored_skills:
        summary = "\n".join([f"Restored {counted(len(restored_skills), 'skill')} to checkpoint {number}: "
                              f"{_names(tuple(restored_skills))}.", summary]).strip()
    return RollbackResult(True, summary, (*restored, *skill_names), skipped, failed, rewound)


def _allow_label(files: int, rewind: bool, skills: int = 0) -> str:
    """The one way to allow: what exactly it does."""
    if not files and not skills:
        return "Rewind the conversation"
    return f"Restore {_what(files, skills)}" + (" and rewind the conversation" if rewind else "")


def _what(files: int, skills: int) -> str:
    """"2 files", "1 skill file", "2 files and 1 skill file"."""
    parts = [counted(files, "file")] if files or not skills else []
    return " and ".join([*parts, *([counted(skills, "skill file")] if skills else [])])


def _notes(command: str, files: list[FilePlan], chosen: list[FilePlan], *, rewind: bool, can_rewind: bool,
           undo: int | None, skills_left: tuple[str, ...] = ()) -> tuple[Display, ...]:
    """The question's text beyond the diffs: what stays as it is and the flag that would include it,
    what the answer includes that the agent did not write last, and how to undo the restore (``undo``
    None: a declined restore, whose checkpoint is dropped, so there is nothing to undo)."""
    lines = []
    left = [f.path for f in files if f not in chosen] + list(skills_left)
    if left:
        lines.append(f"Left as {'it is' if len(left) == 1 else 'they are'} (you changed {_pronoun(left)} after "
                     f"the agent did): {_names(tuple(left))}. `{command} --include-edited` restores {_pronoun(left)} "
                     "too.")
    mine = [f.path for f in chosen if f.edited]
    if mine:
        lines.append(f"Your own later changes to {_names(tuple(mine))} are replaced too (you asked for "
                     f"{_pronoun(mine)}).")
    if rewind:
        lines.append("The conversation is rewound to just before that checkpoint's turn as well.")
    elif can_rewind:
        lines.append(f"The conversation stays as it is: `{command} --conversation` also rewinds it to just before "
                     "that checkpoint's turn.")
    if undo is not None:
        lines.append(f"The files as they are now are kept as checkpoint {undo}: `/rollback {undo}` undoes this.")
    return (TextDisplay("\n".join(lines)),) if lines else ()


def _pronoun(paths: tuple[str, ...] | list[str]) -> str:
    return "it" if len(paths) == 1 else "them"


async def _plan(checkpoints: SessionCheckpoints, store: CheckpointStore, entry: Checkpoint, before: Checkpoint,
                only: str | None) -> list[FilePlan]:
    agent = await checkpoints.agent_changes(entry.number, now=before.commit)
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


def _preview(store: CheckpointStore, root: Path, chosen: list[FilePlan]) -> tuple[Display, ...]:
    """A diff per file put back (now → then: deletions and re-creations too); blocking: reads the
    blobs, all through one git process."""
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
    return tuple(shown)


def _text(contents: dict[str, bytes], state: FileState) -> str | None:
    """A blob as text for a diff; "" for an absent file; None when binary, a symlink or too big."""
    if state.blob is None:
        return ""
    data = contents.get(state.blob)
    if data is None or len(data) > SHOWN_BYTES or looks_binary(data):
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def _summary(number: int, written: tuple[str, ...], deleted: tuple[str, ...], skipped: tuple[str, ...],
             failed: tuple[str, ...], rewound: int | None, after: Checkpoint | None) -> str:
    """The reply: what was put back, what was deleted (it did not exist then), what was left and why."""
    lines = []
    if written:
        lines.append(f"Restored {counted(len(written), 'file')} to checkpoint {number}: {_names(written)}.")
    if deleted:
        lines.append(f"Deleted {counted(len(deleted), 'file')} that did not exist at checkpoint {number}: "
                     f"{_names(deleted)}.")
    if skipped:
        lines.append(f"Kept {counted(len(skipped), 'file')} you edited after the agent did: {_names(skipped)} "
                     f"(`/rollback {number} --include-edited` restores "
                     f"{_pronoun(skipped)} too, `/rollback {number} <path>` one of {_pronoun(skipped)}).")
    if failed:
        lines.append(f"Could not restore {counted(len(failed), 'file')}: {_names(failed)} (see the log).")
    if rewound is not None:
        lines.append(f"The conversation is rewound to before that turn ({counted(rewound, 'message')} set aside; "
                     "`session_search` still finds them).")
    if after is not None:
        lines.append(f"`/rollback {after.number}` undoes this rollback.")
    return "\n".join(lines)


def _names(paths: tuple[str, ...]) -> str:
    return ", ".join(f"`{p}`" for p in paths[:10]) + (f" and {len(paths) - 10} more" if len(paths) > 10 else "")


def _when(created_at: float) -> str:
    moment = datetime.fromtimestamp(created_at)
    return moment.strftime("%H:%M:%S" if time.time() - created_at < 86_400 else "%Y-%m-%d %H:%M")
