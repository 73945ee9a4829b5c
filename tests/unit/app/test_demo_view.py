"""The demo's terminal view shows the plan once, then only the steps that changed."""

from __future__ import annotations

import pytest

from acp_hermes.app.demo import DemoView


def plan(*statuses: str) -> dict[str, object]:
    steps = ("Read", "Fix", "Test")
    entries = [{"content": step, "priority": "medium", "status": status}
               for step, status in zip(steps, statuses, strict=True)]
    return {"sessionUpdate": "plan", "entries": entries}


def test_plan_once_then_changes_and_the_plan_tool_output_left_out(capsys: pytest.CaptureFixture[str]) -> None:
    view = DemoView(color=False)
    view.show({"sessionUpdate": "tool_call", "toolCallId": "t1", "title": "Update plan", "status": "pending"})
    view.show(plan("in_progress", "pending", "pending"))
    view.show({"sessionUpdate": "tool_call_update", "toolCallId": "t1", "status": "completed",
               "content": [{"type": "content", "content": {"type": "text", "text": "Plan (0/3 done)"}}]})
    view.show({"sessionUpdate": "tool_call", "toolCallId": "t2", "title": "Read a.py", "status": "pending"})
    view.show({"sessionUpdate": "tool_call_update", "toolCallId": "t2", "status": "completed",
               "content": [{"type": "content", "content": {"type": "text", "text": "file text"}}]})
    view.show(plan("completed", "in_progress", "pending"))
    view.show(plan("completed", "in_progress", "pending"))
    lines = capsys.readouterr().out.splitlines()
    assert lines == ["… Update plan", "plan:", "  [~] Read", "  [ ] Fix", "  [ ] Test", "✔ Update plan",
                     "… Read a.py", "✔ Read a.py", "    file text", "plan: [x] Read", "plan: [~] Fix"]
