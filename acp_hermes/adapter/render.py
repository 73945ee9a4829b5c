"""Core events → ACP ``session/update`` payloads (plain JSON, exactly the schema's shapes).

Payloads are built as dicts rather than SDK models: it is cheaper per streamed chunk and it
lets us send fields newer than the SDK's generated models (the wire is checked against the
official schema in the tests).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from acp_hermes.core.events import (
    AgentText,
    AgentThought,
    ChildEnded,
    ChildStarted,
    Event,
    Notice,
    QuotaChanged,
    QuotaMeter,
    QuotaPool,
    TitleChanged,
    ToolCallFinished,
    ToolCallStarted,
    UsageReported,
    UserText,
)
from acp_hermes_tools.contracts import (
    DiffDisplay,
    Display,
    Location,
    PlanUpdated,
    TerminalDisplay,
    TextDisplay,
    ToolCallUpdated,
)

if TYPE_CHECKING:
    from acp_hermes.core.quotas import QuotaExceeded

_BACKTICK_RUNS = re.compile(r"`{3,}")


def fenced(text: str, info: str = "") -> str:
    """A fenced code block that the text itself cannot close early."""
    # The ``in`` test is a fast C scan; the regex alone cost ~0.1 s over the files of a long session/load.
    longest = max((len(run) for run in _BACKTICK_RUNS.findall(text)), default=0) if "```" in text else 0
    fence = "`" * max(3, longest + 1)
    body = text if text.endswith("\n") else text + "\n"
    return f"{fence}{info}\n{body}{fence}"


def text_content(text: str) -> dict[str, Any]:
    return {"type": "text", "text": text}


def tool_content(item: Display) -> dict[str, Any]:
    if isinstance(item, TextDisplay):
        text = item.text if item.fence is None else fenced(item.text, item.fence)
        return {"type": "content", "content": text_content(text)}
    if isinstance(item, DiffDisplay):
        diff: dict[str, Any] = {"type": "diff", "path": item.path, "newText": item.new_text}
        if item.old_text is not None:
            diff["oldText"] = item.old_text
        return diff
    assert isinstance(item, TerminalDisplay)
    return {"type": "terminal", "terminalId": item.terminal_id}


def locations(items: tuple[Location, ...]) -> list[dict[str, Any]]:
    out = []
    for loc in items:
        entry: dict[str, Any] = {"path": loc.path}
        if loc.line is not None:
            entry["line"] = loc.line
        out.append(entry)
    return out


def render_update(event: Event) -> dict[str, Any]:
    """The ``update`` object of a ``session/update`` notification for ``event``."""
    if isinstance(event, AgentText):
        return {"sessionUpdate": "agent_message_chunk", "content": text_content(event.text),
                "messageId": event.message_id}
    if isinstance(event, UserText):
        return {"sessionUpdate": "user_message_chunk", "content": text_content(event.text),
                "messageId": event.message_id}
    if isinstance(event, AgentThought):
        return {"sessionUpdate": "agent_thought_chunk", "content": text_content(event.text),
                "messageId": event.message_id}
    if isinstance(event, ToolCallStarted):
        update: dict[str, Any] = {
            "sessionUpdate": "tool_call",
            "toolCallId": event.call_id,
            "title": event.title,
            "name": event.name,
            "kind": event.kind,
            "status": "pending",
            "rawInput": event.raw_input,
        }
        if event.locations:
            update["locations"] = locations(event.locations)
        return update
    if isinstance(event, ToolCallUpdated):
        update = {"sessionUpdate": "tool_call_update", "toolCallId": event.call_id}
        if event.status is not None:
            update["status"] = event.status
        if event.title is not None:
            update["title"] = event.title
        if event.display is not None:
            update["content"] = [tool_content(item) for item in event.display]
        if event.locations is not None:
            update["locations"] = locations(event.locations)
        return update
    if isinstance(event, ToolCallFinished):
        update = {
            "sessionUpdate": "tool_call_update",
            "toolCallId": event.call_id,
            "status": event.status,
            "content": [tool_content(item) for item in event.display],
        }
        if event.locations is not None:
            update["locations"] = locations(event.locations)
        if event.raw_output is not None:
            update["rawOutput"] = event.raw_output
        return update
    if isinstance(event, PlanUpdated):
        return {
            "sessionUpdate": "plan",
            "entries": [
                {"content": e.content, "priority": e.priority, "status": e.status} for e in event.entries
            ],
        }
    if isinstance(event, UsageReported):
        update = {"sessionUpdate": "usage_update", "used": event.used, "size": event.size}
        if event.cost_usd is not None:
            update["cost"] = {"amount": round(event.cost_usd, 6), "currency": "USD"}
        return update
    assert isinstance(event, TitleChanged), f"{type(event).__name__} is not rendered as one update"
    update = {"sessionUpdate": "session_info_update", "title": event.title}
    if event.updated_at is not None:
        update["updatedAt"] = event.updated_at
    return update


# A child session: the parent may cancel one child's work, and says so (unstable SubagentSessionCapabilities).
_CHILD_CAPABILITIES: dict[str, Any] = {"cancel": {}}


def subagent_started(event: ChildStarted) -> dict[str, Any]:
    """A child session announced on its parent: running, with its task as title."""
    return {"sessionUpdate": "subagent_update", "sessionId": event.child_id, "title": event.title,
            "description": event.description, "capabilities": _CHILD_CAPABILITIES, "state": {"state": "running"}}


def subagent_ended(event: ChildEnded) -> dict[str, Any]:
    """A child's one terminal state: idle, with why it stopped and the tokens it used.

    Shaped for schema 1.24.x, the release that published ``subagent_update``: its idle
    ``stopReason`` is one of the prompt's five, so a failed child reports none (a later schema's
    ``error`` reason would fail a 1.24 client's check) and carries the failure in ``_meta``."""
    usage = event.usage
    state: dict[str, Any] = {"state": "idle", "stopReason": event.stop_reason, "usage": {
        "totalTokens": usage.input_tokens + usage.output_tokens + usage.cache_read_tokens + usage.cache_write_tokens,
        "inputTokens": usage.input_tokens, "outputTokens": usage.output_tokens,
        "cachedReadTokens": usage.cache_read_tokens, "cachedWriteTokens": usage.cache_write_tokens}}
    if event.failure is not None:
        del state["stopReason"]
        state["_meta"] = {"acp-hermes": {"error": {"code": -32603, "message": event.failure}}}
    return {"sessionUpdate": "subagent_update", "sessionId": event.child_id, "state": state}


