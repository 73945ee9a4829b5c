"""The todo tool: Hermes's replace/merge/read semantics and the plan the editor sees."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from acp_hermes_tools.context import ToolContext, ToolState
from acp_hermes_tools.contracts import PlanEntry, PlanUpdated, ToolCallUpdated
from acp_hermes_tools.registry import ToolCall, ToolRegistry, ToolResult
from acp_hermes_tools.todo import TODO_LIST, TODO_TOOL, TodoItem
from tests.support.tools import events_of, make_context, make_scope

pytestmark = pytest.mark.anyio

REGISTRY = ToolRegistry([TODO_TOOL])

PLAN = [
    {"id": "1", "content": "Write the parser", "status": "completed"},
    {"id": "2", "content": "Write the tests", "status": "in_progress"},
    {"id": "3", "content": "Update the docs", "status": "pending"},
]


class Session:
    """Calls in one session share its tool state; each call gets its own context and event log."""

    def __init__(self, cwd: Path) -> None:
        self.cwd = cwd
        self.state = ToolState()
        self.calls = 0
        self.last: ToolContext | None = None

    async def call(self, **args: Any) -> ToolResult:
        self.calls += 1
        ctx = make_context(self.cwd, call_id=f"toolu_{self.calls}", state=self.state)
        self.last = ctx
        return await REGISTRY.dispatch(ToolCall(ctx.call_id, "todo", args), ctx)

    def events(self) -> list[Any]:
        assert self.last is not None
        return list(events_of(self.last))

    def plans(self) -> list[tuple[PlanEntry, ...]]:
        return [event.entries for event in self.events() if isinstance(event, PlanUpdated)]

    def titles(self) -> list[str]:
        return [event.title for event in self.events() if isinstance(event, ToolCallUpdated) and event.title]


async def test_replace_writes_the_list_and_emits_the_whole_plan(tmp_path: Path) -> None:
    session = Session(tmp_path)
    result = await session.call(todos=PLAN)
    assert result.ok
    assert result.text == (
        "Plan (1/3 done):\n[x] 1. Write the parser\n[>] 2. Write the tests (in progress)\n[ ] 3. Update the docs"
    )
    assert session.plans() == [
        (
            PlanEntry("Write the parser", "completed"),
            PlanEntry("Write the tests", "in_progress"),
            PlanEntry("Update the docs", "pending"),
        )
    ]
    assert session.titles() == ["Update plan (1/3 done)"]
    assert session.state.get(TODO_LIST) == (
        TodoItem("1", "Write the parser", "completed"),
        TodoItem("2", "Write the tests", "in_progress"),
        TodoItem("3", "Update the docs", "pending"),
    )


async def test_replace_drops_items_not_in_the_new_list(tmp_path: Path) -> None:
    session = Session(tmp_path)
    await session.call(todos=PLAN)
    await session.call(todos=[{"id": "a", "content": "Start over", "status": "pending"}])
    assert session.plans() == [(PlanEntry("Start over", "pending"),)]
    assert [item.id for item in session.state.get(TODO_LIST)] == ["a"]


async def test_merge_updates_by_id_and_appends_new_items(tmp_path: Path) -> None:
    session = Session(tmp_path)
    await session.call(todos=PLAN)
    result = await session.call(
        merge=True,
        todos=[
            {"id": "2", "status": "completed"},
            {"id": "3", "content": "Update the README", "status": "in_progress"},
            {"id": "4", "content": "Release"},
        ],
    )
    assert result.ok
    assert session.plans() == [
        (
            PlanEntry("Write the parser", "completed"),
            PlanEntry("Write the tests", "completed"),
            PlanEntry("Update the README", "in_progress"),
            PlanEntry("Release", "pending"),
        )
    ]
    assert session.titles() == ["Update plan (2/4 done)"]
    assert "[ ] 4. Release" in result.text


async def test_no_todos_reads_the_current_list(tmp_path: Path) -> None:
    session = Session(tmp_path)
    await session.call(todos=PLAN)
    written = session.state.get(TODO_LIST)
    result = await session.call()
    assert result.ok
    assert result.text.startswith("Plan (1/3 done):\n[x] 1. Write the parser")
    assert len(session.plans()) == 1 and len(session.plans()[0]) == 3
    assert session.state.get(TODO_LIST) == written
    assert session.titles() == ["Read plan"]


async def test_reading_an_empty_plan(tmp_path: Path) -> None:
    session = Session(tmp_path)
    result = await session.call()
    assert result.text == "The plan is empty."
    assert session.plans() == [()]


async def test_cancelled_items_show_as_completed_with_a_suffix(tmp_path: Path) -> None:
    session = Session(tmp_path)
    result = await session.call(
        todos=[
            {"id": "1", "content": "Try approach A", "status": "cancelled"},
            {"id": "2", "content": "Try approach B", "status": "pending"},
        ]
    )
    assert session.plans() == [
        (PlanEntry("Try approach A (cancelled)", "completed"), PlanEntry("Try approach B", "pending"))
    ]
    assert "[~] 1. Try approach A (cancelled)" in result.text
    assert session.state.get(TODO_LIST)[0].status == "cancelled"


async def test_a_repeated_id_keeps_its_last_occurrence(tmp_path: Path) -> None:
    session = Session(tmp_path)
    await session.call(
        todos=[
            {"id": "1", "content": "first draft", "status": "pending"},
            {"id": "2", "content": "other", "status": "pending"},
            {"id": "1", "content": "final", "status": "completed"},
        ]
    )
    assert session.plans() == [(PlanEntry("other", "pending"), PlanEntry("final", "completed"))]


async def test_integer_ids_and_defaults(tmp_path: Path) -> None:
    session = Session(tmp_path)
    await session.call(todos=[{"id": 7, "content": "  Padded  "}])
    assert session.state.get(TODO_LIST) == (TodoItem("7", "Padded", "pending"),)


async def test_a_new_item_needs_content_and_a_bad_call_changes_nothing(tmp_path: Path) -> None:
    session = Session(tmp_path)
    await session.call(todos=PLAN)
    before = session.state.get(TODO_LIST)
    result = await session.call(merge=True, todos=[{"id": "9", "status": "pending"}])
    assert not result.ok
    assert "'9' is new and needs content" in result.text
    blank = await session.call(todos=[{"id": " ", "content": "x"}])
    assert not blank.ok
    assert session.state.get(TODO_LIST) == before


async def test_invalid_status_is_rejected_by_the_schema(tmp_path: Path) -> None:
    session = Session(tmp_path)
    result = await session.call(todos=[{"id": "1", "content": "x", "status": "done"}])
    assert not result.ok
    assert "invalid arguments" in result.text
    assert TODO_LIST not in session.state


async def test_sessions_do_not_share_a_list(tmp_path: Path) -> None:
    first, second = Session(tmp_path), Session(tmp_path)
    await first.call(todos=PLAN)
    assert (await second.call()).text == "The plan is empty."


@pytest.mark.parametrize(
    ("args", "title"),
    [
        ({}, "Read plan"),
        ({"todos": PLAN}, "Update plan (1/3 done)"),
        ({"todos": [{"id": "1", "status": "completed"}], "merge": True}, "Update plan (1 change)"),
        ({"todos": PLAN, "merge": True}, "Update plan (3 changes)"),
    ],
)
def test_title(tmp_path: Path, args: dict[str, Any], title: str) -> None:
    presentation, kind = REGISTRY.presentation(ToolCall("t", "todo", args), make_scope(tmp_path))
    assert presentation.title == title
    assert kind == "other"


def test_declaration() -> None:
    assert not TODO_TOOL.access.mutates
    assert not TODO_TOOL.parallel_safe
