"""Core events → ACP ``session/update`` payloads: fences, tool call content, usage; schema-valid."""

from __future__ import annotations

from typing import Any

import pytest

from acp_hermes.adapter.render import fenced, render_update, subagent_ended, subagent_started, tool_content
from acp_hermes.core.events import (
    AgentText,
    AgentThought,
    ChildEnded,
    ChildStarted,
    Event,
    TitleChanged,
    ToolCallFinished,
    ToolCallStarted,
    UsageReported,
)
from acp_hermes.model.types import Usage
from acp_hermes_tools.contracts import (
    DiffDisplay,
    Location,
    PlanEntry,
    PlanUpdated,
    TerminalDisplay,
    TextDisplay,
    ToolCallUpdated,
)
from tests.support.schema_check import default_schema


@pytest.mark.parametrize(
    ("text", "info", "expected"),
    [
        ("plain", "", "```\nplain\n```"),
        ("ends with newline\n", "python", "```python\nends with newline\n```"),
        ("inline `code` and ``two``", "", "```\ninline `code` and ``two``\n```"),
        ("```py\nx\n```\n", "markdown", "````markdown\n```py\nx\n```\n````"),
        ("a ````` b", "", "``````\na ````` b\n``````"),
        ("", "", "```\n\n```"),
    ],
)
def test_fence_is_longer_than_any_backtick_run_inside(text: str, info: str, expected: str) -> None:
    assert fenced(text, info) == expected


def test_tool_content_shapes() -> None:
    assert tool_content(TextDisplay("**bold** stays Markdown")) == {
        "type": "content", "content": {"type": "text", "text": "**bold** stays Markdown"}
    }
    assert tool_content(TextDisplay("$ ls\n*.py", fence="")) == {
        "type": "content", "content": {"type": "text", "text": "```\n$ ls\n*.py\n```"}
    }
    assert tool_content(DiffDisplay("/w/new.py", None, "x = 1\n")) == {
        "type": "diff", "path": "/w/new.py", "newText": "x = 1\n"
    }
    assert tool_content(DiffDisplay("/w/old.py", "", "x\n")) == {
        "type": "diff", "path": "/w/old.py", "oldText": "", "newText": "x\n"
    }  # an empty existing file is not a new file
    assert tool_content(TerminalDisplay("term-7")) == {"type": "terminal", "terminalId": "term-7"}


def test_tool_call_lifecycle_payloads() -> None:
    started = render_update(
        ToolCallStarted("toolu_1", "read_file", "Read a.py", "read", {"path": "a.py"}, (Location("/w/a.py", 3),))
    )
    assert started == {
        "sessionUpdate": "tool_call", "toolCallId": "toolu_1", "title": "Read a.py", "name": "read_file",
        "kind": "read", "status": "pending", "rawInput": {"path": "a.py"},
        "locations": [{"path": "/w/a.py", "line": 3}],
    }
    assert "locations" not in render_update(ToolCallStarted("toolu_2", "todo", "Read plan", "other", {}))
    assert render_update(ToolCallUpdated("toolu_1")) == {
        "sessionUpdate": "tool_call_update", "toolCallId": "toolu_1", "status": "in_progress"
    }
    assert render_update(ToolCallUpdated("toolu_1", status=None, title="Update plan (1/2 done)")) == {
        "sessionUpdate": "tool_call_update", "toolCallId": "toolu_1", "title": "Update plan (1/2 done)"
    }
    finished = render_update(
        ToolCallFinished("toolu_1", "failed", (TextDisplay("boom"),), (Location("/w/a.py"),), {"exit_code": 1})
    )
    assert finished == {
        "sessionUpdate": "tool_call_update", "toolCallId": "toolu_1", "status": "failed",
        "content": [{"type": "content", "content": {"type": "text", "text": "boom"}}],
        "locations": [{"path": "/w/a.py"}], "rawOutput": {"exit_code": 1},
    }
    bare = render_update(ToolCallFinished("toolu_1", "completed"))
    assert bare == {"sessionUpdate": "tool_call_update", "toolCallId": "toolu_1", "status": "completed", "content": []}


