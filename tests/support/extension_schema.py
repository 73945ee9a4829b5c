"""The shapes of acp-hermes's extension messages that no ACP schema defines, as JSON Schema: the
Quotas and Limits RFD's ``quota_update``, ``quota/read`` and ``quotaExceeded`` error data, and
JetBrains AIR's async-task updates (as claude-agent-acp and codex-acp send them). docs/editor-extensions.md
documents the same shapes; ``WireValidator`` checks these messages against them instead of failing them
as unknown."""

from __future__ import annotations

from typing import Any

from jsonschema import Draft202012Validator

_METER: dict[str, Any] = {
    "type": "object",
    "required": ["id", "title", "unit", "used", "limit", "usedPercent", "window", "status", "updatedAt"],
    "additionalProperties": False,
    "properties": {
        "id": {"type": "string", "minLength": 1}, "title": {"type": "string", "minLength": 1},
        "unit": {"enum": ["requests", "tokens", "usd"]}, "used": {"type": "number", "minimum": 0},
        "limit": {"type": "number", "exclusiveMinimum": 0},
        "usedPercent": {"type": "number", "minimum": 0, "maximum": 100},
        "window": {"enum": ["minute", "turn", "session"]}, "status": {"enum": ["ok", "warning", "exceeded"]},
        "updatedAt": {"type": "string", "format": "date-time"}, "resetsAt": {"type": "string"},
    },
}
POOLS: dict[str, Any] = {
    "type": "array",
    "items": {"type": "object", "required": ["id", "title", "meters"], "additionalProperties": False,
              "properties": {"id": {"enum": ["anthropic", "budget"]}, "title": {"type": "string"},
                             "meters": {"type": "array", "minItems": 1, "items": _METER}}},
}
_TASK_ID = {"type": "string", "minLength": 1}
UPDATES: dict[str, dict[str, Any]] = {
    "quota_update": {"type": "object", "required": ["sessionUpdate", "pools"], "additionalProperties": False,
                     "properties": {"sessionUpdate": {"const": "quota_update"}, "pools": POOLS}},
    "async_task_spawned": {
        "type": "object", "additionalProperties": False,
        "required": ["sessionUpdate", "asyncTaskId", "name", "taskType", "description", "showInTranscript",
                     "canStop"],
        "properties": {"sessionUpdate": {"const": "async_task_spawned"}, "asyncTaskId": _TASK_ID,
                       "name": {"type": "string", "minLength": 1}, "taskType": {"enum": ["shell", "agent"]},
                       "description": {"type": "string"}, "showInTranscript": {"type": "boolean"},
                       "canStop": {"type": "boolean"}, "toolCallId": {"type": "string"}}},
    "async_task_progress": {
        "type": "object", "additionalProperties": False, "required": ["sessionUpdate", "asyncTaskId"],
        "properties": {"sessionUpdate": {"const": "async_task_progress"}, "asyncTaskId": _TASK_ID,
                       "lastToolName": {"type": "string"}}},
    "async_task_state_update": {
        "type": "object", "additionalProperties": False, "required": ["sessionUpdate", "asyncTaskId", "state"],
        "properties": {"sessionUpdate": {"const": "async_task_state_update"}, "asyncTaskId": _TASK_ID,
                       "state": {"enum": ["running", "paused", "completed", "failed", "stopped"]},
                       "summary": {"type": "string"}}},
}
RESPONSES: dict[str, dict[str, Any]] = {
    "quota/read": {"type": "object", "required": ["pools"], "additionalProperties": False,
                   "properties": {"pools": POOLS}},
}
QUOTA_EXCEEDED_DATA: dict[str, Any] = {
    "type": "object", "required": ["quotaExceeded"],
    "properties": {"quotaExceeded": {"type": "object", "required": ["poolId"], "additionalProperties": False,
                                     "properties": {"poolId": {"enum": ["anthropic", "budget"]}, "meter": _METER,
                                                    "resetsAt": {"type": "string"}}}},
}


def problems(schema: dict[str, Any], instance: Any) -> list[str]:
    return [f"{'/'.join(map(str, error.absolute_path)) or '(root)'}: {error.message}"
            for error in Draft202012Validator(schema).iter_errors(instance)]
