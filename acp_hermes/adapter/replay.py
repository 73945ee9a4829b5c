"""A stored conversation → the ``session/update``s that show it again (``session/load``);
stored sessions → ``session/list`` entries."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

from acp_hermes.adapter.prompt_blocks import to_block
from acp_hermes.adapter.render import render_update
from acp_hermes.core.events import AgentText, AgentThought, ToolCallFinished, ToolCallStarted
from acp_hermes.core.transcript import StoredPrompt, StoredReply, StoredToolCall, stored_messages
from tools.contracts import PlanUpdated

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


def _prompt_updates(prompt: StoredPrompt) -> Iterator[dict[str, Any]]:
    for part in prompt.parts:
        yield {"sessionUpdate": "user_message_chunk", "content": to_block(part), "messageId": prompt.message_id}


def _reply_updates(reply: StoredReply) -> Iterator[dict[str, Any]]:
    if reply.reasoning:
        yield render_update(AgentThought(reply.message_id, reply.reasoning))
    if reply.text:
        yield render_update(AgentText(reply.message_id, reply.text))


def _tool_updates(call: StoredToolCall) -> Iterator[dict[str, Any]]:
    kind: Any = call.kind
    started = ToolCallStarted(call.call_id, call.name, call.title, kind, call.raw_input, call.locations)
    finished = ToolCallFinished(
        call.call_id, "completed" if call.ok else "failed", call.display, raw_output=call.raw_output
    )
    update = render_update(started)
    update.update({k: v for k, v in render_update(finished).items() if k not in ("sessionUpdate", "toolCallId")})
    yield update
    if call.plan is not None:
        yield render_update(PlanUpdated(call.plan))


def replay_updates(rows: Sequence[MessageRecord]) -> Iterator[dict[str, Any]]:
    """Updates in the order the user originally saw them; each tool call arrives final."""
    for message in stored_messages(rows):
        if isinstance(message, StoredPrompt):
            yield from _prompt_updates(message)
        elif isinstance(message, StoredReply):
            yield from _reply_updates(message)
        else:
            yield from _tool_updates(message)
