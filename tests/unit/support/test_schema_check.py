"""The per-method ACP wire validator: it must reject what the schema rejects and accept real traffic."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from acp import PROTOCOL_VERSION, text_block, update_agent_message_text, update_tool_call
from acp._transport import memory_transport_pair
from acp.agent.connection import AgentSideConnection
from acp.client.connection import ClientSideConnection
from acp.connection import StreamDirection, StreamEvent
from acp.helpers import start_tool_call
from acp.schema import (
    AllowedOutcome,
    InitializeResponse,
    NewSessionResponse,
    PermissionOption,
    PromptResponse,
    RequestPermissionResponse,
    ToolCallUpdate,
)

from tests.support.schema_check import SCHEMA_ENV, WireValidator, default_schema, sdk_schema_document

SESSION = "sess-1"


def client_request(validator: WireValidator, request_id: int, method: str, params: Any = None) -> None:
    message = {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params or {}}
    validator.observe(StreamEvent(StreamDirection.OUTGOING, message))


def agent_sends(validator: WireValidator, message: dict[str, Any]) -> None:
    validator.observe(StreamEvent(StreamDirection.INCOMING, message))


def update(payload: dict[str, Any]) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": SESSION, "update": payload}}


def answer(validator: WireValidator, method: str, result: Any, request_id: int = 7) -> None:
    client_request(validator, request_id, method)
    agent_sends(validator, {"jsonrpc": "2.0", "id": request_id, "result": result})


# ----------------------------------------------------------------------------------------------------
# notifications


def test_bogus_session_update_is_rejected() -> None:
    validator = WireValidator()
    agent_sends(validator, update({"sessionUpdate": "bogus"}))
    assert len(validator.errors) == 1
    assert "session/update" in validator.errors[0]
    with pytest.raises(AssertionError, match="1 ACP wire problem"):
        validator.assert_clean()


def test_tool_call_without_tool_call_id_names_the_missing_field() -> None:
    validator = WireValidator()
    agent_sends(validator, update({"sessionUpdate": "tool_call", "title": "Read a.py", "kind": "read"}))
    assert any("'toolCallId' is a required property" in error for error in validator.errors), validator.errors


def test_tool_call_with_unknown_status_is_rejected() -> None:
    validator = WireValidator()
    agent_sends(validator, update({"sessionUpdate": "tool_call", "toolCallId": "t1", "title": "x", "status": "weird"}))
    assert any("status" in error for error in validator.errors), validator.errors


VALID_UPDATES = [
    {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "hello"}},
    {"sessionUpdate": "agent_thought_chunk", "content": {"type": "text", "text": "thinking"}},
    {"sessionUpdate": "user_message_chunk", "content": {"type": "text", "text": "hi"}},
    {
        "sessionUpdate": "tool_call",
        "toolCallId": "t1",
        "title": "Edit /w/a.py",
        "kind": "edit",
        "status": "pending",
        "locations": [{"path": "/w/a.py", "line": 3}],
        "content": [{"type": "diff", "path": "/w/a.py", "oldText": "a", "newText": "b"}],
        "rawInput": {"path": "a.py"},
    },
    {
        "sessionUpdate": "tool_call_update",
        "toolCallId": "t1",
        "status": "completed",
        "content": [{"type": "content", "content": {"type": "text", "text": "done"}}],
    },
    {
        "sessionUpdate": "tool_call_update",
        "toolCallId": "t2",
        "content": [{"type": "terminal", "terminalId": "term-1"}],
    },
    {"sessionUpdate": "plan", "entries": [{"content": "step", "priority": "high", "status": "in_progress"}]},
    {"sessionUpdate": "current_mode_update", "currentModeId": "ask"},
    {"sessionUpdate": "available_commands_update", "availableCommands": [{"name": "help", "description": "Help"}]},
    {"sessionUpdate": "session_info_update", "title": "Fix the bug"},
    {"sessionUpdate": "usage_update", "used": 1200, "size": 200000},
]


@pytest.mark.parametrize("payload", VALID_UPDATES, ids=lambda payload: payload["sessionUpdate"])
def test_valid_session_updates_pass(payload: dict[str, Any]) -> None:
    validator = WireValidator()
    agent_sends(validator, update(payload))
    validator.assert_clean()
    assert validator.messages == [update(payload)]


def test_unknown_agent_notification_is_reported() -> None:
    validator = WireValidator()
    agent_sends(validator, {"jsonrpc": "2.0", "method": "session/shout", "params": {}})
    assert validator.errors == ["message 0: no schema definition for agent notification 'session/shout'"]


def test_extension_methods_are_only_envelope_checked() -> None:
    validator = WireValidator()
    agent_sends(validator, {"jsonrpc": "2.0", "method": "_hermes/progress", "params": {"anything": [1, 2]}})
    validator.assert_clean()


# ----------------------------------------------------------------------------------------------------
# agent -> client requests

PERMISSION_PARAMS = {
    "sessionId": SESSION,
    "toolCall": {"toolCallId": "t1", "title": "Run ls", "kind": "execute"},
    "options": [
        {"optionId": "allow", "name": "Allow once", "kind": "allow_once"},
        {"optionId": "reject", "name": "Reject", "kind": "reject_once"},
    ],
}

VALID_REQUESTS = [
    ("session/request_permission", PERMISSION_PARAMS),
    ("fs/read_text_file", {"sessionId": SESSION, "path": "/w/a.py", "line": 1, "limit": 20}),
    ("fs/write_text_file", {"sessionId": SESSION, "path": "/w/a.py", "content": "x = 1\n"}),
    ("terminal/create", {"sessionId": SESSION, "command": "ls", "args": ["-la"], "cwd": "/w", "outputByteLimit": 1000}),
    ("terminal/output", {"sessionId": SESSION, "terminalId": "term-1"}),
    ("terminal/wait_for_exit", {"sessionId": SESSION, "terminalId": "term-1"}),
    ("terminal/kill", {"sessionId": SESSION, "terminalId": "term-1"}),
    ("terminal/release", {"sessionId": SESSION, "terminalId": "term-1"}),
]


@pytest.mark.parametrize(("method", "params"), VALID_REQUESTS, ids=[method for method, _ in VALID_REQUESTS])
def test_valid_agent_requests_pass(method: str, params: dict[str, Any]) -> None:
    validator = WireValidator()
    agent_sends(validator, {"jsonrpc": "2.0", "id": 0, "method": method, "params": params})
    validator.assert_clean()


def test_permission_request_without_options_is_rejected() -> None:
    validator = WireValidator()
    params = {key: value for key, value in PERMISSION_PARAMS.items() if key != "options"}
    agent_sends(validator, {"jsonrpc": "2.0", "id": 0, "method": "session/request_permission", "params": params})
    assert any("'options' is a required property" in error for error in validator.errors), validator.errors


def test_terminal_create_args_must_be_a_list() -> None:
    validator = WireValidator()
    params = {"sessionId": SESSION, "command": "ls", "args": "-la"}
    agent_sends(validator, {"jsonrpc": "2.0", "id": 0, "method": "terminal/create", "params": params})
    assert any("args" in error for error in validator.errors), validator.errors


def test_agent_request_ids_must_be_unique() -> None:
    validator = WireValidator()
    for _ in range(2):
        agent_sends(
            validator, {"jsonrpc": "2.0", "id": 5, "method": "session/request_permission", "params": PERMISSION_PARAMS}
        )
    assert validator.errors == ["message 1 (session/request_permission): request id 5 reused"]


def test_agent_request_ids_must_be_strings_or_integers() -> None:
    validator = WireValidator()
    agent_sends(validator, {"jsonrpc": "2.0", "id": 1.5, "method": "terminal/output", "params": {}})
    assert any("request id must be a string or an integer" in error for error in validator.errors)


def test_envelope_problems_are_reported() -> None:
    validator = WireValidator()
    agent_sends(validator, {"jsonrpc": "1.0", "method": "session/update", "params": update(VALID_UPDATES[0])["params"]})
    agent_sends(validator, {"jsonrpc": "2.0", "weird": True})
    assert validator.errors == [
        "message 0: jsonrpc must be \"2.0\", got '1.0'",
        "message 1: unexpected top-level keys ['weird']",
        "message 1: neither a request, a notification nor a response",
    ]


# ----------------------------------------------------------------------------------------------------
# responses

CONFIG_OPTION = {
    "id": "model",
    "name": "Model",
    "type": "select",
    "currentValue": "sonnet",
    "options": [{"value": "sonnet", "name": "Sonnet"}, {"value": "opus", "name": "Opus"}],
}

VALID_RESPONSES = [
    ("initialize", {"protocolVersion": 1, "agentCapabilities": {"loadSession": True}, "authMethods": []}),
    ("authenticate", {}),
    ("session/new", {"sessionId": SESSION, "configOptions": [CONFIG_OPTION]}),
    ("session/load", {"configOptions": [CONFIG_OPTION]}),
    ("session/resume", {}),
    ("session/close", {}),
    ("session/delete", {}),
    ("session/list", {"sessions": [{"sessionId": SESSION, "cwd": "/w", "title": "Fix it"}], "nextCursor": None}),
    ("session/set_config_option", {"configOptions": [CONFIG_OPTION]}),
    ("session/set_mode", {}),
    ("session/prompt", {"stopReason": "end_turn"}),
    ("session/fork", {"sessionId": "sess-2"}),
]


@pytest.mark.parametrize(("method", "result"), VALID_RESPONSES, ids=[method for method, _ in VALID_RESPONSES])
def test_valid_responses_pass(method: str, result: dict[str, Any]) -> None:
    validator = WireValidator()
    answer(validator, method, result)
    validator.assert_clean()


def test_session_new_response_is_checked_against_new_session_response() -> None:
    validator = WireValidator()
    answer(validator, "session/new", {"configOptions": []})
    assert validator.errors == [
        "message 0 (session/new / NewSessionResponse): result/(root): 'sessionId' is a required property"
    ]


def test_session_fork_uses_the_new_session_shape() -> None:
    validator = WireValidator()
    answer(validator, "session/fork", {"modes": None})
    assert any("NewSessionResponse" in error and "sessionId" in error for error in validator.errors)


def test_prompt_response_with_unknown_stop_reason_fails() -> None:
    validator = WireValidator()
    answer(validator, "session/prompt", {"stopReason": "done"})
    assert len(validator.errors) == 1 and "PromptResponse" in validator.errors[0]


def test_response_to_unknown_method_is_reported() -> None:
    validator = WireValidator()
    answer(validator, "session/set_model", {})
    assert validator.errors == ["message 0: no schema definition for the response to 'session/set_model'"]


def test_error_responses_pass_when_well_formed() -> None:
    validator = WireValidator()
    client_request(validator, 3, "session/load", {"sessionId": "nope", "cwd": "/w", "mcpServers": []})
    agent_sends(validator, {"jsonrpc": "2.0", "id": 3, "error": {"code": -32002, "message": "Resource not found"}})
    agent_sends(validator, {"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": "Parse error"}})
    validator.assert_clean()


@pytest.mark.parametrize(
    ("error", "expected"),
    [
        ({"code": -32602}, "'message' is a required property"),
        ({"message": "bad"}, "'code' is a required property"),
        ({"code": "E1", "message": "bad"}, "error/code"),
    ],
)
def test_malformed_error_responses_fail(error: dict[str, Any], expected: str) -> None:
    validator = WireValidator()
    client_request(validator, 3, "session/prompt")
    agent_sends(validator, {"jsonrpc": "2.0", "id": 3, "error": error})
    assert any(expected in problem for problem in validator.errors), validator.errors


def test_response_with_both_result_and_error_fails() -> None:
    validator = WireValidator()
    client_request(validator, 1, "session/prompt")
    agent_sends(
        validator,
        {"jsonrpc": "2.0", "id": 1, "result": {"stopReason": "end_turn"}, "error": {"code": 1, "message": "x"}},
    )
    assert validator.errors == ["message 0: a response carries exactly one of result and error"]


def test_second_response_to_one_request_fails() -> None:
    validator = WireValidator()
    answer(validator, "session/prompt", {"stopReason": "end_turn"}, request_id=4)
    agent_sends(validator, {"jsonrpc": "2.0", "id": 4, "result": {"stopReason": "end_turn"}})
    assert validator.errors == ["message 1: second response to request id 4"]


def test_response_seen_before_its_request_is_checked_once_the_request_shows_up() -> None:
    validator = WireValidator()
    agent_sends(validator, {"jsonrpc": "2.0", "id": 9, "result": {}})
    with pytest.raises(AssertionError, match="response to unknown request id 9"):
        validator.assert_clean()
    client_request(validator, 9, "session/new")
    assert validator.errors == [
        "response #9 (session/new / NewSessionResponse): result/(root): 'sessionId' is a required property"
    ]


def test_schema_path_comes_from_the_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    schema = sdk_schema_document()
    schema["$defs"]["PromptResponse"]["required"] = ["stopReason", "usage"]
    stricter = tmp_path / "schema.json"
    stricter.write_text(json.dumps(schema), encoding="utf-8")
    default = default_schema()
    monkeypatch.setenv(SCHEMA_ENV, str(stricter))
    validator = WireValidator()
    answer(validator, "session/prompt", {"stopReason": "end_turn"})
    assert any("'usage' is a required property" in error for error in validator.errors)
    assert default is not validator.schema


# ----------------------------------------------------------------------------------------------------
# through a real ACP connection


class TinyAgent:
    """A minimal in-process agent: one prompt turn with a message, a tool call and a permission request."""

    def __init__(self, *, broken_new_session: bool = False) -> None:
        self.broken_new_session = broken_new_session
        self.conn: AgentSideConnection | None = None

    def on_connect(self, conn: AgentSideConnection) -> None:
        self.conn = conn

    async def initialize(self, protocol_version: int, **_: Any) -> InitializeResponse:
        return InitializeResponse(protocol_version=protocol_version)

    async def new_session(self, cwd: str, **_: Any) -> NewSessionResponse | dict[str, Any]:
        return {"modes": None} if self.broken_new_session else NewSessionResponse(session_id=SESSION)

    async def prompt(self, prompt: list[Any], session_id: str, **_: Any) -> PromptResponse:
        assert self.conn is not None
        await self.conn.session_update(session_id, update_agent_message_text("Looking."))
        await self.conn.session_update(session_id, start_tool_call("t1", "Run ls", kind="execute", status="pending"))
        await self.conn.request_permission(
            session_id=session_id,
            tool_call=ToolCallUpdate(tool_call_id="t1"),
            options=[PermissionOption(option_id="allow", name="Allow", kind="allow_once")],
        )
        await self.conn.session_update(session_id, update_tool_call("t1", status="completed"))
        return PromptResponse(stop_reason="end_turn")


class AllowingClient:
    async def request_permission(self, options: list[Any], session_id: str, tool_call: Any, **_: Any) -> Any:
        return RequestPermissionResponse(outcome=AllowedOutcome(outcome="selected", option_id=options[0].option_id))

    async def session_update(self, session_id: str, update: Any, **_: Any) -> None:
        return None


async def run_turn(agent: TinyAgent, validator: WireValidator) -> None:
    agent_end, client_end = memory_transport_pair()
    agent_conn = AgentSideConnection(agent, agent_end)
    client_conn = ClientSideConnection(AllowingClient(), client_end, observers=[validator.observe])
    try:
        await client_conn.initialize(protocol_version=PROTOCOL_VERSION)
        session = await client_conn.new_session(cwd="/w", mcp_servers=[])
        await client_conn.prompt(session_id=session.session_id, prompt=[text_block("hi")])
    finally:
        await client_conn.close()
        await agent_conn.close()


@pytest.mark.anyio
async def test_observer_validates_a_real_connection() -> None:
    validator = WireValidator()
    await run_turn(TinyAgent(), validator)
    validator.assert_clean()
    kinds = [message.get("method") or sorted(message.get("result") or {}) for message in validator.messages]
    assert kinds == [
        ["protocolVersion"],
        ["sessionId"],
        "session/update",
        "session/update",
        "session/request_permission",
        "session/update",
        ["stopReason"],
    ]


@pytest.mark.anyio
async def test_observer_catches_a_broken_response_on_a_real_connection() -> None:
    validator = WireValidator()
    with pytest.raises(Exception):  # noqa: B017 - the client SDK also rejects it; any failure type will do
        await run_turn(TinyAgent(broken_new_session=True), validator)
    assert any("NewSessionResponse" in error and "sessionId" in error for error in validator.errors), validator.errors
