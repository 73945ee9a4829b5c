"""``/export``: a conversation as Markdown (what the user saw, in order, every segment included),
written as a card the editor sees, asking as any edit does."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

import anyio

from acp_hermes.core.side_calls import SideCall
from acp_hermes.core.transcript import StoredPrompt, StoredReply, stored_messages
from acp_hermes.core.user_prompt import TextPart
from acp_hermes_memory.text import one_line
from acp_hermes_tools.contracts import DiffDisplay, FileChange, Location, PermissionDenied, TextDisplay

if TYPE_CHECKING:
    from acp_hermes.core.services import SessionServices
    from acp_hermes_memory.session_db import MessageRecord


async def export(services: SessionServices, path: Path, text: str) -> str:
    """Write ``text`` to ``path`` as a tool call the editor sees, asking as any edit does; the reply."""
    title = f"Export the conversation to {path.name}"
    async with SideCall(services.sink, services.tool_context, f"export-{uuid.uuid4()}", "export", title, "edit",
                        {"path": str(path)}, [Location(str(path))]) as card:
        old = await anyio.to_thread.run_sync(lambda: path.read_text(encoding="utf-8") if path.is_file() else None)
        try:
            await card.ctx.authorize_edits([FileChange(path, old, text)])
            await card.ctx.write_text(path, text)
        except PermissionDenied as refused:  # the user reads their own words, not the model's
            await card.finish(False, (TextDisplay(refused.shown),))
            return refused.shown
        await card.finish(True, (DiffDisplay(str(path), old, text),))
    return f"Exported the conversation to `{path}`."


def conversation_markdown(title: str | None, session_id: str, rows: Sequence[MessageRecord]) -> str:
    """Prompts, replies and tool calls (title, status and shown text, diffs as file names)."""
    lines = [f"# {title or 'Conversation'}", "", f"acp-hermes session `{session_id}`, exported "
             f"{datetime.now().astimezone():%Y-%m-%d %H:%M}.", ""]
    for message in stored_messages(rows):
        if isinstance(message, StoredPrompt):
            text = "\n".join(part.text if isinstance(part, TextPart) else f"[{type(part).__name__}]"
                             for part in message.parts)
            lines += ["## You", "", text, ""]
        elif isinstance(message, StoredReply):
            if message.text:
                lines += ["## acp-hermes", "", message.text, ""]
        else:
            mark = "✓" if message.ok else "✗"
            lines.append(f"- {mark} **{one_line(message.title, 120)}**")
            for item in message.display:
                if isinstance(item, DiffDisplay):
                    lines.append(f"  - changed `{item.path}`")
                elif isinstance(item, TextDisplay) and item.text.strip():
                    lines += ["", "  ```", *(f"  {line}" for line in item.text.strip().splitlines()[:20]), "  ```"]
            lines.append("")
    return "\n".join(lines).rstrip() + "\n"
