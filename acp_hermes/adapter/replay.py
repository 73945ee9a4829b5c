"""A stored conversation → the ``session/update``s that show it again (``session/load``);
stored sessions → ``session/list`` entries."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

from acp_hermes.adapter.prompt_blocks import to_block
from acp_hermes.adapter.render import locations, render_update, tool_content
from acp_hermes.core.events import AgentText, AgentThought
from acp_hermes.core.transcript import StoredPrompt, StoredReply, ToolOutcome, stored_messages
from acp_hermes_tools.contracts import PlanUpdated

if TYPE_CHECKING:
    from acp_hermes_memory.session_db import MessageRecord, SessionRecord


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


def _tool_updates(call: ToolOutcome) -> Iterator[dict[str, Any]]:
    """The call as one final ``tool_call`` (what its start and its end rendered, together); a call
    that published a plan is followed by it, and has no rawOutput (live, the plan stood for it)."""
    update: dict[str, Any] = {
        "sessionUpdate": "tool_call",
        "toolCallId": call.call_id,
        "title": call.title,
        "name": call.name,
        "kind": call.kind,
        "status": "completed" if call.ok else "failed",
        "rawInput": call.raw_input,
        "content": [tool_content(item) for item in call.display],
    }
    if call.locations:
        update["locations"] = locations(call.locations)
    if call.raw_output is not None and call.plan is None:
        update["rawOutput"] = call.raw_output
    yield update
    if call.plan is not None:
        yield render_update(PlanUpdated(call.plan))


def replay_updates(rows: Sequence[MessageRecord]) -> Iterator[dict[str, Any]]:
    """Updates in the order the user originally saw them; each tool call arrives final, and a plan
    only where it changed (as live)."""
    plan = None
    for message in stored_messages(rows):
        if isinstance(message, StoredPrompt):
            yield from _prompt_updates(message)
        elif isinstance(message, StoredReply):
            yield from _reply_updates(message)
        else:
            for update in _tool_updates(message):
                if update["sessionUpdate"] == "plan":
                    if update["entries"] == plan:
                        continue
                    plan = update["entries"]
                yield update
