"""``session/cancel`` in the middle of a tool call, through the real stdio server.

Cancelling while the user is being asked, or while a command runs (a local subprocess or the
editor's terminal), makes the prompt return ``cancelled`` promptly: nothing unapproved runs, the
command's whole process group is gone, the client terminal is killed and released, the call ends
``failed`` and the session takes the next prompt normally (with a valid history).
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import anyio
import pytest

from acp_hermes.core.loop import CANCELLED_RESULT
from tests.support.acp_harness import (
    AgentProcess,
    EditorClient,
    PromptTask,
    cancel_and_wait,
    choose,
    running_agent,
    write_config,
)
from tests.support.fake_anthropic import FakeAnthropic, text_reply, tool_reply
from tests.support.tool_checks import check_tool_calls, tool_result

pytestmark = pytest.mark.anyio

SLOW_COMMAND = "echo pid=$$; sleep 30; touch marker"


def group_alive(pgid: int) -> bool:
    """Whether any live (non-zombie) process is still in process group ``pgid``."""
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if fields[0] != "Z" and int(fields[2]) == pgid:
            return True
    return False


async def test_cancel_while_a_permission_request_is_pending(tmp_path: Path, fake_anthropic: FakeAnthropic) -> None:
    fake_anthropic.script(
        tool_reply("write_file", {"path": "never.txt", "content": "x\n"}, id="toolu_held"),
        text_reply("Back again."),
    )
    fake_anthropic.script_auxiliary(text_reply("Cancel"))
    client = EditorClient(hold_permissions=True)
    async with running_agent(tmp_path, fake_anthropic, client=client) as agent:
        sid = await agent.new_session()
        task = PromptTask(agent, sid)
        async with anyio.create_task_group() as group:
            group.start_soon(task.run, "write it")
            with anyio.fail_after(10):
                await client.permission_asked.wait()
            # The turn ends without waiting for the client's answer to the pending request...
            assert await cancel_and_wait(agent, task) == "cancelled"
            # ...which then arrives ("cancelled", as the protocol requires) and changes nothing.
            client.release_permission.set()
        calls = check_tool_calls(agent, sid)
        assert calls["toolu_held"].statuses == ["pending", "failed"]
        assert not (agent.workspace / "never.txt").exists()
        assert len(fake_anthropic.requests) == 1  # the model was not asked to continue the cancelled turn

        assert await agent.prompt(sid, "are you there?") == "end_turn"
        assert agent.agent_text(sid) == "Back again."
    assert tool_result(fake_anthropic, "toolu_held") == (CANCELLED_RESULT, True)


async def test_cancel_while_a_local_command_runs_kills_its_process_group(
    tmp_path: Path, fake_anthropic: FakeAnthropic
) -> None:
    fake_anthropic.script(
        tool_reply("terminal", {"command": SLOW_COMMAND}, id="toolu_slow"),
        text_reply("Still here."),
    )
    fake_anthropic.script_auxiliary(text_reply("Cancel command"))
    write_config(tmp_path / "hermes-home", "sandbox: off\n")  # host pids: the sandboxed case is in test_sandbox
    async with running_agent(tmp_path, fake_anthropic, client=EditorClient(policy=choose("allow_once"))) as agent:
        sid = await agent.new_session()
        task = PromptTask(agent, sid)
        async with anyio.create_task_group() as group:
            group.start_soon(task.run, "wait a while")
            await agent.wait_for(lambda: _shown_pid(agent, sid) is not None)
            pgid = _shown_pid(agent, sid)
            assert pgid is not None and group_alive(pgid)
            assert await cancel_and_wait(agent, task) == "cancelled"
        assert not group_alive(pgid)  # the shell and its sleep are gone, so `touch marker` can never run
        assert not (agent.workspace / "marker").exists()
        calls = check_tool_calls(agent, sid)
        assert calls["toolu_slow"].status == "failed"

        assert await agent.prompt(sid, "and now?") == "end_turn"
        assert agent.agent_text(sid) == "Still here."
    assert tool_result(fake_anthropic, "toolu_slow") == (CANCELLED_RESULT, True)


async def test_cancel_while_an_editor_terminal_runs_kills_and_releases_it(
    tmp_path: Path, fake_anthropic: FakeAnthropic
) -> None:
    fake_anthropic.script(
        tool_reply("terminal", {"command": SLOW_COMMAND}, id="toolu_slow"),
        text_reply("Ready."),
    )
    fake_anthropic.script_auxiliary(text_reply("Cancel terminal"))
    client = EditorClient(policy=choose("allow_once"))
    async with running_agent(tmp_path, fake_anthropic, client=client, terminal=True) as agent:
        sid = await agent.new_session()
        task = PromptTask(agent, sid)
        async with anyio.create_task_group() as group:
            group.start_soon(task.run, "wait in a terminal")
            await agent.wait_for(lambda: bool(agent.sent("terminal/wait_for_exit")))
            (terminal_id, terminal), = client.terminals.items()
            assert await cancel_and_wait(agent, task) == "cancelled"
        await agent.wait_for(lambda: terminal_id in client.released)
        assert client.killed == [terminal_id]
        assert terminal.process.returncode is not None
        assert not group_alive(terminal.process.pid)
        assert not (agent.workspace / "marker").exists()
        calls = check_tool_calls(agent, sid)
        assert calls["toolu_slow"].status == "failed"
        assert {"type": "terminal", "terminalId": terminal_id} in [
            item for update in calls["toolu_slow"].updates for item in update.get("content") or []
        ]

        assert await agent.prompt(sid, "again") == "end_turn"
    assert tool_result(fake_anthropic, "toolu_slow") == (CANCELLED_RESULT, True)
    assert list((tmp_path / "hermes-home" / "acp-hermes" / "terminals").iterdir()) == []  # its launch script went too


def _shown_pid(agent: AgentProcess, session_id: str) -> int | None:
    """The shell pid the slow command printed into its live tool call output."""
    for update in agent.updates(session_id, "tool_call_update"):
        for item in update.get("content") or []:
            match = re.search(r"pid=(\d+)", item.get("content", {}).get("text", ""))
            if match:
                return int(match.group(1))
    return None


def test_group_alive_sees_this_process() -> None:
    assert group_alive(os.getpgid(0))
