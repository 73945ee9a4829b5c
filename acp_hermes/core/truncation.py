"""Taking the later messages out of a conversation: the one conversation half of every rewind
(``/rollback --conversation``, ``_session/rewind``, ``session/rewind``, ``session/edit_prompt``), and
what it took, as the client knows the messages (their ids)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import anyio

from acp_hermes.core.transcript import StoredPrompt, StoredReply, stored_messages
from acp_hermes_memory.values import value

if TYPE_CHECKING:
    from acp_hermes.core.services import SessionServices
    from acp_hermes.core.state import SessionState


@value
class Truncation:
    """What a cut took out of the conversation and what it ends with now."""

    dropped: int  # stored rows set aside
    removed: tuple[str, ...]  # ids of the messages no longer shown, in order
    last_message_id: str | None  # the message it ends with now (None: nothing is left)
    remaining: int  # messages (prompts and replies) it still shows


async def cut_conversation(state: SessionState, services: SessionServices, first_row: int) -> Truncation:
    """Take the messages stored from ``first_row`` on out of the model's history and the replay (set
    aside, still searchable): the one conversation half of every rewind."""
    db = services.db
    before = await anyio.to_thread.run_sync(db.conversation, state.id)
    removed = tuple(message.message_id for message in stored_messages([r for r in before if r.id >= first_row])
                    if isinstance(message, StoredPrompt | StoredReply))
    dropped = await state.rewind_conversation(db, first_row)
    kept = [message for message in stored_messages([r for r in before if r.id < first_row])
            if isinstance(message, StoredPrompt | StoredReply)]
    return Truncation(dropped, removed, kept[-1].message_id if kept else None, len(kept))
