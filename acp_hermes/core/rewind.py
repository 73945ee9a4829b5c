"""The editor's rewind: the points a conversation can go back to, and going back to one; where a
message is in the conversation (a fork at a message, ``session/rewind``, ``session/edit_prompt``).

A rewind point is a prompt of the conversation (a model turn's), named by the client's ``messageId``
when it sent one and otherwise by the id its replay shows (``user-<row>``), with a fingerprint of its
text for clients whose ids changed. Going back to it can put back the files (what the agent changed
since that prompt: the first checkpoint taken at or after it, see ``core.rollback``), the
conversation (to just before that prompt) or both. The shapes on the wire are the adapter's.

A message is named by the ``messageId`` its chunks carried (``transcript.stored_message_id``); a cut
at a model message keeps the results of its tool calls, so the history stays one the API accepts.
Every way of taking messages out of the conversation goes through ``cut_conversation``.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Literal

import anyio

from acp_hermes.core.errors import InvalidInput
from acp_hermes.core.rollback import RollbackResult, rollback
from acp_hermes.core.transcript import is_steer, stored_message_id
from acp_hermes.core.truncation import Truncation, cut_conversation
from acp_hermes_memory.values import value

if TYPE_CHECKING:
    from acp_hermes.core.checkpoints import Checkpoint
    from acp_hermes.core.services import SessionServices
    from acp_hermes.core.state import SessionState
    from acp_hermes_memory.session_db import MessageRecord, SessionDB

RewindMode = Literal["files", "conversation", "both"]


@value
class RewindPoint:
    index: int  # 1: the conversation's first prompt
    message_id: str
    fingerprint: str  # "sha256:<hex>" of the prompt's text
    occurrence: int  # how many prompts up to this one have the same text
    text: str
    created_at: float
    prompt_row: int
    checkpoint: int | None  # the checkpoint the files go back to; None: the agent changed nothing since
    conversation: bool  # the conversation can go back there (no compaction summarised it since)


@value
class RewindOutcome:
    rewound: bool
    reason: str | None = None  # why not (or what was only partly done)
    files: RollbackResult | None = None
    messages_dropped: int | None = None  # None: the conversation was not (or would not be) rewound


@value
class MessagePoint:
    """A message to cut the conversation at: by its id, or (AIR's form) by a prompt's fingerprint and
    which of the prompts with that text it is, for a client whose ids changed."""

    message_id: str
    fingerprint: str | None = None
    occurrence: int = 1


@value
class Located:
    """Where a message is: its row in the conversation's current segment and the last row it keeps."""

    message_id: str
    row: int
    last_row: int  # the message's own row, or the last result of its tool calls
    role: str  # "user" or "assistant"


_ROW_NAMED = re.compile(r"(?:user|agent)-(\d+)")  # ids of rows stored before messages kept their own


def locate(db: SessionDB, session_id: str, point: MessagePoint) -> Located:
    """The message ``point`` names in the conversation of ``session_id`` as it is now (blocking).
    InvalidInput when it names none, or one a compaction has since summarised."""
    segment = db.segments(session_id)[-1].id
    legacy = _ROW_NAMED.fullmatch(point.message_id)
    found = db.message_named(segment, point.message_id, ("client_message_id", "message_id"),
                             int(legacy.group(1)) if legacy else None)
    earlier = False  # named by a message only a segment a compaction ended holds
    if found is None:
        rows = db.conversation(session_id)
        earlier = any(stored_message_id(row) == point.message_id for row in rows if row.session_id != segment)
        if not earlier and point.fingerprint is not None:
            prompts = [row for row in _prompts(rows) if fingerprint(row.content) == point.fingerprint]
            row = prompts[point.occurrence - 1] if 0 < point.occurrence <= len(prompts) else None
            if row is not None and row.session_id == segment:
                found = (row.id, row.role)
            earlier = row is not None and row.session_id != segment
    if found is None:
        if earlier:
            raise InvalidInput(f"message {point.message_id!r} was summarised by a compaction since: the "
                               "conversation can no longer be cut there")
        raise InvalidInput(f"message {point.message_id!r} is not a message of session {session_id}")
    row_id, role = found
    return Located(point.message_id, row_id, db.message_end(segment, row_id), role)


def fingerprint(text: str) -> str:
    return "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()


async def rewind_points(state: SessionState, services: SessionServices) -> list[RewindPoint]:
    rows = await anyio.to_thread.run_sync(services.db.conversation, state.id)
    entries = [entry for entry in await services.checkpoints.entries() if entry.prompt_row is not None]
    current = state.transcript.session_id
    points: list[RewindPoint] = []
    seen: dict[str, int] = {}
    for row in _prompts(rows):
        mark = fingerprint(row.content)
        seen[mark] = seen.get(mark, 0) + 1
        later = [entry.number for entry in entries if (entry.prompt_row or 0) >= row.id]
        points.append(RewindPoint(
            index=len(points) + 1, message_id=stored_message_id(row),
            fingerprint=mark, occurrence=seen[mark], text=row.content, created_at=row.timestamp,
            prompt_row=row.id, checkpoint=later[0] if later else None, conversation=row.session_id == current,
        ))
    return points


async def rewind(state: SessionState, services: SessionServices, message_id: str | None, *,
                 fingerprint_text: str | None = None, occurrence: int = 1, mode: RewindMode = "conversation",
                 dry_run: bool = False, include_edited: bool = False) -> RewindOutcome:
    """Go back to just before the prompt named ``message_id`` (or by its fingerprint and occurrence)."""
    points = await rewind_points(state, services)
    point = next((p for p in points if message_id is not None and p.message_id == message_id), None)
    if point is None and fingerprint_text is not None:
        matching = [p for p in points if p.fingerprint == fingerprint_text]
        point = matching[occurrence - 1] if 0 < occurrence <= len(matching) else None
    if point is None:
        raise InvalidInput(f"message {message_id!r} is not a prompt of session {state.id}; "
                           "`_session/rewind_points` lists them")
    if mode in ("conversation", "both") and not point.conversation:
        return RewindOutcome(False, "compacted: the conversation was summarised after that message, so it "
                                    "cannot go back there (the files still can: mode \"files\")")
    files = None
    if mode in ("files", "both") and point.checkpoint is not None:
        files = await rollback(state, services, point.checkpoint, include_edited=include_edited, requested=True,
                               dry_run=dry_run)
        if files.refused:
            return RewindOutcome(False, files.message, files)
    dropped = None
    if mode in ("conversation", "both"):
        if dry_run:
            rows = await anyio.to_thread.run_sync(services.db.messages, state.transcript.session_id)
            dropped = sum(1 for row in rows if row.id >= point.prompt_row)
        else:
            dropped = (await cut_conversation(state, services, point.prompt_row)).dropped
    return RewindOutcome(not dry_run, None, files, dropped)


def _prompts(rows: Sequence[MessageRecord]) -> list[MessageRecord]:
    """The rows that began a model turn: a prompt the model saw (a slash command's was not)."""
    return [row for row in rows if row.role == "user" and row.payload and isinstance(row.display, dict)
            and "prompt" in row.display and not is_steer(row)]


async def rewind_to_message(state: SessionState, services: SessionServices, point: MessagePoint, *,
                            keep: bool) -> tuple[Located, Truncation]:
    """Cut the conversation at the message ``point`` names: after it (``keep``: ``session/rewind``,
    inclusive) or just before it (``session/edit_prompt``, whose prompt runs again edited)."""
    located = await anyio.to_thread.run_sync(locate, services.db, state.id, point)
    if not keep and located.role != "user":
        raise InvalidInput(f"message {point.message_id!r} is not a prompt: only a prompt can be edited")
    return located, await cut_conversation(state, services, located.last_row + 1 if keep else located.row)


def rollback_for(entries: Sequence[Checkpoint], last_row: int) -> int | None:
    """The checkpoint ``/rollback`` would take the files back to for a conversation cut after row
    ``last_row``: the first one a later turn took (None: the agent changed no file since)."""
    later = [entry.number for entry in entries if entry.prompt_row is not None and entry.prompt_row > last_row]
    return later[0] if later else None
