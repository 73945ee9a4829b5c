"""Stored transcript rows → the ``session/update``s a ``session/load`` replays; ``session/list`` entries."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from acp_hermes.adapter.replay import iso_time, replay_updates, session_info
from acp_hermes.core.transcript import ToolOutcome
from acp_hermes.core.user_prompt import ImagePart, LinkPart, PromptPart, ResourcePart, TextPart, to_record
from acp_hermes_memory.session_db import MessageRecord, SessionRecord
from acp_hermes_tools.contracts import DiffDisplay, Location, PlanEntry, TerminalDisplay, TextDisplay
from tests.support.schema_check import default_schema


def row(row_id: int, role: str, content: str = "", **fields: Any) -> MessageRecord:
    base: dict[str, Any] = {
        "id": row_id, "session_id": "s1", "role": role, "content": content, "tool_call_id": None,
        "tool_calls": None, "tool_name": None, "timestamp": 0.0, "token_count": None, "finish_reason": None,
        "reasoning": None, "active": True, "compacted": False, "payload": None, "display": None,
    }
    return MessageRecord(**{**base, **fields})


def prompt_row(row_id: int, *parts: PromptPart) -> MessageRecord:
    return row(row_id, "user", "plain", display={"prompt": [to_record(p) for p in parts]})


def tool_row(row_id: int, outcome: ToolOutcome) -> MessageRecord:
    return row(row_id, "tool", outcome.text, tool_call_id=outcome.call_id, tool_name=outcome.name,
               display=outcome.display_record())


def outcome(**overrides: Any) -> ToolOutcome:
    base: dict[str, Any] = {
        "call_id": "toolu_1", "name": "read_file", "title": "Read a.py", "kind": "read",
        "raw_input": {"path": "a.py"}, "text": "contents", "ok": True,
        "display": (TextDisplay("contents", "python"),), "locations": (Location("/w/a.py", 3),),
    }
    return ToolOutcome(**{**base, **overrides})


def assert_schema_valid(updates: list[dict[str, Any]]) -> None:
    schema = default_schema()
    for update in updates:
        assert schema.problems("SessionNotification", {"sessionId": "s1", "update": update}) == [], update


def test_a_conversation_replays_in_order_with_ids() -> None:
    rows = [
        prompt_row(1, TextPart("fix the bug")),
        row(2, "assistant", "Looking.", reasoning="think first", display={"message_id": "msg_a"}),
        tool_row(3, outcome()),
        row(4, "assistant", "Done."),
    ]
    updates = list(replay_updates(rows))
    assert [u["sessionUpdate"] for u in updates] == [
        "user_message_chunk", "agent_thought_chunk", "agent_message_chunk", "tool_call", "agent_message_chunk",
    ]
    assert updates[0] == {"sessionUpdate": "user_message_chunk", "content": {"type": "text", "text": "fix the bug"},
                          "messageId": "user-1"}
    assert updates[1]["content"] == {"type": "text", "text": "think first"}
    assert updates[1]["messageId"] == updates[2]["messageId"] == "msg_a"
    assert updates[4]["messageId"] == "agent-4"  # no stored message id: derived from the row
    assert_schema_valid(updates)


def test_a_tool_call_arrives_final_in_one_update() -> None:
    [update] = replay_updates([tool_row(3, outcome(raw_output={"bytes": 8}))])
    assert update == {
        "sessionUpdate": "tool_call", "toolCallId": "toolu_1", "title": "Read a.py", "name": "read_file",
        "kind": "read", "status": "completed", "rawInput": {"path": "a.py"},
        "locations": [{"path": "/w/a.py", "line": 3}],
        "content": [{"type": "content", "content": {"type": "text", "text": "```python\ncontents\n```"}}],
        "rawOutput": {"bytes": 8},
    }
    assert_schema_valid([update])


def test_a_failed_call_replays_failed_and_a_terminal_as_its_text() -> None:
    failed = outcome(call_id="toolu_2", name="terminal", title="Run make", kind="execute", text="make: error",
                     ok=False, display=(TerminalDisplay("term-9"),), locations=())
    [update] = replay_updates([tool_row(5, failed)])
    assert update["status"] == "failed"
    assert update["content"] == [{"type": "content", "content": {"type": "text", "text": "```\nmake: error\n```"}}]
    assert "locations" not in update
    assert "terminalId" not in str(update)  # the client's terminal is gone after the turn
    assert_schema_valid([update])


def test_a_diff_replays_as_a_diff() -> None:
    edit = outcome(kind="edit", display=(DiffDisplay("/w/a.py", None, "x = 1\n"), DiffDisplay("/w/b.py", "a", "b")))
    [update] = replay_updates([tool_row(6, edit)])
    assert update["content"] == [
        {"type": "diff", "path": "/w/a.py", "newText": "x = 1\n"},
        {"type": "diff", "path": "/w/b.py", "oldText": "a", "newText": "b"},
    ]
    assert_schema_valid([update])


def test_a_plan_call_is_followed_by_the_plan() -> None:
    plan = (PlanEntry("step one", "completed", "high"), PlanEntry("step two"))
    updates = list(replay_updates([tool_row(7, outcome(name="todo", kind="think", plan=plan))]))
    assert [u["sessionUpdate"] for u in updates] == ["tool_call", "plan"]
    assert updates[1]["entries"] == [
        {"content": "step one", "priority": "high", "status": "completed"},
        {"content": "step two", "priority": "medium", "status": "pending"},
    ]
    assert_schema_valid(updates)


def test_an_empty_plan_is_still_replayed() -> None:
    updates = list(replay_updates([tool_row(7, outcome(plan=()))]))
    assert updates[-1] == {"sessionUpdate": "plan", "entries": []}


@pytest.mark.parametrize(
    ("part", "block"),
    [
        (TextPart("hi"), {"type": "text", "text": "hi"}),
        (ImagePart("image/png", "iVBORw0KGgo="), {"type": "image", "mimeType": "image/png", "data": "iVBORw0KGgo="}),
        (LinkPart("file:///w/a.py", "a.py", size=12),
         {"type": "resource_link", "uri": "file:///w/a.py", "name": "a.py", "size": 12}),
        (ResourcePart("file:///w/n.md", "text/markdown", "# N"),
         {"type": "resource", "resource": {"uri": "file:///w/n.md", "mimeType": "text/markdown", "text": "# N"}}),
        (ResourcePart("file:///w/b.bin", blob="AAE="), {"type": "resource", "resource": {"uri": "file:///w/b.bin",
                                                                                          "blob": "AAE="}}),
        (ResourcePart("file:///w/e"), {"type": "resource", "resource": {"uri": "file:///w/e", "text": ""}}),
    ],
    ids=["text", "image", "link", "resource-text", "resource-blob", "resource-empty"],
)
def test_prompt_parts_replay_as_the_blocks_sent(part: PromptPart, block: dict[str, Any]) -> None:
    [update] = replay_updates([prompt_row(1, part)])
    assert update["content"] == block
    assert_schema_valid([update])


def test_a_multi_part_prompt_shares_one_message_id() -> None:
    updates = list(replay_updates([prompt_row(9, TextPart("see"), LinkPart("file:///w/a.py", "a.py"))]))
    assert [u["messageId"] for u in updates] == ["user-9", "user-9"]


def test_a_prompt_without_a_display_record_replays_its_plain_text() -> None:
    [update] = replay_updates([row(1, "user", "from an old build")])
    assert update["content"] == {"type": "text", "text": "from an old build"}


def test_an_unknown_stored_part_becomes_a_placeholder_text() -> None:
    rows = [row(1, "user", "x", display={"prompt": [{"type": "hologram"}, {"type": "image", "colour": "red"}]})]
    assert [u["content"] for u in replay_updates(rows)] == [
        {"type": "text", "text": "[hologram content]"},
        {"type": "text", "text": "[image content]"},
    ]


def test_empty_replies_and_other_roles_produce_nothing() -> None:
    rows = [row(1, "assistant", "", reasoning=""), row(2, "system", "You are..."), row(3, "assistant", "")]
    assert list(replay_updates(rows)) == []


def test_a_bare_tool_row_replays_with_defaults() -> None:
    [update] = replay_updates([row(4, "tool", "out", display=None)])
    assert update["toolCallId"] == "call-4"
    assert update["title"] == "tool"
    assert update["kind"] == "other"
    assert update["status"] == "failed"  # no stored status: not known to have completed
    assert update["content"] == []
    assert_schema_valid([update])


# -- session/list entries -----------------------------------------------------------------------


def session(**overrides: Any) -> SessionRecord:
    defaults: dict[str, Any] = {f.name: None for f in dataclasses.fields(SessionRecord)}
    defaults.update(id="s1", source="acp", model_config={}, started_at=0.0, updated_at=0.0, message_count=0,
                    tool_call_count=0, input_tokens=0, output_tokens=0, cache_read_tokens=0, cache_write_tokens=0,
                    reasoning_tokens=0, api_call_count=0, estimated_cost_usd=0.0, additional_directories=[],
                    archived=False)
    defaults.update(overrides)
    return SessionRecord(**defaults)


@pytest.mark.parametrize(
    ("epoch", "text"),
    [(0, "1970-01-01T00:00:00Z"), (1_700_000_000.5, "2023-11-14T22:13:20.500000Z")],
)
def test_iso_time_is_utc_with_a_z(epoch: float, text: str) -> None:
    assert iso_time(epoch) == text


def test_session_info_minimal_and_full() -> None:
    assert session_info(session()) == {"sessionId": "s1", "cwd": "/", "updatedAt": "1970-01-01T00:00:00Z"}
    full = session_info(session(cwd="/w", title="Fix it", additional_directories=["/x", "/y"], updated_at=60))
    assert full == {"sessionId": "s1", "cwd": "/w", "updatedAt": "1970-01-01T00:01:00Z", "title": "Fix it",
                    "additionalDirectories": ["/x", "/y"]}
    schema = default_schema()
    assert schema.problems("ListSessionsResponse", {"sessions": [session_info(session()), full]}) == []
