"""Nothing but newline-delimited JSON-RPC ever reaches the server's stdout (DESIGN.md invariant 1).

The server is spawned on raw pipes and driven through a noisy session: DEBUG logging, Python's
development mode (warnings on, asyncio debug), an unreadable permissions file, malformed input,
and a shell command that prints to its own stdout. Every byte on stdout must still be protocol.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.support.acp_harness import TRUST_ALL, RawAgent, raw_agent, write_config
from tests.support.fake_anthropic import FakeAnthropic, text_reply, tool_reply

NOISY_COMMAND = 'echo hello; python3 -c "print(1)"'


def agent_request(agent: RawAgent, method: str) -> dict[str, Any] | None:
    return next((m for m in agent.messages if isinstance(m, dict) and m.get("method") == method and "id" in m), None)


@pytest.mark.anyio
async def test_stdout_carries_only_json_rpc_while_everything_else_goes_to_stderr(
    tmp_path: Path, fake_anthropic: FakeAnthropic
) -> None:
    home = tmp_path / "hermes-home"
    (home / "acp-hermes").mkdir(parents=True)
    (home / "acp-hermes" / "permissions.yaml").write_text("projects: [unclosed\n", encoding="utf-8")
    write_config(home, TRUST_ALL)  # the subdirectory hint is logged
    fake_anthropic.script(
        tool_reply("terminal", {"command": NOISY_COMMAND, "workdir": "sub"}, text="Running it."),
        text_reply("It printed hello and 1."),
    )
    fake_anthropic.script_auxiliary(text_reply("A title"))
    env = {"PYTHONDEVMODE": "1", "PYTHONWARNINGS": "always"}
    async with raw_agent(tmp_path, fake_anthropic, env=env, home=home) as agent:
        workspace = tmp_path / "workspace"
        (workspace / "sub").mkdir()
        (workspace / "sub" / "AGENTS.md").write_text("Sub-project notes.\n", encoding="utf-8")

        init = await agent.request("initialize", {"protocolVersion": 1, "clientCapabilities": {
            "fs": {"readTextFile": False, "writeTextFile": False}, "terminal": False}})
        assert init["result"]["protocolVersion"] == 1
        await agent.write(b"{not json\n")
        await agent.send({"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": "nobody"}})
        new = await agent.request("session/new", {"cwd": str(workspace), "mcpServers": []})
        sid = new["result"]["sessionId"]

        await agent.send({"jsonrpc": "2.0", "id": "turn", "method": "session/prompt",
                          "params": {"sessionId": sid, "prompt": [{"type": "text", "text": "run the noisy thing"}]}})
        permission = await agent.wait_for(lambda: agent_request(agent, "session/request_permission"))
        allow = next(o for o in permission["params"]["options"] if o["kind"] == "allow_once")
        await agent.send({"jsonrpc": "2.0", "id": permission["id"],
                          "result": {"outcome": {"outcome": "selected", "optionId": allow["optionId"]}}})
        answer = await agent.wait_for(lambda: agent.response("turn"), timeout=30)
        assert answer["result"]["stopReason"] == "end_turn"
        await agent.wait_for(lambda: any(
            isinstance(m, dict) and m.get("method") == "session/update"
            and m["params"]["update"]["sessionUpdate"] == "session_info_update" for m in agent.messages))
    assert agent.process.returncode == 0

    stdout = agent.stdout_bytes
    assert stdout.endswith(b"\n")
    for line in stdout.splitlines():
        message = json.loads(line)  # every line is one JSON document...
        assert isinstance(message, dict) and message.get("jsonrpc") == "2.0", line  # ...of JSON-RPC 2.0
    finished = [m["params"]["update"] for m in agent.messages
                if m.get("method") == "session/update" and m["params"]["update"].get("status") == "completed"]
    assert any("hello" in json.dumps(update) for update in finished)  # the command ran; its output went via ACP

    stderr = agent.stderr_path.read_text(encoding="utf-8", errors="replace")
    assert " DEBUG " in stderr and "subdirectory hint loaded" in stderr
    assert " WARNING " in stderr
    assert "is not valid YAML" in stderr and "malformed JSON" in stderr
    assert "session/cancel for unknown session" in stderr
