"""Every kind of permission question the agent asks, through the real stdio server, is readable in a
client that shows options only by their kind (CodeCompanion labels them "Accept", "Reject"…): at most
one option of each kind, and the first, the one such a client's key runs, never deletes the user's work.

Each case makes the agent ask one or more kinds of question (an edit, a command, a read outside the
workspace, a memory and a skill write, input to and a stop of a background job, an export, a restore,
an MCP tool, a memory provider's tool, a review's held proposal, a command leaving the sandbox, a
subagent's edit), answering "allow once" to every one. The harness (``running_agent``) fails any test,
in this file or another, whose server sent two options of one kind; here each case also checks it
asked what it meant to.
"""

from __future__ import annotations

import shutil
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from tests.integration.test_background_jobs import sleep_token
from tests.integration.test_mcp import new_session, stdio_server
from tests.integration.test_memory_providers import install
from tests.integration.test_sandbox import needs_sandbox
from tests.support.acp_harness import EditorClient, kind_problems, running_agent, write_config
from tests.support.fake_anthropic import DelegationRouter, FakeAnthropic, text_reply, tool_reply
from tests.support.tool_checks import check_tool_calls

pytestmark = pytest.mark.anyio

# A case drives a server and returns the client that answered, and a fragment of each question's title
# it must have asked.
Case = Callable[[Path, FakeAnthropic], Awaitable[tuple[EditorClient, list[str]]]]


def skill(name: str) -> str:
    return f"---\nname: {name}\ndescription: Rotate the logs.\n---\n# {name}\n\nRun logrotate.\n"


async def tools_and_commands(tmp_path: Path, fake: FakeAnthropic) -> tuple[EditorClient, list[str]]:
    """An edit, a command, a read outside the workspace, memory and skill writes, a background job's
    input and stop; then ``/export`` and ``/rollback``."""
    outside = tmp_path / "outside.txt"
    outside.write_text("elsewhere\n")
    token = sleep_token()
    fake.script(
        tool_reply("write_file", {"path": "a.txt", "content": "agent\n"}, id="toolu_edit"),
        tool_reply("terminal", {"command": "touch made.txt"}, id="toolu_command"),
        tool_reply("read_file", {"path": str(outside)}, id="toolu_read"),
        tool_reply("memory", {"action": "add", "target": "memory", "content": "Logs rotate daily."}, id="toolu_mem"),
        tool_reply("skill_manage", {"action": "create", "name": "rotate-logs", "content": skill("rotate-logs")},
                   id="toolu_skill"),
        tool_reply("terminal", {"command": f"cat; sleep {token}", "background": True, "stdin": True}, id="toolu_job"),
        tool_reply("process", {"action": "write", "job_id": "job-1", "input": "hi\n"}, id="toolu_input"),
        tool_reply("process", {"action": "kill", "job_id": "job-1"}, id="toolu_stop"),
        text_reply("Done."),
    )
    fake.script_auxiliary(text_reply("Kinds"))
    client = EditorClient()
    async with running_agent(tmp_path, fake, client=client) as agent:
        sid = await agent.new_session()
        assert await agent.prompt(sid, "do the things") == "end_turn"
        assert await agent.prompt(sid, "/export notes.md") == "end_turn"
        assert await agent.prompt(sid, "/rollback 1") == "end_turn"
        check_tool_calls(agent, sid)
    return client, ["Write a.txt", "Run touch made.txt", f"Read {outside}", "Remember: Logs rotate daily.",
                    "Create skill: rotate-logs", "Run cat; sleep", "Send input to job-1", "Stop job-1",
                    "Export the conversation", "Roll back to checkpoint 1"]


async def mcp_tool(tmp_path: Path, fake: FakeAnthropic) -> tuple[EditorClient, list[str]]:
    fake.script(tool_reply("mcp__docs__write_note", {"path": str(tmp_path / "note.txt"), "text": "hi"}, id="toolu_w"),
                text_reply("ok"))
    client = EditorClient()
    async with running_agent(tmp_path, fake, client=client) as agent:
        sid = await new_session(agent, stdio_server())
        assert await agent.prompt(sid, "write a note") == "end_turn"
    return client, ["write_note (docs)"]


async def memory_provider_tool(tmp_path: Path, fake: FakeAnthropic) -> tuple[EditorClient, list[str]]:
    install(tmp_path / "hermes-home")
    fake.script(tool_reply("notebook_add", {"note": "Releases are cut on Fridays"}), text_reply("Noted."))
    fake.script_auxiliary(text_reply("A title"))
    client = EditorClient()
    async with running_agent(tmp_path, fake, client=client) as agent:
        sid = await agent.new_session()
        assert await agent.prompt(sid, "note the release day") == "end_turn"
    return client, ["notebook_add (notebook)"]


