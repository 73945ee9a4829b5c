"""The ACP surface of the real stdio server: initialize, session/new, config options, modes, and errors.

Everything runs through ``python -m acp_hermes`` spawned over stdio; the harness validates every
message the agent sends against the official schema. Malformed input is sent as raw bytes.
"""

from __future__ import annotations

import os
import uuid
from pathlib import Path
from typing import Any

import pytest
from acp import PROTOCOL_VERSION, RequestError, text_block
from acp.schema import AuthCapabilities, ClientCapabilities, FileSystemCapabilities, Implementation

import acp_hermes
from tests.support.acp_harness import AgentProcess, raw_agent, running_agent, write_config
from tests.support.fake_anthropic import FakeAnthropic, text_reply

INVALID_PARAMS = -32602
RESOURCE_NOT_FOUND = -32002


def initialize_result(agent: AgentProcess) -> dict[str, Any]:
    return next(m["result"] for m in agent.sent() if "protocolVersion" in (m.get("result") or {}))


def response_index(agent: AgentProcess, predicate: Any) -> int:
    """Position in the agent's output of the first response whose result satisfies ``predicate``."""
    return next(i for i, m in enumerate(agent.sent()) if "result" in m and predicate(m["result"] or {}))


def update_index(agent: AgentProcess, session_id: str, kind: str) -> int:
    return next(
        i for i, m in enumerate(agent.sent())
        if m.get("method") == "session/update" and m["params"]["sessionId"] == session_id
        and m["params"]["update"]["sessionUpdate"] == kind
    )


def option(options: list[dict[str, Any]], option_id: str) -> dict[str, Any]:
    return next(o for o in options if o["id"] == option_id)


def dumped(response: Any) -> dict[str, Any]:
    return response.model_dump(mode="json", by_alias=True, exclude_none=True)


# ----------------------------------------------------------------------------------------------------
# initialize


@pytest.mark.anyio
async def test_initialize_tells_the_truth_about_the_agent(tmp_path: Path, fake_anthropic: FakeAnthropic) -> None:
    async with running_agent(tmp_path, fake_anthropic) as agent:
        result = initialize_result(agent)

    assert result["protocolVersion"] == 1
    assert result["agentInfo"]["name"] == "acp-hermes"
    assert result["agentInfo"]["title"]
    assert result["agentInfo"]["version"] == acp_hermes.__version__
    caps = result["agentCapabilities"]
    assert caps["promptCapabilities"] == {"image": True, "audio": False, "embeddedContext": True}
    assert caps["mcpCapabilities"] == {"http": True, "sse": True}  # stdio always; both remote transports tested
    assert caps["loadSession"] is True
    assert {"list", "resume", "close", "delete", "fork", "additionalDirectories"} <= set(caps["sessionCapabilities"])

    # No auth.terminal from this client: only the agent-type method, with Zed's legacy terminal-auth hint.
    methods = result["authMethods"]
    assert [m.get("type", "agent") for m in methods] == ["agent"]
    hint = methods[0]["_meta"]["terminal-auth"]
    assert Path(hint["command"]).is_file() and os.access(hint["command"], os.X_OK)
    assert hint["args"] == ["-m", "acp_hermes", "setup"]
    assert hint["label"]


@pytest.mark.anyio
async def test_terminal_auth_method_only_for_clients_that_support_it(
    tmp_path: Path, fake_anthropic: FakeAnthropic
) -> None:
    async with running_agent(tmp_path, fake_anthropic, initialize=False) as agent:
        response = await agent.conn.initialize(
            protocol_version=PROTOCOL_VERSION,
            client_capabilities=ClientCapabilities(
                fs=FileSystemCapabilities(read_text_file=False, write_text_file=False),
                auth=AuthCapabilities(terminal=True),
            ),
            client_info=Implementation(name="terminal-auth-client", version="1"),
        )
        methods = dumped(response)["authMethods"]

    terminal = [m for m in methods if m.get("type") == "terminal"]
    assert len(terminal) == 1
    assert terminal[0]["args"] == ["setup"]  # the client re-runs our command with `setup`
    assert any(m.get("type", "agent") == "agent" for m in methods)


# ----------------------------------------------------------------------------------------------------
# session/new


