"""What editors show agrees with itself (issue 16): the context gauge after any turn and after a
reload, a call cut off by a kill replayed as it was shown, permission requests that repeat the
call's title, kind and locations, a command's output for clients that show a terminal only by its
id, the plan once per change, and a stderr that carries no routine log lines.

Everything runs through the real stdio server; every message is checked against the ACP schema.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest

from acp_hermes.testing.scripted_model import Usage
from tests.support.acp_harness import EditorClient, PromptTask, cancel_and_wait, raw_agent, running_agent
from tests.support.fake_anthropic import (
    FakeAnthropic,
    error_reply,
    slow_text_reply,
    text_reply,
    tool_calls_reply,
    tool_reply,
)
from tests.support.tool_checks import check_tool_calls

pytestmark = pytest.mark.anyio

MEASURED = Usage(input_tokens=5_000, output_tokens=40)  # what the model reports for the first turn
SHOWN = ("title", "kind", "locations")


def gauge(agent: Any, sid: str) -> int:
    """What the editor's context gauge reads now: the last ``usage_update``."""
    return int(agent.updates(sid, "usage_update")[-1]["used"])


async def test_the_gauge_keeps_the_context_after_a_failed_and_a_cancelled_turn_and_a_reload(
    tmp_path: Path, fake_anthropic: FakeAnthropic
) -> None:
    fake_anthropic.script(
        text_reply("Measured.", usage=MEASURED),
        error_reply(400, message="messages: something the API disliked"),
        slow_text_reply(200, 0.05),
    )
    fake_anthropic.script_auxiliary(text_reply("Gauge"))
    async with running_agent(tmp_path, fake_anthropic) as agent:
        sid = await agent.new_session()
        assert await agent.prompt(sid, "first") == "end_turn"
        after_normal = gauge(agent, sid)
        assert after_normal == MEASURED.input_tokens + MEASURED.output_tokens

        assert await agent.prompt(sid, "this one fails") == "end_turn"  # the model refused the request
        after_failure = gauge(agent, sid)
        assert after_failure > after_normal  # the failed prompt is in the context now, and nothing left it

        task = PromptTask(agent, sid)
        shown = len(agent.updates(sid, "agent_message_chunk"))
        async with anyio.create_task_group() as group:
            group.start_soon(task.run, "this one is cancelled")
            await agent.wait_for_update(sid, "agent_message_chunk", count=shown + 2)
            assert await cancel_and_wait(agent, task) == "cancelled"
        after_cancel = gauge(agent, sid)
        assert after_cancel > after_failure  # its prompt and the part of the answer shown are kept too

    async with running_agent(tmp_path, fake_anthropic) as reloaded:
        await reloaded.conn.load_session(cwd=str(reloaded.workspace), session_id=sid, mcp_servers=[])
        await reloaded.wait_for_update(sid, "usage_update")
        assert gauge(reloaded, sid) == after_cancel  # the same figure a reload computes from what was stored


async def test_load_and_resume_show_the_context_the_last_turn_measured(
    tmp_path: Path, fake_anthropic: FakeAnthropic
) -> None:
    fake_anthropic.script(tool_reply("read_file", {"path": "a.txt"}, id="toolu_read"),
                          text_reply("It says hello.", usage=MEASURED))
    fake_anthropic.script_auxiliary(text_reply("Reading a.txt"))
    async with running_agent(tmp_path, fake_anthropic) as agent:
        (agent.workspace / "a.txt").write_text("hello\n")
        sid = await agent.new_session()
        assert await agent.prompt(sid, "what does a.txt say?") == "end_turn"
        after_turn = gauge(agent, sid)
        assert after_turn == MEASURED.input_tokens + MEASURED.output_tokens

    async with running_agent(tmp_path, fake_anthropic) as loaded:
        await loaded.conn.load_session(cwd=str(loaded.workspace), session_id=sid, mcp_servers=[])
        await loaded.wait_for_update(sid, "usage_update")
        assert gauge(loaded, sid) == after_turn
    async with running_agent(tmp_path, fake_anthropic) as resumed:
        await resumed.conn.resume_session(session_id=sid, cwd=str(resumed.workspace))
        await resumed.wait_for_update(sid, "usage_update")
        assert gauge(resumed, sid) == after_turn


def raw_updates(agent: Any, kind: str) -> list[dict[str, Any]]:
    notes = [m for m in agent.messages if isinstance(m, dict) and m.get("method") == "session/update"]
    return [m["params"]["update"] for m in notes if m["params"]["update"]["sessionUpdate"] == kind]


async def test_calls_cut_off_by_a_kill_are_replayed_as_they_were_shown(
    tmp_path: Path, fake_anthropic: FakeAnthropic
) -> None:
    """An edit waiting for its approval and the command after it: the process dies, both are replayed
    with the title, kind and locations the user saw live (not as the tool's bare name)."""
    fake_anthropic.script(tool_calls_reply(("write_file", {"path": "notes.txt", "content": "x\n"}),
                                           ("terminal", {"command": "python3 test_calc.py"})))
    async with raw_agent(tmp_path, fake_anthropic) as agent:
        await agent.request("initialize", {"protocolVersion": 1, "clientCapabilities": {}})
        created = await agent.request("session/new", {"cwd": str(tmp_path / "workspace"), "mcpServers": []})
        sid = created["result"]["sessionId"]
        await agent.send({"jsonrpc": "2.0", "id": "turn", "method": "session/prompt",
                          "params": {"sessionId": sid, "prompt": [{"type": "text", "text": "write and test"}]}})
        await agent.wait_for(lambda: any(isinstance(m, dict) and m.get("method") == "session/request_permission"
                                         for m in agent.messages))
        live = {u["toolCallId"]: u for u in raw_updates(agent, "tool_call")}
        agent.process.kill()
        await agent.process.wait()
    assert [(u["title"], u["kind"]) for u in live.values()] == [("Write notes.txt", "edit"),
                                                                 ("Run python3 test_calc.py", "execute")]

    async with running_agent(tmp_path, fake_anthropic) as reloaded:
        await reloaded.conn.load_session(cwd=str(reloaded.workspace), session_id=sid, mcp_servers=[])
        replayed = {u["toolCallId"]: u for u in reloaded.updates(sid, "tool_call")}
    assert list(replayed) == list(live)
    for call_id, shown in live.items():
        assert {key: replayed[call_id].get(key) for key in SHOWN} == {key: shown.get(key) for key in SHOWN}
        assert replayed[call_id]["status"] == "failed" and replayed[call_id]["rawInput"] == shown["rawInput"]
    write = live[next(iter(live))]
    assert write["locations"] == [{"path": str((tmp_path / "workspace" / "notes.txt").resolve())}]