@pytest.mark.parametrize(("cost", "amount"), [(1.23456789, 1.234568), (0.0000004, 0.0), (0.02, 0.02)])
def test_usage_cost_is_rounded_to_micro_dollars(cost: float, amount: float) -> None:
    update = render_update(UsageReported(used=1200, size=200_000, cost_usd=cost))
    assert update == {"sessionUpdate": "usage_update", "used": 1200, "size": 200_000,
                      "cost": {"amount": amount, "currency": "USD"}}


def test_unknown_cost_is_left_out() -> None:
    assert render_update(UsageReported(used=5, size=10)) == {"sessionUpdate": "usage_update", "used": 5, "size": 10}


EVERY_EVENT: list[Event] = [
    AgentText("m1", "hello"),
    AgentThought("m1", "hmm"),
    ToolCallStarted("toolu_1", "patch", "Edit a.py", "edit", {"mode": "replace"}, (Location("/w/a.py", 1),)),
    ToolCallUpdated("toolu_1", display=(TerminalDisplay("term-1"),), locations=(Location("/w/a.py", 2),)),
    ToolCallFinished("toolu_1", "completed", (DiffDisplay("/w/a.py", "a\n", "b\n"), TextDisplay("ok", ""))),
    PlanUpdated((PlanEntry("step one", "completed", "high"), PlanEntry("step two"))),
    UsageReported(10, 100, 0.5),
    TitleChanged("A title", "2025-01-01T00:00:00Z"),
    TitleChanged("Untimed"),
]


@pytest.mark.parametrize("event", EVERY_EVENT, ids=lambda e: type(e).__name__)
def test_every_payload_is_valid_against_the_acp_schema(event: Event) -> None:
    schema = default_schema()
    notification: dict[str, Any] = {"sessionId": "session-1", "update": render_update(event)}
    assert schema.problems("SessionNotification", notification) == []


# -- a parent's children (core.delegation), for a client that shows them (``subagents``, AIR)


def _unstable_problems(update: dict[str, Any]) -> list[str]:
    """Problems against release schema-v1.24.1's unstable schema (vendored), where subagent_update
    was published, and against the newer copy in ../shared when it is there."""
    from tests.support.schema_check import RELEASE_UNSTABLE_SCHEMA_PATH, UNSTABLE_SCHEMA_PATH, load_schema

    paths = [RELEASE_UNSTABLE_SCHEMA_PATH] + [UNSTABLE_SCHEMA_PATH] * UNSTABLE_SCHEMA_PATH.exists()
    notification = {"sessionId": "parent", "update": update}
    return [problem for path in paths
            for problem in load_schema(str(path.resolve())).problems("SessionNotification", notification)]


def test_a_child_is_announced_running_with_its_task_and_a_cancel_capability() -> None:
    update = subagent_started(ChildStarted("toolu_1", "child-1", "Fix the parser", "Tools: file, terminal"))
    assert update == {"sessionUpdate": "subagent_update", "sessionId": "child-1", "title": "Fix the parser",
                      "description": "Tools: file, terminal", "capabilities": {"cancel": {}},
                      "state": {"state": "running"}}
    assert _unstable_problems(update) == []


@pytest.mark.parametrize(("stop", "failure"), [("end_turn", None), ("cancelled", None), ("max_turn_requests", None),
                                               ("end_turn", "HTTP 500")])
def test_a_child_ends_idle_with_its_stop_reason_and_usage(stop: str, failure: str | None) -> None:
    usage = Usage(input_tokens=100, output_tokens=20, cache_read_tokens=300, cache_write_tokens=5)
    update = subagent_ended(ChildEnded("child-1", stop, usage, failure))
    state = update["state"]
    assert state["state"] == "idle"
    assert state["usage"] == {"totalTokens": 425, "inputTokens": 100, "outputTokens": 20,
                              "cachedReadTokens": 300, "cachedWriteTokens": 5}
    if failure is None:
        assert state["stopReason"] == stop and "_meta" not in state
    else:  # 1.24's idle state has no `error` reason: none is reported, the failure rides in _meta
        assert "stopReason" not in state and "error" not in state
        assert state["_meta"]["acp-hermes"]["error"]["message"] == failure
    assert _unstable_problems(update) == []