@pytest.mark.anyio
async def test_session_new_validates_cwd_and_announces_commands_after_answering(
    tmp_path: Path, fake_anthropic: FakeAnthropic
) -> None:
    write_config(tmp_path / "hermes-home", "models: [claude-opus-5-5, claude-haiku-5-5]\n")
    async with running_agent(tmp_path, fake_anthropic) as agent:
        with pytest.raises(RequestError) as relative:
            await agent.conn.new_session(cwd="relative/dir", mcp_servers=[])
        assert relative.value.code == INVALID_PARAMS
        with pytest.raises(RequestError) as missing:
            await agent.conn.new_session(cwd=str(tmp_path / "does-not-exist"), mcp_servers=[])
        assert missing.value.code == INVALID_PARAMS

        sid = await agent.new_session()
        await agent.wait_for_update(sid, "usage_update")
        result = agent.sent()[response_index(agent, lambda r: r.get("sessionId") == sid)]["result"]

        answered = response_index(agent, lambda r: r.get("sessionId") == sid)
        commands = update_index(agent, sid, "available_commands_update")
        usage = update_index(agent, sid, "usage_update")
        assert answered < commands < usage

    modes = result["modes"]
    assert modes["currentModeId"] == "default"
    assert {m["id"] for m in modes["availableModes"]} == {"default", "accept-edits", "plan", "bypass"}
    options = result["configOptions"]
    assert [o["id"] for o in options] == ["mode", "model", "thought_level"]
    assert [o["category"] for o in options] == ["mode", "model", "thought_level"]
    assert option(options, "mode")["currentValue"] == "default"
    model = option(options, "model")
    assert model["currentValue"] == "claude-sonnet-5-5"
    assert [o["value"] for o in model["options"]] == ["claude-sonnet-5-5", "claude-opus-5-5", "claude-haiku-5-5"]
    thinking = option(options, "thought_level")
    assert thinking["currentValue"] == "off"
    assert [o["value"] for o in thinking["options"]] == ["off", "low", "medium", "high"]
    names = {c["name"] for c in agent.updates(sid, "available_commands_update")[0]["availableCommands"]}
    assert {"help", "mode", "model", "thinking"} <= names


@pytest.mark.anyio
async def test_load_resume_and_fork_answer_before_their_commands_and_usage(
    tmp_path: Path, fake_anthropic: FakeAnthropic
) -> None:
    """JetBrains waits for a session's answer before it accepts the session's updates: only load's
    history replay (which the protocol puts inside the request) may come before it."""
    fake_anthropic.script(text_reply("first"))
    async with running_agent(tmp_path, fake_anthropic) as agent:
        sid = await agent.new_session()
        assert await agent.prompt(sid, "hello") == "end_turn"
        cwd = str(agent.workspace)
        checks = []
        for method in ("load_session", "resume_session", "fork_session"):
            before = len(agent.sent())
            response = await getattr(agent.conn, method)(cwd=cwd, session_id=sid, mcp_servers=[])
            target = getattr(response, "session_id", None) or sid
            await agent.wait_for(lambda t=target, b=before: any(
                m.get("method") == "session/update" and m["params"]["sessionId"] == t
                and m["params"]["update"]["sessionUpdate"] == "usage_update" for m in agent.sent()[b:]))
            sent = agent.sent()[before:]
            answered = next(i for i, m in enumerate(sent) if "result" in m)
            kinds = [(i, m["params"]["update"]["sessionUpdate"]) for i, m in enumerate(sent)
                     if m.get("method") == "session/update" and m["params"]["sessionId"] == target]
            early = {kind for i, kind in kinds if i < answered} - {"session_info_update"}  # load's title: either side
            late = {kind for i, kind in kinds if i > answered}
            checks.append((method, early, {"available_commands_update", "usage_update"} <= late))

    assert checks == [
        ("load_session", {"user_message_chunk", "agent_message_chunk"}, True),
        ("resume_session", set(), True),
        ("fork_session", set(), True),
    ]


@pytest.mark.anyio
async def test_config_options_apply_and_reach_the_model_request(tmp_path: Path, fake_anthropic: FakeAnthropic) -> None:
    write_config(
        tmp_path / "hermes-home",
        "models: [claude-opus-5-5]\nmax_output_tokens: 1000\nthinking_budgets: {low: 1024, medium: 3000, high: 5000}\n",
    )
    fake_anthropic.script(text_reply("first"), text_reply("second"))
    fake_anthropic.script_auxiliary(text_reply("A title"))
    async with running_agent(tmp_path, fake_anthropic) as agent:
        sid = await agent.new_session()
        conn = agent.conn

        by_model = dumped(await conn.set_config_option(config_id="model", session_id=sid, value="claude-opus-5-5"))
        assert [o["id"] for o in by_model["configOptions"]] == ["mode", "model", "thought_level"]
        assert option(by_model["configOptions"], "model")["currentValue"] == "claude-opus-5-5"

        by_thought = dumped(await conn.set_config_option(config_id="thought_level", session_id=sid, value="medium"))
        assert option(by_thought["configOptions"], "thought_level")["currentValue"] == "medium"
        assert option(by_thought["configOptions"], "model")["currentValue"] == "claude-opus-5-5"

        by_mode = dumped(await conn.set_config_option(config_id="mode", session_id=sid, value="accept-edits"))
        assert option(by_mode["configOptions"], "mode")["currentValue"] == "accept-edits"
        mode_update = await agent.wait_for_update(sid, "current_mode_update")
        assert mode_update["currentModeId"] == "accept-edits"

        for config_id, value in (("no_such_option", "x"), ("model", "gpt-nothing"), ("thought_level", "extreme"),
                                 ("mode", "yolo")):
            with pytest.raises(RequestError) as rejected:
                await conn.set_config_option(config_id=config_id, session_id=sid, value=value)
            assert rejected.value.code == INVALID_PARAMS, config_id

        assert await agent.prompt(sid, "think hard") == "end_turn"
        request = fake_anthropic.requests[0]
        assert request["model"] == "claude-opus-5-5"
        assert request["thinking"] == {"type": "enabled", "budget_tokens": 3000}
        assert request["max_tokens"] == 1000 + 3000
        await agent.wait_for_update(sid, "session_info_update")  # the title call, before the next turn

        await conn.set_config_option(config_id="thought_level", session_id=sid, value="off")
        assert await agent.prompt(sid, "quick one") == "end_turn"
        request = fake_anthropic.stream_requests[-1]
        assert "thinking" not in request
        assert request["max_tokens"] == 1000


