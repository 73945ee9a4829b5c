"""Every permission outcome through the real stdio server, in the default mode.

The user's answer decides what runs: allow_once and allow_always run the call (always: later
edits in the workspace, or the same command key, no longer ask), reject_once/reject_always and
a cancelled request mean the tool never ran, the model is told the user declined and the call
ends failed. Command grants are persisted per project and honoured by a new server process.
"""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from acp_hermes_tools.sandbox import detect
from tests.support.acp_harness import EditorClient, choose, running_agent
from tests.support.fake_anthropic import FakeAnthropic, text_reply, tool_reply
from tests.support.tool_checks import asked_ids, by_call, check_tool_calls, tool_result

pytestmark = pytest.mark.anyio

EDIT_OPTIONS = [
    {"optionId": "allow_once", "kind": "allow_once"},
    {"optionId": "allow_always", "kind": "allow_always"},
    {"optionId": "reject_once", "kind": "reject_once"},
    {"optionId": "reject_always", "kind": "reject_always"},
]


def offered(request: dict[str, Any]) -> list[dict[str, str]]:
    return [{"optionId": o["optionId"], "kind": o["kind"]} for o in request["options"]]


def edit(call_id: str, path: str, old: str, new: str) -> Any:
    return tool_reply("patch", {"mode": "replace", "path": path, "old_string": old, "new_string": new}, id=call_id)

STATUS = detect()


async def test_allow_once_asks_with_the_diff_every_time(tmp_path: Path, fake_anthropic: FakeAnthropic) -> None:
    fake_anthropic.script(
        edit("toolu_1", "a.txt", "one", "uno"),
        edit("toolu_2", "a.txt", "two", "dos"),
        text_reply("edited"),
    )
    fake_anthropic.script_auxiliary(text_reply("Allow once"))
    client = EditorClient(policy=choose("allow_once"))
    async with running_agent(tmp_path, fake_anthropic, client=client) as agent:
        target = agent.workspace / "a.txt"
        target.write_text("one\ntwo\n")
        sid = await agent.new_session()
        assert await agent.prompt(sid, "translate") == "end_turn"
        calls = check_tool_calls(agent, sid)

    assert asked_ids(client) == ["toolu_1", "toolu_2"]  # allow_once does not stick
    assert target.read_text() == "uno\ndos\n"
    first = client.permission_requests[0]
    assert offered(first) == EDIT_OPTIONS
    assert first["toolCall"]["kind"] == "edit" and first["toolCall"]["title"] == "Edit a.txt"
    assert first["toolCall"]["content"] == [
        {"type": "diff", "path": str(target), "oldText": "one\ntwo\n", "newText": "uno\ntwo\n"}
    ]
    assert [calls[c].status for c in ("toolu_1", "toolu_2")] == ["completed", "completed"]
    # Approval comes first; the call only then moves to in_progress.
    assert calls["toolu_1"].statuses == ["pending", "in_progress", "completed"]


async def test_allow_always_covers_later_workspace_edits_but_not_outside_ones_or_commands(
    tmp_path: Path, fake_anthropic: FakeAnthropic
) -> None:
    outside = tmp_path / "elsewhere.txt"
    outside.write_text("far\n")
    fake_anthropic.script(
        edit("toolu_first", "a.txt", "one", "uno"),
        tool_reply("write_file", {"path": "sub/b.txt", "content": "bee\n"}, id="toolu_second"),
        edit("toolu_outside", str(outside), "far", "near"),
        tool_reply("terminal", {"command": "touch made-by-command"}, id="toolu_command"),
        text_reply("done"),
    )
    fake_anthropic.script_auxiliary(text_reply("Always"))
    client = EditorClient(policy=by_call({"toolu_first": "allow_always"}, default="allow_once"))
    async with running_agent(tmp_path, fake_anthropic, client=client) as agent:
        (agent.workspace / "a.txt").write_text("one\n")
        sid = await agent.new_session()
        assert await agent.prompt(sid, "edit away") == "end_turn"
        calls = check_tool_calls(agent, sid)

    assert asked_ids(client) == ["toolu_first", "toolu_outside", "toolu_command"]
    assert (agent.workspace / "sub" / "b.txt").read_text() == "bee\n"
    assert calls["toolu_second"].permission_requests == []
    assert calls["toolu_second"].status == "completed"
    # An outside edit is a one-off question: no "always" on offer.
    assert [o["kind"] for o in calls["toolu_outside"].permission_requests[0]["options"]] == [
        "allow_once", "reject_once"
    ]
    assert outside.read_text() == "near\n"
    assert (agent.workspace / "made-by-command").exists()


