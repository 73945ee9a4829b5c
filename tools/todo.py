"""The ``todo`` tool: the session's task list, which the user sees as the ACP plan.

Hermes's semantics: no ``todos`` reads the list; ``merge=false`` replaces it with a fresh plan;
``merge=true`` updates items by id (only the fields given) and appends new ones; every call
returns the whole list. Items keep the order the model gave (list order is priority) and a
duplicated id keeps its last occurrence. The list lives in the session's tool state
(``TODO_LIST``); a reloaded session gets it back from its last stored call (``restore``).
After every call the complete list goes to the editor as a ``PlanUpdated``: plans know
pending, in_progress and completed only, so a cancelled item is shown completed with a
" (cancelled)" suffix.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal

from acp_hermes_memory.values import value
from acp_hermes_tools.context import StateKey, ToolContext, ToolScope
from acp_hermes_tools.contracts import PlanEntry, PlanUpdated, ToolCallUpdated
from acp_hermes_tools.registry import Access, Guidance, Presentation, Tool, ToolError, ToolResult

TodoStatus = Literal["pending", "in_progress", "completed", "cancelled"]

STATUSES: tuple[TodoStatus, ...] = ("pending", "in_progress", "completed", "cancelled")
MAX_ITEMS = 256
MAX_CONTENT_CHARS = 4000
_MARKERS: dict[TodoStatus, str] = {"pending": "[ ]", "in_progress": "[>]", "completed": "[x]", "cancelled": "[~]"}
_NOTES: dict[TodoStatus, str] = {"in_progress": " (in progress)", "cancelled": " (cancelled)"}


@value
class TodoItem:
    id: str
    content: str
    status: TodoStatus = "pending"


DESCRIPTION = (
    "Track a task list for multi-step work (three or more steps, or several tasks from the user); "
    "the user sees it as your plan. Call with no arguments to read the current list.\n"
    "Writing: pass `todos`. merge=false (default) replaces the whole list with a fresh plan; "
    "merge=true updates existing items by id (only the fields you give) and appends new ones.\n"
    "Each item: {id, content, status: pending|in_progress|completed|cancelled}. List order is "
    "priority. Keep exactly one item in_progress while you work; mark an item completed only once "
    "the work is verified done. If something fails or is dropped, mark it cancelled and add a "
    "revised item. Always returns the full list."
)

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "todos": {
            "type": "array",
            "description": "Task items to write. Omit to read the current list.",
            "items": {
                "type": "object",
                "properties": {
                    "id": {"type": ["string", "integer"], "description": "Unique item identifier"},
                    "content": {"type": "string", "description": "Task description"},
                    "status": {"type": "string", "enum": list(STATUSES)},
                },
                "required": ["id"],
            },
        },
        "merge": {
            "type": "boolean",
            "description": "true: update existing items by id, add new ones. false (default): replace the list.",
            "default": False,
        },
    },
    "additionalProperties": False,
}


def _empty() -> tuple[TodoItem, ...]:
    return ()


TODO_LIST = StateKey("todo", _empty)


def done_count(items: Sequence[TodoItem]) -> int:
    """Items that need no more work: completed or cancelled."""
    return sum(item.status in ("completed", "cancelled") for item in items)


def present_todo(args: dict[str, Any], scope: ToolScope) -> Presentation:
    todos = args.get("todos")
    if todos is None:
        return Presentation("Read plan")
    if args.get("merge", False):
        return Presentation(f"Update plan ({len(todos)} change{'' if len(todos) == 1 else 's'})")
    done = sum(isinstance(t, dict) and t.get("status") in ("completed", "cancelled") for t in todos)
    return Presentation(f"Update plan ({done}/{len(todos)} done)")


async def todo(args: dict[str, Any], ctx: ToolContext) -> ToolResult:
    todos = args.get("todos")
    items = ctx.state.get(TODO_LIST)
    if todos is not None:
        items = _merge(items, todos) if args.get("merge", False) else _replace(todos)
        ctx.state.set(TODO_LIST, items)
    await ctx.emit(PlanUpdated(tuple(plan_entry(item) for item in items)))
    title = f"Update plan ({done_count(items)}/{len(items)} done)" if todos is not None else "Read plan"
    await ctx.emit(ToolCallUpdated(ctx.call_id, title=title))
    return ToolResult(format_todos(items), raw_output={"todos": [_as_dict(item) for item in items]})


def _item_id(raw: Mapping[str, Any]) -> str:
    item_id = str(raw.get("id", "")).strip()
    if not item_id:
        raise ToolError("every todo item needs a non-empty id")
    return item_id


def _content(raw: Mapping[str, Any]) -> str:
    content = str(raw.get("content") or "").strip()
    return content[: MAX_CONTENT_CHARS - 1] + "…" if len(content) > MAX_CONTENT_CHARS else content


def _new_item(raw: Mapping[str, Any]) -> TodoItem:
    item_id, content = _item_id(raw), _content(raw)
    if not content:
        raise ToolError(f"todo item {item_id!r} is new and needs content")
    return TodoItem(item_id, content, raw.get("status") or "pending")


def _replace(todos: Sequence[Mapping[str, Any]]) -> tuple[TodoItem, ...]:
    """A fresh list; a repeated id keeps its last occurrence, in that position."""
    last = {_item_id(raw): index for index, raw in enumerate(todos)}
    return tuple(_new_item(todos[index]) for index in sorted(last.values()))[:MAX_ITEMS]


def _merge(items: Sequence[TodoItem], updates: Sequence[Mapping[str, Any]]) -> tuple[TodoItem, ...]:
    by_id = {item.id: item for item in items}
    for raw in updates:
        item_id = _item_id(raw)
        existing = by_id.get(item_id)
        if existing is None:
            by_id[item_id] = _new_item(raw)
            continue
        content = _content(raw) or existing.content
        by_id[item_id] = TodoItem(existing.id, content, raw.get("status") or existing.status)
    return tuple(by_id.values())[:MAX_ITEMS]


def plan_entry(item: TodoItem) -> PlanEntry:
    if item.status == "cancelled":
        return PlanEntry(f"{item.content} (cancelled)", "completed")
    return PlanEntry(item.content, item.status)


def format_todos(items: Sequence[TodoItem]) -> str:
    """The list as the model reads it: one compact line per item."""
    if not items:
        return "The plan is empty."
    lines = [f"Plan ({done_count(items)}/{len(items)} done):"]
    lines += [f"{_MARKERS[item.status]} {item.id}. {item.content}{_NOTES.get(item.status, '')}" for item in items]
    return "\n".join(lines)


def restore_todos(scope: ToolScope, raw_output: Any) -> None:
    """Put back the list a stored ``todo`` call ended with (a reloaded session keeps its plan)."""
    todos = raw_output.get("todos") if isinstance(raw_output, Mapping) else None
    if isinstance(todos, list):
        scope.state.set(TODO_LIST, _replace([t for t in todos if isinstance(t, Mapping)]))


def _as_dict(item: TodoItem) -> dict[str, str]:
    return {"id": item.id, "content": item.content, "status": item.status}


TODO_TOOL = Tool(
    name="todo",
    description=DESCRIPTION,
    schema=SCHEMA,
    handler=todo,
    kind="other",
    access=Access.READ,
    parallel_safe=False,
    present=present_todo,
    restore=restore_todos,
    trusted_output=True,
    guidance=Guidance(50, "For multi-step work keep a plan with `todo` and update it as steps finish."),
    toolsets=("todo",),
)
