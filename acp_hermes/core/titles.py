"""Session titles: written by the auxiliary model after the first exchange.

The first user line is the fallback when the model call fails or takes too long, so every
session in the editor's history has a name.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from datetime import datetime, timezone
from typing import TYPE_CHECKING

import anyio

from acp_hermes.core.events import TitleChanged
from acp_hermes_memory.text import one_line

if TYPE_CHECKING:
    from acp_hermes.core.services import SessionServices
    from acp_hermes.core.state import SessionState

log = logging.getLogger(__name__)

TITLE_DELAY_SECONDS = 0.2  # after the first exchange, before the title is asked for
TITLE_TIMEOUT = 20.0
MAX_TITLE_CHARS = 60
TITLE_SYSTEM = (
    "You name conversations between a developer and a coding agent. Reply with a title of at most six "
    "words that says what the developer wants done. No quotes, no trailing punctuation."
)


def fallback_title(user_text: str) -> str:
    line = next((ln.strip() for ln in user_text.splitlines() if ln.strip()), "New session")
    return clean_title(line)


def clean_title(text: str) -> str:
    title = one_line(" ".join(text.split()).strip("\"'`").rstrip("."), MAX_TITLE_CHARS)
    return title or "New session"


async def name_session(state: SessionState, services: SessionServices,
                       wait_until_idle: Callable[[], Awaitable[None]]) -> None:
    """Give the session a title (once) and tell the editor."""
    if state.title:
        return
    # A title is cosmetic: let a prompt sent right after the first exchange have the machine first.
    await anyio.sleep(TITLE_DELAY_SECONDS)
    await wait_until_idle()
    db = services.db
    rows = await anyio.to_thread.run_sync(db.messages, state.id)
    # Rows without a payload were only shown (slash commands and their replies): not the conversation.
    user_text = next((r.content for r in rows if r.role == "user" and r.payload), "")
    answer = next((r.content for r in rows if r.role == "assistant" and r.content and r.payload), "")
    title = fallback_title(user_text)
    with anyio.move_on_after(TITLE_TIMEOUT):
        try:
            text = await services.auxiliary.complete(
                system=TITLE_SYSTEM,
                prompt=f"Developer: {user_text[:2000]}\n\nAgent: {answer[:1000]}\n\nTitle:",
                max_tokens=32,
            )
            if text.strip():
                title = clean_title(text)
        except Exception as exc:
            log.info("title generation failed (%s); using the first user line", exc)
    if not state.title:  # the user may have named it (/title) meanwhile
        await set_title(state, services, title)


async def set_title(state: SessionState, services: SessionServices, title: str) -> None:
    """Store ``title`` as the session's and tell the editor (nothing when the session is gone)."""
    from acp_hermes_memory.session_db import SessionNotFound

    try:
        await anyio.to_thread.run_sync(lambda: services.db.update_session(state.id, title=title))
    except SessionNotFound:
        log.info("session %s was deleted before it got its title", state.id)
        return
    state.title = title
    updated = datetime.now(timezone.utc).isoformat().replace("+00:00", "Z")
    await services.emit(TitleChanged(title, updated))