async def test_reject_once_means_the_tool_never_ran_and_the_model_is_told(
    tmp_path: Path, fake_anthropic: FakeAnthropic
) -> None:
    fake_anthropic.script(
        edit("toolu_rejected", "a.txt", "one", "uno"),
        tool_reply("terminal", {"command": "touch should-not-exist"}, id="toolu_rejected_command"),
        edit("toolu_asked_again", "a.txt", "one", "eins"),
        text_reply("ok"),
    )
    fake_anthropic.script_auxiliary(text_reply("Reject once"))
    client = EditorClient(policy=by_call({"toolu_asked_again": "allow_once"}, default="reject_once"))
    async with running_agent(tmp_path, fake_anthropic, client=client) as agent:
        target = agent.workspace / "a.txt"
        target.write_text("one\n")
        sid = await agent.new_session()
        assert await agent.prompt(sid, "edit") == "end_turn"
        calls = check_tool_calls(agent, sid)

    assert asked_ids(client) == ["toolu_rejected", "toolu_rejected_command", "toolu_asked_again"]
    assert not (agent.workspace / "should-not-exist").exists()
    assert target.read_text() == "eins\n"  # only the approved edit ran
    for call_id in ("toolu_rejected", "toolu_rejected_command"):
        view = calls[call_id]
        assert view.statuses == ["pending", "failed"], view.statuses  # never in_progress: it did not run
        text, is_error = tool_result(fake_anthropic, call_id)
        assert "user declined" in text and "Do not retry" in text and is_error  # the model's words ...
        assert view.text().strip("`\n") == "Not done: you rejected it."  # ... and the user's


async def test_reject_always_refuses_later_edits_without_asking(
    tmp_path: Path, fake_anthropic: FakeAnthropic
) -> None:
    fake_anthropic.script(
        edit("toolu_1", "a.txt", "one", "uno"),
        tool_reply("write_file", {"path": "b.txt", "content": "new\n"}, id="toolu_2"),
        text_reply("gave up"),
    )
    fake_anthropic.script_auxiliary(text_reply("Reject always"))
    client = EditorClient(policy=choose("reject_always"))
    async with running_agent(tmp_path, fake_anthropic, client=client) as agent:
        (agent.workspace / "a.txt").write_text("one\n")
        sid = await agent.new_session()
        assert await agent.prompt(sid, "edit") == "end_turn"
        calls = check_tool_calls(agent, sid)

    assert asked_ids(client) == ["toolu_1"]
    assert (agent.workspace / "a.txt").read_text() == "one\n"
    assert not (agent.workspace / "b.txt").exists()
    assert calls["toolu_2"].statuses == ["pending", "failed"]
    assert "reject all edits" in tool_result(fake_anthropic, "toolu_2")[0]
    assert calls["toolu_2"].text().strip("`\n") == "Not done: you rejected all edits for this session."


async def test_a_cancelled_permission_request_runs_nothing(tmp_path: Path, fake_anthropic: FakeAnthropic) -> None:
    fake_anthropic.script(
        tool_reply("write_file", {"path": "a.txt", "content": "x\n"}, id="toolu_write"),
        tool_reply("terminal", {"command": "touch marker"}, id="toolu_command"),
        text_reply("nothing happened"),
    )
    fake_anthropic.script_auxiliary(text_reply("Cancelled"))
    client = EditorClient(policy=by_call({}, default=None))
    async with running_agent(tmp_path, fake_anthropic, client=client) as agent:
        sid = await agent.new_session()
        assert await agent.prompt(sid, "try") == "end_turn"
        calls = check_tool_calls(agent, sid)

    assert asked_ids(client) == ["toolu_write", "toolu_command"]
    assert not (agent.workspace / "a.txt").exists() and not (agent.workspace / "marker").exists()
    for call_id in ("toolu_write", "toolu_command"):
        assert calls[call_id].statuses == ["pending", "failed"]
        text, is_error = tool_result(fake_anthropic, call_id)
        assert "cancelled" in text and "did not run" in text and is_error
        assert calls[call_id].text().strip("`\n") == "Not done: the permission question was cancelled."


