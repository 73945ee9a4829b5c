"""``core.delegation``'s pure parts: a child's tools, reading a call's tasks, what the parent reads back."""

from __future__ import annotations

from types import SimpleNamespace
from typing import TYPE_CHECKING, Any, cast

import pytest

from acp_hermes.config import DelegationSettings, Settings
from acp_hermes.core.delegation import (
    ChildOutcome,
    Task,
    _tasks,
    card_title,
    description,
    tool_names_for,
    toolset_tools,
)
from acp_hermes.core.lineage import DELEGATE_TOOL_NAME
from acp_hermes.core.transcript import final_answer
from acp_hermes.model.types import Usage
from acp_hermes_tools import core_tools
from acp_hermes_tools.registry import ToolError
from acp_hermes_tools.toolsets import DEFAULT_CHILD_TOOLSETS, TOOLSETS
from tests.support.wire import typed

if TYPE_CHECKING:
    from acp_hermes.core.session import Session

CORE = frozenset(tool.name for tool in core_tools())
AVAILABLE = sorted(CORE)  # what a parent's base registry holds (delegate_task is added beside it)
NEVER_DELEGATED = frozenset({"clarify", "memory", "skill_manage"})  # it cannot ask the user; the parent's stores


# -- tool_names_for


def test_every_toolset_holds_real_tools_and_none_a_child_must_never_have() -> None:
    sets = toolset_tools()
    assert list(sets) == list(TOOLSETS)
    for name, tools in sets.items():
        assert tools and set(tools) <= CORE, name
        assert not set(tools) & NEVER_DELEGATED, name
    assert {tool.name for tool in core_tools() if not tool.delegable} == NEVER_DELEGATED


def test_the_description_lists_each_toolset_with_its_tools() -> None:
    assert ("`toolsets` picks their tools: file (read_file, write_file, patch), search (search_files), terminal "
            "(terminal, process), todo (todo), skills (skills_list, skill_view), session_search (session_search). "
            "This call returns when every child has finished.") in description()


def test_a_child_gets_its_toolsets_tools_and_nothing_else() -> None:
    names = tool_names_for(["file", "search"], AVAILABLE, may_delegate=False)
    assert names == {"read_file", "write_file", "patch", "search_files"}
    every = tool_names_for(list(TOOLSETS), AVAILABLE, may_delegate=False)
    assert every == {tool for tools in toolset_tools().values() for tool in tools}
    assert not every & NEVER_DELEGATED and DELEGATE_TOOL_NAME not in every


def test_a_tool_the_parent_lacks_is_not_given() -> None:
    without_terminal = [name for name in AVAILABLE if name != "terminal"]
    assert tool_names_for(["terminal"], without_terminal, may_delegate=False) == {"process"}
    assert tool_names_for(["terminal"], [], may_delegate=False) == frozenset()


def test_delegate_task_is_given_above_the_depth_limit_although_it_is_no_base_tool() -> None:
    assert DELEGATE_TOOL_NAME not in AVAILABLE
    names = tool_names_for(list(DEFAULT_CHILD_TOOLSETS), AVAILABLE, may_delegate=True)
    assert DELEGATE_TOOL_NAME in names
    assert tool_names_for(["todo"], AVAILABLE, may_delegate=True) == {"todo", DELEGATE_TOOL_NAME}
    assert DELEGATE_TOOL_NAME not in tool_names_for(list(DEFAULT_CHILD_TOOLSETS), AVAILABLE, may_delegate=False)


# -- reading a call's tasks


def parent(toolsets: tuple[str, ...] = ("file", "search")) -> Session:
    """What ``_tasks`` reads of the parent session: its delegation settings."""
    settings = Settings(delegation=DelegationSettings(toolsets=list(toolsets)))
    return cast("Session", SimpleNamespace(services=SimpleNamespace(settings=settings)))


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ({"goal": "a", "tasks": [{"goal": "b"}]}, "not both"),
        ({}, "nothing to delegate"),
        ({"tasks": []}, "nothing to delegate"),
        ({"goal": ""}, "nothing to delegate"),
        ({"context": "only context"}, "nothing to delegate"),
        ({"goal": "   "}, "every task needs a goal"),
        ({"tasks": [{"goal": "fine"}, {"goal": " "}]}, "every task needs a goal"),
        ({"tasks": [{"context": "no goal"}]}, "every task needs a goal"),
    ],
    ids=["goal-and-tasks", "nothing", "empty-tasks", "empty-goal", "context-only", "blank-goal",
         "one-blank-in-batch", "task-without-goal"],
)
def test_a_call_without_exactly_one_kind_of_task_is_refused(args: dict[str, Any], message: str) -> None:
    with pytest.raises(ToolError, match=message):
        _tasks(args, parent())


