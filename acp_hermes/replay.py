"""Stored conversation → the ``session/update``s that show it again (``session/load``)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

from acp_hermes.events import (
    AgentText,
    AgentThought,
    Location,
    PlanEntry,
    PlanUpdated,
    ToolCallFinished,
    ToolCallStarted,
    decode_display,
)
from acp_hermes.render import render_update

if TYPE_CHECKING:
    from memory.session_db import MessageRecord, SessionRecord


def iso_time(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, tz=timezone.utc).isoformat().replace("+00:00", "Z")


def session_info(record: SessionRecord) -> dict[str, Any]:
    """A ``session/list`` entry."""
    info: dict[str, Any] = {"sessionId": record.id, "cwd": record.cwd or "/", "updatedAt": iso_time(record.updated_at)}
    if record.title:
        info["title"] = record.title
    if record.additional_directories:
        info["additionalDirectories"] = list(record.additional_directories)
    return info


def _user_updates(row: MessageRecord) -> Iterator[dict[str, Any]]:
    message_id = f"user-{row.id}"
    prompt = (row.display or {}).get("prompt") if isinstance(row.display, dict) else None
    blocks = prompt if isinstance(prompt, list) and prompt else [{"type": "text", "text": row.content}]
    for block in blocks:
        yield {"sessionUpdate": "user_message_chunk", "content": block, "messageId": message_id}


def _assistant_updates(row: MessageRecord) -> Iterator[dict[str, Any]]:
    display = row.display if isinstance(row.display, dict) else {}
    message_id = display.get("messageId") or f"agent-{row.id}"
    if row.reasoning:
        yield render_update(AgentThought(message_id, row.reasoning))
    if row.content:
        yield render_update(AgentText(message_id, row.content))


def _tool_updates(row: MessageRecord) -> Iterator[dict[str, Any]]:
    record = row.display if isinstance(row.display, dict) else {}
    call_id = row.tool_call_id or f"call-{row.id}"
    locations = tuple(Location(loc["path"], loc.get("line")) for loc in record.get("locations") or [])
    started = ToolCallStarted(
        call_id,
        row.tool_name or "tool",
        record.get("title") or row.tool_name or "tool",
        record.get("kind") or "other",
        record.get("rawInput"),
        locations,
    )
    finished = ToolCallFinished(
        call_id,
        "completed" if record.get("status") == "completed" else "failed",
        decode_display(record.get("content") or []),
        raw_output=record.get("rawOutput"),
    )
    update = render_update(started)
    update.update({k: v for k, v in render_update(finished).items() if k not in ("sessionUpdate", "toolCallId")})
    yield update
    plan = record.get("plan")
    if plan is not None:
        entries = tuple(PlanEntry(e["content"], e.get("status", "pending"), e.get("priority", "medium")) for e in plan)
        yield render_update(PlanUpdated(entries))


def replay_updates(rows: Sequence[MessageRecord]) -> Iterator[dict[str, Any]]:
    """Updates in the order the user originally saw them; each tool call arrives final."""
    for row in rows:
        if row.role == "user":
            yield from _user_updates(row)
        elif row.role == "assistant":
            yield from _assistant_updates(row)
        elif row.role == "tool":
            yield from _tool_updates(row)