async def review_proposal(tmp_path: Path, fake: FakeAnthropic) -> tuple[EditorClient, list[str]]:
    """A background review's memory write is held in the default mode, then put to the user."""
    write_config(tmp_path / "hermes-home", "memory_nudge_interval: 2\nskill_nudge_interval: 0\n")
    fake.script(
        text_reply("Hello Ada."),
        text_reply("Tabs it is."),
        tool_reply("memory", {"action": "add", "target": "user", "content": "Ada prefers tabs."}, id="toolu_rev"),
        text_reply("Saved."),
        text_reply("Carrying on."),
    )
    fake.script_auxiliary(text_reply("Indentation"))
    client = EditorClient()
    async with running_agent(tmp_path, fake, client=client) as agent:
        sid = await agent.new_session()
        assert await agent.prompt(sid, "I am Ada") == "end_turn"
        assert await agent.prompt(sid, "I like tabs") == "end_turn"  # the second user turn: a memory review
        await agent.wait_for(lambda: any(u["toolCallId"] == "toolu_rev" and u.get("status") == "failed"
                                         for u in agent.updates(sid, "tool_call_update")))  # held
        held = next(u for u in agent.updates(sid, "tool_call_update") if u["toolCallId"] == "toolu_rev")
        shown = " ".join(c["content"]["text"] for c in held["content"] if c["type"] == "content")
        assert "Held for your approval" in shown and "Do not retry" not in shown  # the user's words, not the model's
        assert await agent.prompt(sid, "go on") == "end_turn"  # the proposal is put first
    return client, ["Proposed by a review"]


async def outside_the_sandbox(tmp_path: Path, fake: FakeAnthropic) -> tuple[EditorClient, list[str]]:
    fake.script(tool_reply("terminal", {"command": "touch asked-for", "outside_sandbox": True}, id="toolu_out"),
                text_reply("done"))
    client = EditorClient()
    async with running_agent(tmp_path, fake, client=client) as agent:
        sid = await agent.new_session()
        await agent.conn.set_session_mode(session_id=sid, mode_id="bypass")
        assert await agent.prompt(sid, "leave the sandbox") == "end_turn"
    return client, ["runs outside the sandbox"]


async def subagent_edit(tmp_path: Path, fake: FakeAnthropic) -> tuple[EditorClient, list[str]]:
    goal = "Write the child's file"
    router = DelegationRouter().parent(
        tool_reply("delegate_task", {"goal": goal}, id="toolu_delegate"),
        text_reply("The helper wrote it."),
    ).child(
        goal,
        tool_reply("write_file", {"path": "child.txt", "content": "from the child\n"}, id="toolu_child_write"),
        text_reply("written"),
    )
    fake.script(*router.items())
    fake.script_auxiliary(text_reply("Delegated"))
    client = EditorClient()
    async with running_agent(tmp_path, fake, client=client) as agent:
        sid = await agent.new_session()
        assert await agent.prompt(sid, "have a helper write it") == "end_turn"
    return client, ["Subagent 1 (Write the child's file): Write child.txt"]


CASES: list[Any] = [
    pytest.param(tools_and_commands, id="edit-command-read-state-job-export-restore"),
    pytest.param(mcp_tool, id="mcp-tool"),
    pytest.param(memory_provider_tool, id="memory-provider-tool"),
    pytest.param(review_proposal, id="review-proposal"),
    pytest.param(outside_the_sandbox, id="outside-the-sandbox", marks=needs_sandbox),
    pytest.param(subagent_edit, id="subagent-edit"),
]


@pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed: no checkpoint to restore")
@pytest.mark.parametrize("case", CASES)
async def test_every_question_offers_at_most_one_option_of_each_kind(
        tmp_path: Path, fake_anthropic: FakeAnthropic, case: Case) -> None:
    client, expected = await case(tmp_path, fake_anthropic)
    titles = [str(request["toolCall"].get("title")) for request in client.permission_requests]
    for fragment in expected:  # each kind of question meant was asked
        assert any(fragment in title for title in titles), (fragment, titles)
    for request in client.permission_requests:
        options = request["options"]
        assert kind_problems(request["toolCall"], options) == []
        # The first option, the one a client's key may run, allows exactly what was shown: allow once.
        assert options[0]["kind"] == "allow_once" and {o["kind"] for o in options} >= {"allow_once", "reject_once"}
