"""No interruption kills a session (DESIGN.md invariant 5).

Each case interrupts a turn for real (the editor quits, the process is killed, the model's stream
breaks off or is not a stream at all) and then shows the next prompt in that session succeeding
against a fake model that rejects a ``tool_use`` without its ``tool_result``, exactly as the real
API does, so a broken history could not go unnoticed.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest

from acp_hermes.testing.scripted_model import MessageReply, RawBody, StreamCut, TextBlock, ToolUseBlock
from acp_hermes_memory.session_db import SessionDB
from tests.integration.test_background_jobs import SANDBOXES, gone, sleep_token
from tests.integration.test_sandbox import running_with
from tests.support.acp_harness import RawAgent, allow_bypass_here, raw_agent, running_agent, write_config
from tests.support.fake_anthropic import DelegationRouter, FakeAnthropic, slow_text_reply, text_reply, tool_reply

INIT = {"protocolVersion": 1, "clientCapabilities": {}}
# Text, then a tool call whose arguments arrive in four pieces: eight events in, the call is half-streamed.
READ_CALL = [TextBlock("Reading it now.", chunks=2), ToolUseBlock("toolu_cut", "read_file", {"path": "a"}, chunks=4)]


async def open_session(agent: RawAgent, workspace: Path) -> str:
    await agent.request("initialize", INIT)
    created = await agent.request("session/new", {"cwd": str(workspace), "mcpServers": []})
    return str(created["result"]["sessionId"])


def updates(agent: RawAgent, kind: str) -> list[dict[str, Any]]:
    notes = [m for m in agent.messages if isinstance(m, dict) and m.get("method") == "session/update"]
    return [m["params"]["update"] for m in notes if m["params"]["update"]["sessionUpdate"] == kind]


async def start_prompt(agent: RawAgent, session_id: str, text: str, request_id: str = "turn") -> None:
    await agent.send({"jsonrpc": "2.0", "id": request_id, "method": "session/prompt",
                      "params": {"sessionId": session_id, "prompt": [{"type": "text", "text": text}]}})


async def continue_after_restart(tmp_path: Path, fake: FakeAnthropic, session_id: str) -> list[dict[str, Any]]:
    """Load the session in a new process and prompt it once more; the replayed updates."""
    fake.script(text_reply("Picking up where we left off."))
    async with running_agent(tmp_path, fake) as agent:
        await agent.conn.load_session(cwd=str(agent.workspace), session_id=session_id, mcp_servers=[])
        replayed = agent.updates(session_id)
        assert await agent.prompt(session_id, "go on") == "end_turn"
        assert agent.agent_text(session_id).endswith("Picking up where we left off.")
    return replayed


@pytest.mark.anyio
async def test_an_editor_that_quits_mid_turn_leaves_a_session_that_goes_on(
    tmp_path: Path, fake_anthropic: FakeAnthropic
) -> None:
    fake_anthropic.script(slow_text_reply(200, 0.05, text="".join(f"part{n} " for n in range(200))))
    async with raw_agent(tmp_path, fake_anthropic) as agent:
        session_id = await open_session(agent, tmp_path / "workspace")
        await start_prompt(agent, session_id, "write a long answer")
        await agent.wait_for(lambda: len(updates(agent, "agent_message_chunk")) >= 3)
        assert agent.process.stdin is not None
        agent.process.stdin.close()  # the editor quits
        with anyio.fail_after(15):
            assert await agent.process.wait() == 0
    stderr = agent.stderr_path.read_text(errors="replace")
    assert "closed database" not in stderr and "Traceback" not in stderr
    assert agent.response("turn")["result"] == {"stopReason": "cancelled"}
    shown = "".join(u["content"]["text"] for u in updates(agent, "agent_message_chunk"))
    with SessionDB(tmp_path / "hermes-home" / "acp-hermes" / "state.db") as db:
        rows = db.messages(session_id)
    assert [r.role for r in rows] == ["user", "assistant"]
    assert rows[1].content == shown and rows[1].finish_reason == "cancelled"  # what the user saw, kept
    replayed = await continue_after_restart(tmp_path, fake_anthropic, session_id)
    assert any(u["sessionUpdate"] == "agent_message_chunk" and u["content"]["text"] == shown for u in replayed)


@pytest.mark.anyio
async def test_a_process_killed_while_a_tool_runs_leaves_a_session_that_goes_on(
    tmp_path: Path, fake_anthropic: FakeAnthropic
) -> None:
    fake_anthropic.script(tool_reply("terminal", {"command": "echo started; sleep 60"}, id="toolu_long"))
    home = tmp_path / "hermes-home"
    allow_bypass_here(home)
    async with raw_agent(tmp_path, fake_anthropic, home=home) as agent:
        session_id = await open_session(agent, tmp_path / "workspace")
        await agent.request("session/set_mode", {"sessionId": session_id, "modeId": "bypass"})
        await start_prompt(agent, session_id, "run the long job")
        running = lambda: any("started" in str(u.get("content")) for u in updates(agent, "tool_call_update"))  # noqa: E731
        await agent.wait_for(running, timeout=15)
        agent.process.kill()
        await agent.process.wait()
    with SessionDB(home / "acp-hermes" / "state.db") as db:
        assert [r.role for r in db.messages(session_id)] == ["user", "assistant"]  # the call has no result yet

    replayed = await continue_after_restart(tmp_path, fake_anthropic, session_id)
    (call,) = [u for u in replayed if u["sessionUpdate"] == "tool_call"]
    assert call["toolCallId"] == "toolu_long" and call["status"] == "failed"
    assert "Interrupted" in call["content"][0]["content"]["text"]
    results = [b for m in fake_anthropic.stream_requests[-1]["messages"] for b in m["content"]
               if isinstance(b, dict) and b.get("type") == "tool_result"]
    assert [(r["tool_use_id"], r["is_error"]) for r in results] == [("toolu_long", True)]


@pytest.mark.parametrize(
    ("reply", "message"),
    [
        (MessageReply(READ_CALL, cut=StreamCut(after_events=8)), "ended before the message was complete"),
        (MessageReply(READ_CALL, cut=StreamCut(after_events=8, drop=True)), "broke off"),
        (MessageReply([TextBlock("All of it.", chunks=3)], cut=StreamCut(after_events=7)),
         "ended before the message was complete"),
        (RawBody(), "not a Messages stream (text/html"),
    ],
    ids=["cut-inside-a-tool-call", "dropped-inside-a-tool-call", "no-message-stop", "html-page"],
)
@pytest.mark.anyio
async def test_a_broken_stream_ends_the_turn_with_a_message_and_the_next_prompt_works(
    tmp_path: Path, fake_anthropic: FakeAnthropic, reply: Any, message: str
) -> None:
    fake_anthropic.script(reply, text_reply("Working again."))
    async with running_agent(tmp_path, fake_anthropic) as agent:
        session_id = await agent.new_session()
        assert await agent.prompt(session_id, "read a") == "end_turn"
        text = agent.agent_text(session_id)
        assert message in text and "⚠️" in text
        announced = agent.updates(session_id, "tool_call")
        finals = [u["status"] for u in agent.updates(session_id, "tool_call_update") if u.get("status")]
        assert finals == ["failed"] * len(announced)  # a call shown before the break never hangs
        assert await agent.prompt(session_id, "try again") == "end_turn"
        assert agent.agent_text(session_id).endswith("Working again.")
    with SessionDB(agent.home / "acp-hermes" / "state.db") as db:
        answers = [r for r in db.messages(session_id) if r.role == "assistant"]
    *broken, last = answers
    assert [r.finish_reason for r in broken] == ["incomplete"] * len(broken)  # what was shown, marked as such
    assert all(not r.tool_calls for r in broken) and last.finish_reason == "end_turn"


@pytest.mark.anyio
@pytest.mark.parametrize("sandbox", SANDBOXES)
async def test_the_editor_quitting_ends_a_subagents_running_command_at_once(
    tmp_path: Path, fake_anthropic: FakeAnthropic, sandbox: str
) -> None:
    """A subagent's long command is stopped the moment stdin closes — all of it, also a process that
    moved to a session of its own, where a signal to the command's group does not reach (as bubblewrap's
    sandbox init does: a cancel that caught it starting used to leave the whole sandbox running)."""
    write_config(tmp_path / "hermes-home", f"sandbox: {sandbox}\nallow_unsandboxed_bypass: true\n")
    token = sleep_token()
    goal = "Run the long check"
    command = f"setsid sleep {token} & sleep {token}; wait"
    router = DelegationRouter().parent(tool_reply("delegate_task", {"goal": goal}, id="toolu_delegate"))
    router.child(goal, tool_reply("terminal", {"command": command, "timeout": 600}, id="toolu_child_run"))
    fake_anthropic.script(*router.items())
    async with raw_agent(tmp_path, fake_anthropic) as agent:
        session_id = await open_session(agent, tmp_path / "workspace")
        await agent.request("session/set_mode", {"sessionId": session_id, "modeId": "bypass"})
        await start_prompt(agent, session_id, "check it")
        await gone(lambda: len(running_with(token)) >= 3)  # the shell and both sleeps run (in the sandbox or not)
        assert agent.process.stdin is not None
        agent.process.stdin.close()  # the editor quits
        with anyio.fail_after(15):
            assert await agent.process.wait() == 0  # it exited by itself, not killed
        await gone(lambda: not running_with(token))