# -- notices, quotas and JetBrains AIR: each only for a client that advertised it (``adapter.client``)


def render_notice(event: Notice, notices: bool) -> dict[str, Any] | None:
    """The one way every notice reaches the editor (compaction, budgets, jobs, trust, hooks): a
    ``notice`` update for a client that advertised ``session.notices``; for any other the message it
    was always shown (an agent message), or nothing where it has its own rendering."""
    if notices:
        update: dict[str, Any] = {"sessionUpdate": "notice", "severity": event.severity, "title": event.title}
        if event.description:
            update["description"] = event.description
        update["_meta"] = {"acp-hermes": {"kind": event.kind}}
        return update
    if not event.text:
        return None
    return render_update(AgentText(event.message_id, event.text))


def quota_pools(pools: tuple[QuotaPool, ...]) -> list[dict[str, Any]]:
    """Pools of meters as ``quota_update`` and ``quota/read`` carry them."""
    return [{"id": pool.id, "title": pool.title, "meters": [_meter(meter) for meter in pool.meters]}
            for pool in pools]


def _meter(meter: QuotaMeter) -> dict[str, Any]:
    shown: dict[str, Any] = {"id": meter.id, "title": meter.title, "unit": meter.unit, "used": meter.used,
                             "limit": meter.limit, "usedPercent": meter.used_percent, "window": meter.window,
                             "status": meter.status, "updatedAt": meter.updated_at}
    if meter.resets_at is not None:
        shown["resetsAt"] = meter.resets_at
    return shown


def quota_update(event: QuotaChanged) -> dict[str, Any]:
    return {"sessionUpdate": "quota_update", "pools": quota_pools(event.pools)}


QUOTA_EXCEEDED_CODE = -32029  # chosen (no schema has one yet): "429" in JSON-RPC's server-error range


def quota_exceeded(exceeded: QuotaExceeded) -> tuple[int, str, dict[str, Any]]:
    """The error a quota client's ``session/prompt`` is answered with when a limit ended the turn:
    (code, message, data)."""
    detail: dict[str, Any] = {"poolId": exceeded.pool}
    if exceeded.meter is not None:
        detail["meter"] = _meter(exceeded.meter)
        if exceeded.meter.resets_at is not None:
            detail["resetsAt"] = exceeded.meter.resets_at
    return QUOTA_EXCEEDED_CODE, exceeded.message.strip(), {"quotaExceeded": detail}


AIR_VERSION = 1


def air_meta(key: str, payload: Any) -> dict[str, Any]:
    """``_meta`` carrying one AIR payload, as AIR reads it."""
    return {"jetbrains": {"air": {"version": AIR_VERSION, key: payload}}}


def file_change_report(request_id: str, paths: tuple[str, ...] | None) -> dict[str, Any]:
    """The update AIR's ``agentFileChangeReportRequest`` is answered with before the prompt's answer:
    the paths the turn changed (from its checkpoints), or unavailable when they are not known."""
    if paths is None:
        report: dict[str, Any] = {"version": 1, "requestId": request_id, "status": "unavailable",
                                  "reason": "notReported"}
    else:
        report = {"version": 1, "requestId": request_id, "status": "reported", "paths": list(paths),
                  "declaredComplete": True, "truncated": False}
    return {"sessionUpdate": "session_info_update", "_meta": air_meta("agentFileChangeReport", report)}


def async_task_spawned(task_id: str, name: str, task_type: str, description: str,
                       tool_call_id: str | None) -> dict[str, Any]:
    update: dict[str, Any] = {"sessionUpdate": "async_task_spawned", "asyncTaskId": task_id, "name": name,
                              "taskType": task_type, "description": description, "showInTranscript": False,
                              "canStop": True}
    if tool_call_id is not None:
        update["toolCallId"] = tool_call_id
    return update


def async_task_progress(task_id: str, last_tool: str) -> dict[str, Any]:
    return {"sessionUpdate": "async_task_progress", "asyncTaskId": task_id, "lastToolName": last_tool}


def async_task_state(task_id: str, state: str, summary: str | None = None) -> dict[str, Any]:
    update: dict[str, Any] = {"sessionUpdate": "async_task_state_update", "asyncTaskId": task_id, "state": state}
    if summary:
        update["summary"] = summary
    return update