def test_one_goal_is_one_task_with_its_context_and_the_configured_toolsets() -> None:
    (task,) = _tasks({"goal": "  Fix the parser  ", "context": " in src/parse.py ", "max_iterations": 5}, parent())
    assert task == Task("Fix the parser", "in src/parse.py", ("file", "search"))
    (own,) = _tasks({"goal": "Run the tests", "toolsets": ["terminal"]}, parent())
    assert own == Task("Run the tests", "", ("terminal",))


def test_a_batch_keeps_its_order_and_each_tasks_own_toolsets() -> None:
    tasks = _tasks({"tasks": [{"goal": "one"}, {"goal": "two", "context": "c", "toolsets": ["todo"]}]},
                   parent(("search",)))
    assert tasks == [Task("one", "", ("search",)), Task("two", "c", ("todo",))]


# -- what the parent reads back


def outcome(answer: str, status: str = "completed", detail: str = "") -> ChildOutcome:
    return ChildOutcome("0123456789abcdef", "goal", status, "end_turn", answer, Usage(), detail)


def test_a_short_answer_is_reported_whole_under_its_status() -> None:
    assert outcome("  All done.\n").report(500) == "completed\n\nAll done."
    assert outcome("").report(500) == "completed (no answer)"
    assert outcome("half", "failed", "ModelError: overloaded").report(500) == "failed: ModelError: overloaded\n\nhalf"
    assert outcome("", "cancelled").report(500) == "cancelled before it finished (no answer)"
    assert outcome("so far", "stopped", "it used its 5 model calls").report(500) == (
        "stopped: it used its 5 model calls\n\nso far")


def test_a_long_answer_is_capped_and_says_where_the_rest_is() -> None:
    answer = "x" * 1_200
    report = outcome(answer).report(1_000)
    body = report.removeprefix("completed\n\n")
    assert body.startswith("x" * 1_000 + "\n[") and "x" * 1_001 not in body
    assert "1,200 characters" in body and "first 1,000" in body and "01234567" in body
    assert outcome("y" * 1_000).report(1_000) == "completed\n\n" + "y" * 1_000  # at the limit: whole


def test_raw_output_keeps_the_childs_figures() -> None:
    child = ChildOutcome("id", "goal", "completed", "end_turn", "a", Usage(input_tokens=7, output_tokens=3))
    assert child.raw() == {"session_id": "id", "goal": "goal", "status": "completed", "stop_reason": "end_turn",
                           "input_tokens": 7, "output_tokens": 3}


# -- the card's title


def test_the_card_title_is_the_running_summary_then_how_the_children_ended() -> None:
    assert card_title(["queued"]) == "Subagent starting"
    assert card_title(["running"], "Run pytest -q") == "Subagent running · Run pytest -q"
    assert card_title(["failed"], "Run pytest -q") == "Subagent failed"  # no step once nothing runs
    assert card_title(["queued"] * 3) == "Subagents 0/3 running"
    assert card_title(["running", "completed", "running"], "Read CHANGELOG.md") == (
        "Subagents 2/3 running, 1 done · Read CHANGELOG.md")
    assert card_title(["completed"] * 3) == "Subagents 3/3 done"
    assert card_title(["completed", "failed", "stopped", "failed"]) == "Subagents 4/4 done, 2 failed, 1 stopped"


def test_the_card_titles_fixed_part_survives_a_one_line_label() -> None:
    """CodeCompanion's label keeps only what comes before a colon (within 40 characters) or an em dash."""
    for states in (["running"], ["running", "queued"], ["completed", "cancelled"]):
        head = card_title(states, "Run: a — b").split(" · ")[0]
        assert ":" not in head and "—" not in head


def test_final_answer_is_the_last_assistant_text() -> None:
    messages: list[dict[str, Any]] = [
        {"role": "user", "content": "do it"},
        {"role": "assistant", "content": [{"type": "text", "text": "First look."},
                                          {"type": "tool_use", "id": "t1", "name": "read_file", "input": {}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "file text"}]},
        {"role": "assistant", "content": [{"type": "text", "text": "Found "}, {"type": "text", "text": "it."}]},
    ]
    assert final_answer(typed(messages)) == "Found it."
    # A last message of only tool calls (a turn that stopped at its limit): the text before it counts.
    stopped = [*messages[:3], {"role": "assistant", "content": [
        {"type": "tool_use", "id": "t2", "name": "read_file", "input": {}}]}]
    assert final_answer(typed(stopped)) == "First look."
    assert final_answer(typed([{"role": "user", "content": "x"}, {"role": "assistant", "content": "plain"}])) == "plain"
    assert final_answer(typed([{"role": "assistant", "content": [{"type": "text", "text": "  "}]}])) == ""
    assert final_answer(typed([{"role": "user", "content": "only a question"}])) == ""
    assert final_answer([]) == ""