@pytest.mark.anyio
async def test_set_session_mode_switches_the_mode(tmp_path: Path, fake_anthropic: FakeAnthropic) -> None:
    async with running_agent(tmp_path, fake_anthropic) as agent:
        sid = await agent.new_session()
        await agent.conn.set_session_mode(session_id=sid, mode_id="plan")
        update = await agent.wait_for_update(sid, "config_option_update")
        assert option(update["configOptions"], "mode")["currentValue"] == "plan"

        with pytest.raises(RequestError) as rejected:
            await agent.conn.set_session_mode(session_id=sid, mode_id="anything-goes")
        assert rejected.value.code == INVALID_PARAMS

        current = dumped(await agent.conn.set_config_option(config_id="thought_level", session_id=sid, value="low"))
        assert option(current["configOptions"], "mode")["currentValue"] == "plan"


# ----------------------------------------------------------------------------------------------------
# errors


@pytest.mark.anyio
async def test_unknown_session_id_is_resource_not_found_everywhere(
    tmp_path: Path, fake_anthropic: FakeAnthropic
) -> None:
    ghost = str(uuid.uuid4())
    async with running_agent(tmp_path, fake_anthropic) as agent:
        conn = agent.conn
        cwd = str(agent.workspace)
        calls = {
            "session/prompt": conn.prompt(session_id=ghost, prompt=[text_block("hello?")]),
            "session/set_config_option": conn.set_config_option(config_id="mode", session_id=ghost, value="plan"),
            "session/set_mode": conn.set_session_mode(session_id=ghost, mode_id="plan"),
            "session/load": conn.load_session(cwd=cwd, session_id=ghost, mcp_servers=[]),
            "session/resume": conn.resume_session(cwd=cwd, session_id=ghost),
            "session/close": conn.close_session(session_id=ghost),
            "session/fork": conn.fork_session(cwd=cwd, session_id=ghost),
            "session/delete": conn._conn.send_request("session/delete", {"sessionId": ghost}),
        }
        for method, call in calls.items():
            with pytest.raises(RequestError) as error:
                await call
            assert error.value.code == RESOURCE_NOT_FOUND, method

        await conn.cancel(session_id=ghost)  # a notification: ignored, nothing answered
        sid = await agent.new_session()
        assert sid != ghost
    assert not [m for m in agent.sent() if "error" in m and m.get("id") is None]


@pytest.mark.anyio
async def test_malformed_input_gets_json_rpc_errors_and_the_server_keeps_serving(tmp_path: Path) -> None:
    async with raw_agent(tmp_path, None) as agent:
        await agent.write(b"this is not json\n")
        parse_error = await agent.wait_for(lambda: agent.messages[0] if agent.messages else None)
        assert parse_error["error"]["code"] == -32700
        assert parse_error["id"] is None

        await agent.write(b'[{"jsonrpc": "2.0", "id": 7, "method": "initialize"}]\n')
        invalid = await agent.wait_for(lambda: agent.messages[1] if len(agent.messages) > 1 else None)
        assert invalid["error"]["code"] == -32600
        assert invalid["id"] is None

        wrong_params = await agent.request("session/new", {"mcpServers": []})
        assert wrong_params["error"]["code"] == INVALID_PARAMS

        unknown = await agent.request("session/teleport", {"sessionId": "x"})
        assert unknown["error"]["code"] == -32601

        answer = await agent.request("initialize", {"protocolVersion": 1, "clientCapabilities": {}})
        assert answer["result"]["protocolVersion"] == 1
        assert answer["result"]["agentInfo"]["name"] == "acp-hermes"
    assert agent.process.returncode == 0
