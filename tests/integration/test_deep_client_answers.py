"""A client's answer nested too deep to parse, through the real stdio server on raw pipes: the
transport refuses to parse it, yet the request it answers (here session/request_permission) fails
at once instead of waiting for ever: the permission counts as cancelled, the tool does not run,
its call ends ``failed`` and the turn ends normally. Nothing is sent back for the answer itself.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from acp_hermes.adapter.wire import MAX_NESTING
from tests.support.acp_harness import RawAgent, raw_agent
from tests.support.fake_anthropic import FakeAnthropic, text_reply, tool_reply

pytestmark = pytest.mark.anyio


def permission_request(agent: RawAgent) -> dict[str, Any] | None:
    return next((m for m in agent.messages if isinstance(m, dict)
                 and m.get("method") == "session/request_permission"), None)


def tool_statuses(agent: RawAgent, call_id: str) -> list[str]:
    return [m["params"]["update"]["status"] for m in agent.messages
            if isinstance(m, dict) and m.get("method") == "session/update"
            and m["params"]["update"].get("toolCallId") == call_id and "status" in m["params"]["update"]]


async def test_an_answer_too_deep_to_parse_fails_the_permission_and_the_turn_ends(
    tmp_path: Path, fake_anthropic: FakeAnthropic
) -> None:
    fake_anthropic.script(
        tool_reply("write_file", {"path": "made.txt", "content": "made\n"}, id="toolu_write"),
        text_reply("It was not allowed."),
    )
    workspace = tmp_path / "workspace"
    async with raw_agent(tmp_path, fake_anthropic) as agent:
        init = await agent.request("initialize", {"protocolVersion": 1, "clientCapabilities": {}})
        assert "result" in init
        created = await agent.request("session/new", {"cwd": str(workspace), "mcpServers": []})
        sid = created["result"]["sessionId"]
        await agent.send({"jsonrpc": "2.0", "id": "turn", "method": "session/prompt",
                          "params": {"sessionId": sid, "prompt": [{"type": "text", "text": "make the file"}]}})
        asked = await agent.wait_for(lambda: permission_request(agent))
        allow = next(o["optionId"] for o in asked["params"]["options"] if o["kind"] == "allow_once")
        depth = MAX_NESTING + 10
        # What would allow the write, if it could be parsed: an extra field nested too deep.
        answer = (b'{"jsonrpc":"2.0","id":' + str(asked["id"]).encode()
                  + b',"result":{"outcome":{"outcome":"selected","optionId":"' + allow.encode()
                  + b'","_meta":{"deep":' + b"[" * depth + b"1" + b"]" * depth + b"}}}}\n")
        sent_before = len(agent.messages)
        await agent.write(answer)
        turn = await agent.wait_for(lambda: agent.response("turn"))
        replies = agent.messages[sent_before:]
    assert turn["result"]["stopReason"] == "end_turn"
    assert not (workspace / "made.txt").exists()  # the tool did not run
    assert tool_statuses(agent, "toolu_write")[-1] == "failed"
    assert not [m for m in replies if isinstance(m, dict) and "error" in m]  # the answer itself got no reply
    told = str(fake_anthropic.requests[-1]["messages"][-1]["content"])
    assert "cancelled" in told  # the model was told the permission request did not go through