async def test_command_grants_persist_per_project_for_a_new_server_process(
    tmp_path: Path, fake_anthropic: FakeAnthropic
) -> None:
    home, workspace = tmp_path / "home", tmp_path / "project"
    workspace.mkdir()
    subprocess.run(["git", "init", "-q", str(workspace)], check=True)
    fake_anthropic.script(
        tool_reply("terminal", {"command": "git status"}, id="toolu_status"),
        tool_reply("terminal", {"command": "git status --short"}, id="toolu_status_again"),
        tool_reply("terminal", {"command": "touch first"}, id="toolu_touch"),
        text_reply("remembered"),
    )
    fake_anthropic.script_auxiliary(text_reply("Grants"))
    answers = {"toolu_status": "allow_always", "toolu_touch": "reject_always"}
    first = EditorClient(policy=by_call(answers))
    async with running_agent(tmp_path, fake_anthropic, client=first, home=home, workspace=workspace) as agent:
        sid = await agent.new_session()
        assert await agent.prompt(sid, "look around") == "end_turn"
        first_calls = check_tool_calls(agent, sid)
        await agent.wait_for_update(sid, "session_info_update")  # the title is asked for here

    assert asked_ids(first) == ["toolu_status", "toolu_touch"]  # `git status --short` matched the grant
    status_request = first_calls["toolu_status"].permission_requests[0]
    assert offered(status_request) == EDIT_OPTIONS
    assert status_request["toolCall"]["kind"] == "execute"
    assert status_request["toolCall"]["content"] == [
        {"type": "content", "content": {"type": "text", "text": "```sh\n$ git status\n```"}}
    ]
    assert "`git status`" in next(o["name"] for o in status_request["options"] if o["kind"] == "allow_always")
    stored = yaml.safe_load((home / "acp-hermes" / "permissions.yaml").read_text())
    stored_grants = {"reject_commands": ["touch"]}  # given in the sandbox, the grant is kept as such
    stored_grants["allow_commands"] = ["sandbox:git status" if STATUS.available else "git status"]
    assert stored["projects"][str(workspace.resolve())] == stored_grants
    assert first_calls["toolu_status_again"].status == "completed"
    assert not (workspace / "first").exists()

    fake_anthropic.script(
        tool_reply("terminal", {"command": "git status"}, id="toolu_status_later"),
        tool_reply("terminal", {"command": "git log -1"}, id="toolu_log"),
        tool_reply("terminal", {"command": "touch second"}, id="toolu_touch_later"),
        text_reply("again"),
    )
    fake_anthropic.script_auxiliary(text_reply("Grants again"))
    second = EditorClient(policy=choose("reject_once"))
    async with running_agent(tmp_path, fake_anthropic, client=second, home=home, workspace=workspace) as agent:
        sid = await agent.new_session()
        assert await agent.prompt(sid, "look again") == "end_turn"
        calls = check_tool_calls(agent, sid)

    assert asked_ids(second) == ["toolu_log"]  # a different subcommand still asks
    assert calls["toolu_status_later"].status == "completed"
    assert "On branch" in tool_result(fake_anthropic, "toolu_status_later")[0] or "No commits yet" in tool_result(
        fake_anthropic, "toolu_status_later"
    )[0]
    assert calls["toolu_touch_later"].statuses == ["pending", "failed"]
    assert "always reject `touch`" in tool_result(fake_anthropic, "toolu_touch_later")[0]
    assert not (workspace / "second").exists()
    logs = "".join(p.read_text(errors="replace") for p in tmp_path.glob("agent-stderr-*.log"))
    assert "allowed by remembered grant(s) git status" in logs  # the grant in force is visible


async def test_command_grants_do_not_leak_to_another_project(tmp_path: Path, fake_anthropic: FakeAnthropic) -> None:
    home = tmp_path / "home"
    own_project, other_project = tmp_path / "own", tmp_path / "other"
    for project in (own_project, other_project):
        project.mkdir()
    fake_anthropic.script(
        tool_reply("terminal", {"command": "echo one"}, id="toolu_grant"),
        text_reply("ok"),
    )
    fake_anthropic.script_auxiliary(text_reply("T"))
    async with running_agent(tmp_path, fake_anthropic, client=EditorClient(policy=choose("allow_always")),
                             home=home, workspace=own_project) as agent:
        sid = await agent.new_session()
        await agent.prompt(sid, "grant")
        await agent.wait_for_update(sid, "session_info_update")
    fake_anthropic.script(
        tool_reply("terminal", {"command": "echo two"}, id="toolu_other"),
        text_reply("ok"),
    )
    fake_anthropic.script_auxiliary(text_reply("T"))
    client = EditorClient(policy=choose("allow_once"))
    async with running_agent(tmp_path, fake_anthropic, client=client, home=home, workspace=other_project) as agent:
        sid = await agent.new_session()
        await agent.prompt(sid, "other project")
        check_tool_calls(agent, sid)
    assert asked_ids(client) == ["toolu_other"]
