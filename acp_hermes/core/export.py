"""A conversation as Markdown (``/export``): what the user saw, in order, every segment included."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING

from acp_hermes.core.transcript import StoredPrompt, StoredReply, stored_messages
from acp_hermes.core.user_prompt import TextPart
from acp_hermes_memory.text import one_line
from acp_hermes_tools.contracts import DiffDisplay, TextDisplay

if TYPE_CHECKING:
    from acp_hermes_memory.session_db import MessageRecord


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
