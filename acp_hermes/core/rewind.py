"""The editor's rewind: the points a conversation can go back to, and going back to one.

A rewind point is a prompt of the conversation (a model turn's), named by the client's ``messageId``
when it sent one and otherwise by the id its replay shows (``user-<row>``), with a fingerprint of its
text for clients whose ids changed. Going back to it can put back the files (what the agent changed
since that prompt: the first checkpoint taken at or after it, see ``core.rollback``), the
conversation (to just before that prompt) or both. The shapes on the wire are the adapter's.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import TYPE_CHECKING, Literal

import anyio

from acp_hermes.core.errors import InvalidInput
from acp_hermes.core.rollback import RollbackResult, rollback
from acp_hermes.core.transcript import is_steer, prompt_message_id
from acp_hermes_memory.values import value

if TYPE_CHECKING:
    from acp_hermes.core.services import SessionServices
    from acp_hermes.core.state import SessionState
    from acp_hermes_memory.session_db import MessageRecord

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
        display = row.display if isinstance(row.display, dict) else {}
        later = [entry.number for entry in entries if (entry.prompt_row or 0) >= row.id]
        points.append(RewindPoint(
            index=len(points) + 1, message_id=str(display.get("client_message_id") or prompt_message_id(row.id)),
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
            dropped = await state.rewind_conversation(services.db, point.prompt_row)
    return RewindOutcome(not dry_run, None, files, dropped)


def _prompts(rows: Sequence[MessageRecord]) -> list[MessageRecord]:
    """The rows that began a model turn: a prompt the model saw (a slash command's was not)."""
    return [row for row in rows if row.role == "user" and row.payload and isinstance(row.display, dict)
            and "prompt" in row.display and not is_steer(row)]