async def test_permission_requests_repeat_the_call_and_a_terminal_command_carries_its_output(
    tmp_path: Path, fake_anthropic: FakeAnthropic
) -> None:
    fake_anthropic.script(
        tool_reply("write_file", {"path": "notes.txt", "content": "hello from the file\n"}, id="toolu_write"),
        tool_reply("terminal", {"command": "cat notes.txt"}, id="toolu_cat"),
        text_reply("Done."),
    )
    fake_anthropic.script_auxiliary(text_reply("Notes"))
    client = EditorClient()  # approves every request once
    async with running_agent(tmp_path, fake_anthropic, client=client, terminal=True) as agent:
        sid = await agent.new_session()
        assert await agent.prompt(sid, "write a note and show it") == "end_turn"
        calls = check_tool_calls(agent, sid)
        created = agent.sent("terminal/create")

    write, cat = calls["toolu_write"], calls["toolu_cat"]
    for call in (write, cat):  # the approval names the call as the tool call does (its title may add why it asks)
        (asked,) = call.permission_requests
        assert asked["toolCall"]["title"].startswith(call.announced["title"])
        assert {key: asked["toolCall"].get(key) for key in ("kind", "locations")} == {
            key: call.announced.get(key) for key in ("kind", "locations")}
    assert write.permission_requests[0]["toolCall"]["locations"] == [
        {"path": str(agent.workspace / "notes.txt")}]
    assert write.permission_requests[0]["toolCall"]["content"] == write.content("diff")

    # The command as the user knows it titles the call; the terminal runs it inside the sandbox's wrapper.
    assert (cat.announced["title"], cat.announced["rawInput"]) == ("Run cat notes.txt", {"command": "cat notes.txt"})
    (request,) = created
    assert request["params"]["args"][-1] == "cat notes.txt"
    # Zed shows the terminal; a client that shows terminal content only by its id (acpx) reads the
    # output from rawOutput, which Zed shows only for a call without content.
    assert [item["type"] for item in cat.content()] == ["terminal", "content"]
    assert cat.text() == "exit code 0"
    assert cat.final["rawOutput"]["output"] == "hello from the file\n"
    assert cat.final["rawOutput"]["exit_code"] == 0


async def test_the_plan_goes_out_once_per_change_and_not_again_as_raw_output(
    tmp_path: Path, fake_anthropic: FakeAnthropic
) -> None:
    todos = [
        {"id": "1", "content": "Read the code", "status": "completed"},
        {"id": "2", "content": "Fix the bug", "status": "in_progress"},
    ]
    fake_anthropic.script(
        tool_reply("todo", {"todos": todos}, id="toolu_write"),
        tool_reply("todo", {}, id="toolu_read"),  # reads the list: nothing changed
        tool_reply("todo", {"todos": [{"id": "2", "status": "completed"}], "merge": True}, id="toolu_merge"),
        text_reply("All done."),
    )
    fake_anthropic.script_auxiliary(text_reply("Plan"))
    async with running_agent(tmp_path, fake_anthropic) as agent:
        sid = await agent.new_session()
        assert await agent.prompt(sid, "plan and do it") == "end_turn"
        calls = check_tool_calls(agent, sid)
        plans = agent.updates(sid, "plan")

    assert [[entry["status"] for entry in plan["entries"]] for plan in plans] == [
        ["completed", "in_progress"], ["completed", "completed"]]
    for call in calls.values():
        assert "rawOutput" not in call.final  # the list is not sent a second time as JSON
        assert "Plan (" in call.text()  # a client without a plan view still reads the list


async def test_a_normal_turn_writes_nothing_to_stderr_and_the_log_file_keeps_the_info_lines(
    tmp_path: Path, fake_anthropic: FakeAnthropic
) -> None:
    """agent-shell shows every stderr line to the user as a notice: routine INFO lines stay in the log file."""
    fake_anthropic.script(text_reply("Hello."))
    fake_anthropic.script_auxiliary(text_reply("Greeting"))
    async with running_agent(tmp_path, fake_anthropic, env={"ACP_HERMES_LOG_LEVEL": ""}) as agent:
        sid = await agent.new_session()
        assert await agent.prompt(sid, "hello") == "end_turn"
        await agent.wait_for_update(sid, "session_info_update")
    stderr = "".join(path.read_text(encoding="utf-8") for path in tmp_path.glob("agent-stderr-*.log"))
    assert stderr == ""
    logged = (tmp_path / "hermes-home" / "acp-hermes" / "logs" / "acp-hermes.log").read_text(encoding="utf-8")
    assert " INFO " in logged and "serving ACP on stdio" in logged and "turn ended (end_turn)" in logged
