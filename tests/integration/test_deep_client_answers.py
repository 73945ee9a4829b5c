"""A client's answer to one of our requests that cannot be used, through the real stdio server on raw
pipes. An answer nested too deep to parse is not parsed, yet the request it answers fails at once
instead of waiting for ever: a permission question (``session/request_permission``) fails its tool
call with a message that says why, for the user and the model alike, and the turn ends normally; a
form (``elicitation/create``) is asked in the chat instead. An error for an answer, or an answer of
no known shape, fails the permission question the same way. Nothing is sent back for an answer, and
the server keeps serving.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from acp_hermes.adapter.wire import MAX_NESTING
from tests.support.acp_harness import RawAgent, raw_agent
from tests.support.fake_anthropic import FakeAnthropic, text_reply, tool_reply

pytestmark = pytest.mark.anyio

DEPTH = MAX_NESTING + 10
TOO_DEEP = b"[" * DEPTH + b"1" + b"]" * DEPTH


def request_of(agent: RawAgent, method: str) -> dict[str, Any] | None:
    return next((m for m in agent.messages if isinstance(m, dict) and m.get("method") == method), None)


def call_updates(agent: RawAgent, call_id: str) -> list[dict[str, Any]]:
    return [m["params"]["update"] for m in agent.messages
            if isinstance(m, dict) and m.get("method") == "session/update"
            and m["params"]["update"].get("toolCallId") == call_id]


def shown_text(update: dict[str, Any]) -> str:
    return "".join(item["content"]["text"] for item in update.get("content") or [] if item.get("type") == "content")


async def open_session(agent: RawAgent, workspace: Path, capabilities: dict[str, Any]) -> str:
    assert "result" in await agent.request("initialize", {"protocolVersion": 1, "clientCapabilities": capabilities})
    created = await agent.request("session/new", {"cwd": str(workspace), "mcpServers": []})
    return str(created["result"]["sessionId"])


async def start_turn(agent: RawAgent, sid: str, text: str) -> None:
    await agent.send({"jsonrpc": "2.0", "id": "turn", "method": "session/prompt",
                      "params": {"sessionId": sid, "prompt": [{"type": "text", "text": text}]}})


def deep_allow(request_id: bytes, allow: bytes) -> bytes:
    """What would allow the write, if it could be parsed: an extra field nested too deep (after the id)."""
    return (b'{"jsonrpc":"2.0","id":' + request_id + b',"result":{"outcome":{"outcome":"selected","optionId":"'
            + allow + b'","_meta":{"deep":' + TOO_DEEP + b"}}}}\n")


def deep_allow_id_last(request_id: bytes, allow: bytes) -> bytes:
    """The same with the id after the deep result: it is found without parsing all the same."""
    return (b'{"jsonrpc":"2.0","result":{"outcome":{"outcome":"selected","optionId":"' + allow
            + b'","x":' + TOO_DEEP + b'}},"id":' + request_id + b"}\n")


def error_answer(request_id: bytes, allow: bytes) -> bytes:
    return (b'{"jsonrpc":"2.0","id":' + request_id
            + b',"error":{"code":-32603,"message":"Internal error","data":{"details":"the dialog crashed"}}}\n')


def shapeless_answer(request_id: bytes, allow: bytes) -> bytes:
    return b'{"jsonrpc":"2.0","id":' + request_id + b',"result":["' + allow + b'"]}\n'


ANSWERS = {  # how the editor answers, and the reason the user and the model are given
    "too-deep": (deep_allow, f"the answer was nested deeper than {MAX_NESTING} levels and could not be read"),
    "too-deep-id-last": (deep_allow_id_last,
                         f"the answer was nested deeper than {MAX_NESTING} levels and could not be read"),
    "error": (error_answer, "the dialog crashed"),
    "no-known-shape": (shapeless_answer, "its answer has no outcome of a known kind"),
}


@pytest.mark.parametrize("answer", list(ANSWERS))
async def test_a_permission_answer_that_cannot_be_used_fails_the_call_at_once_saying_why(
    tmp_path: Path, fake_anthropic: FakeAnthropic, answer: str
) -> None:
    fake_anthropic.script(
        tool_reply("write_file", {"path": "made.txt", "content": "made\n"}, id="toolu_write"),
        text_reply("It was not allowed."),
        text_reply("Still here."),
    )
    fake_anthropic.script_auxiliary(text_reply("Making a file"))
    workspace = tmp_path / "workspace"
    write, reason = ANSWERS[answer]
    expected = f"No answer to the permission question could be read from the editor ({reason}); the action did not run."
    async with raw_agent(tmp_path, fake_anthropic) as agent:
        sid = await open_session(agent, workspace, {})
        await start_turn(agent, sid, "make the file")
        asked = await agent.wait_for(lambda: request_of(agent, "session/request_permission"))
        allow = next(o["optionId"] for o in asked["params"]["options"] if o["kind"] == "allow_once")
        sent_before = len(agent.messages)
        await agent.write(write(json.dumps(asked["id"]).encode(), allow.encode()))
        turn = await agent.wait_for(lambda: agent.response("turn"))
        replies = agent.messages[sent_before:]
        assert turn["result"]["stopReason"] == "end_turn"
        assert not (workspace / "made.txt").exists()  # the tool did not run
        final = call_updates(agent, "toolu_write")[-1]
        assert final["status"] == "failed" and expected in shown_text(final)  # the user sees why
        told = fake_anthropic.stream_requests[1]["messages"][-1]["content"][0]
        assert told["is_error"] and told["content"] == expected  # and so does the model
        assert not [m for m in replies if isinstance(m, dict) and "error" in m]  # the answer itself got no reply

        again = await agent.request("session/prompt", {"sessionId": sid, "prompt": [{"type": "text", "text": "hi"}]})
        assert again["result"]["stopReason"] == "end_turn"  # the server keeps serving


async def test_a_form_answer_too_deep_to_parse_asks_in_the_chat_at_once(
    tmp_path: Path, fake_anthropic: FakeAnthropic
) -> None:
    fake_anthropic.script(
        tool_reply("clarify", {"question": "Which database?", "choices": ["Postgres", "SQLite"]}, id="toolu_ask"),
    )
    fake_anthropic.script_auxiliary(text_reply("Choosing a database"))
    async with raw_agent(tmp_path, fake_anthropic) as agent:
        sid = await open_session(agent, tmp_path / "workspace", {"elicitation": {"form": {}}})
        await start_turn(agent, sid, "set up storage")
        asked = await agent.wait_for(lambda: request_of(agent, "elicitation/create"))
        sent_before = len(agent.messages)
        await agent.write(b'{"jsonrpc":"2.0","id":' + json.dumps(asked["id"]).encode()
                          + b',"result":{"action":"accept","content":{"choice":"SQLite","x":' + TOO_DEEP + b"}}}\n")
        turn = await agent.wait_for(lambda: agent.response("turn"))
        replies = agent.messages[sent_before:]
    assert turn["result"]["stopReason"] == "end_turn"
    said = "".join(m["params"]["update"]["content"]["text"] for m in agent.messages
                   if isinstance(m, dict) and m.get("method") == "session/update"
                   and m["params"]["update"]["sessionUpdate"] == "agent_message_chunk")
    assert "Which database?" in said and "SQLite" in said  # asked again where the user can answer
    assert call_updates(agent, "toolu_ask")[-1]["status"] == "completed"
    assert len(fake_anthropic.stream_requests) == 1  # the deep "SQLite" was not taken as the answer
    assert not [m for m in replies if isinstance(m, dict) and "error" in m]
