"""What the client was shown, kept so later messages agree with it (issue 16): permission requests
repeat the call, a plan goes out once per change (live and in a replay), a client terminal's output
reaches the call's rawOutput, and interrupted calls keep how they were announced."""

from __future__ import annotations

from typing import Any

import pytest

from acp_hermes.adapter.client import ClientView, PermissionRequests, SessionUpdates
from acp_hermes.adapter.replay import replay_updates
from acp_hermes.app.logs import console_level
from acp_hermes.core.events import ToolCallFinished, ToolCallStarted
from acp_hermes.core.transcript import AnnouncedCall, announced_calls, last_measured
from acp_hermes.permissions.gate import PermissionQuestion
from acp_hermes_tools.contracts import DiffDisplay, Location, PlanEntry, PlanUpdated, TerminalDisplay, TextDisplay
from tests.unit.adapter.test_replay import outcome, row, tool_row


class Link:
    def __init__(self) -> None:
        self.sent: list[dict[str, Any]] = []
        self.asked: list[dict[str, Any]] = []

    async def update(self, session_id: str, update: dict[str, Any]) -> None:
        self.sent.append(update)

    async def request(self, method: str, params: dict[str, Any]) -> Any:
        self.asked.append(params)
        return {"outcome": {"outcome": "selected", "optionId": "allow_once"}}


def question(call_id: str, *display: Any) -> PermissionQuestion:
    return PermissionQuestion(call_id=call_id, title="asked title", kind="edit", display=display, options=())


@pytest.mark.anyio
async def test_a_permission_request_names_the_call_as_shown() -> None:
    link, view = Link(), ClientView()
    sink, asker = SessionUpdates(link, "s", view), PermissionRequests(link, "s", view)  # type: ignore[arg-type]
    await sink.emit(ToolCallStarted("c1", "write_file", "Write a.txt", "edit", {"path": "a.txt"},
                                    (Location("/w/a.txt"),)))
    call = asker.tool_call(question("c1", DiffDisplay("/w/a.txt", None, "x\n")))
    assert (call["title"], call["kind"], call["locations"]) == ("asked title", "edit", [{"path": "/w/a.txt"}])
    # A call shown without locations is named by the files it would change.
    call = asker.tool_call(question("c2", DiffDisplay("/w/b.txt", "a", "b"), DiffDisplay("/w/b.txt", "b", "c")))
    assert call["locations"] == [{"path": "/w/b.txt"}] and call["title"] == "asked title"


@pytest.mark.anyio
async def test_the_plan_goes_out_once_per_change_and_terminal_output_reaches_raw_output() -> None:
    link, view = Link(), ClientView()
    sink = SessionUpdates(link, "s", view)  # type: ignore[arg-type]
    plan = PlanUpdated((PlanEntry("one"),))
    for event in (plan, plan, PlanUpdated((PlanEntry("one", "completed"),))):
        await sink.emit(event)
    assert len([u for u in link.sent if u["sessionUpdate"] == "plan"]) == 2
    view.ran("term-1", "hello\n")
    await sink.emit(ToolCallFinished("c1", "completed", (TerminalDisplay("term-1"), TextDisplay("exit code 0")),
                                     raw_output={"exit_code": 0}))
    assert link.sent[-1]["rawOutput"] == {"exit_code": 0, "output": "hello\n"}
    assert [item["type"] for item in link.sent[-1]["content"]] == ["terminal", "content"]
    assert view.terminal_output == {}


def test_a_replay_sends_a_plan_only_where_it_changed_and_no_raw_output_for_plan_calls() -> None:
    entries = (PlanEntry("one"),)
    rows = [tool_row(n, outcome(call_id=f"toolu_{n}", plan=entries, raw_output={"todos": []})) for n in (1, 2)]
    updates = list(replay_updates(rows))
    assert [u["sessionUpdate"] for u in updates] == ["tool_call", "plan", "tool_call"]
    assert all("rawOutput" not in u for u in updates)


def test_announced_calls_and_the_last_measured_context_are_read_back_from_rows() -> None:
    shown = AnnouncedCall("Run make", "execute", (Location("/w/Makefile", 2),))
    rows = [row(1, "assistant", display={"message_id": "m", "context_tokens": 900, "calls": {"c1": shown.record()}}),
            row(2, "user", "next")]
    assert announced_calls(rows) == {"c1": shown}
    assert last_measured(rows) == (900, 0)


def test_stderr_gets_warnings_unless_debug_is_asked_for() -> None:
    assert [console_level(level) for level in ("DEBUG", "INFO", "WARNING", "ERROR")] == [10, 30, 30, 40]
