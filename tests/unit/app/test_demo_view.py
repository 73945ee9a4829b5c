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


def chunk(text: str, message_id: str, kind: str = "agent_message_chunk") -> dict[str, object]:
    return {"sessionUpdate": kind, "content": {"type": "text", "text": text}, "messageId": message_id}


def test_a_reply_sent_while_the_model_writes_starts_a_line_of_its_own(capsys: pytest.CaptureFixture[str]) -> None:
    view = DemoView(color=False)
    view.show(chunk("Counting: 1… ", "m1"))
    view.show(chunk("↪ Sent into the running turn.", "m2"))  # a /steer's answer, in the middle of the count
    view.show(chunk("2… 3…", "m1"))
    view.show(chunk("stop at five", "u1", "user_message_chunk"))  # the steer, where the model reads it
    assert capsys.readouterr().out.splitlines() == [
        "Counting: 1… ", "↪ Sent into the running turn.", "2… 3…", "↪ you: stop at five"]


def test_what_arrives_while_the_chat_waits_goes_above_its_prompt(capsys: pytest.CaptureFixture[str]) -> None:
    view = DemoView(color=False)
    view.show_prompt()  # busy: no prompt
    view.prompt = "you> "
    view.show_prompt()
    view.show_prompt()  # once is enough
    view.show({"sessionUpdate": "session_info_update", "title": "Fix the bug"})
    view.show_prompt()
    view.typed()  # the user typed a line and pressed Enter
    view.prompt = None
    view.line("turn ended: end_turn")
    view.finish()
    assert capsys.readouterr().out == "you> \nsession title: Fix the bug\nyou> turn ended: end_turn\n"
