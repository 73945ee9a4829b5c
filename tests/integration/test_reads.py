"""Reads through the real stdio server: secrets ask every time in every mode, other paths outside
the workspace ask in default mode (always: that directory, this session), the API key never
reaches the model, and an editor that refuses a read or a terminal is not gone around.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.support.acp_harness import EditorClient, allow_bypass_here, choose, running_agent, write_config
from tests.support.fake_anthropic import FakeAnthropic, text_reply, tool_reply
from tests.support.tool_checks import asked_ids, by_call, check_tool_calls, tool_result

pytestmark = pytest.mark.anyio
API_KEY = "sk-ant-api03-test-key-that-must-stay-secret"


def read(path: str, call_id: str) -> Any:
    return tool_reply("read_file", {"path": path}, id=call_id)


def user_home(tmp_path: Path) -> Path:
    home = tmp_path / "user-home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_rsa").write_text("-----BEGIN OPENSSH PRIVATE KEY----- hunter2\n")
    return home


@pytest.mark.parametrize("mode", ["default", "accept-edits", "bypass"])
async def test_a_private_key_asks_in_every_mode_and_a_refusal_keeps_it_from_the_model(
    tmp_path: Path, fake_anthropic: FakeAnthropic, mode: str
) -> None:
    home = user_home(tmp_path)
    allow_bypass_here(tmp_path / "hermes-home")
    fake_anthropic.script(read("~/.ssh/id_rsa", "toolu_key"), read("notes.md", "toolu_notes"), text_reply("ok"))
    client = EditorClient(policy=choose("reject_once"))
    async with running_agent(tmp_path, fake_anthropic, client=client, env={"HOME": str(home)}) as agent:
        (agent.workspace / "notes.md").write_text("workspace notes\n")
        sid = await agent.new_session()
        await agent.conn.set_session_mode(session_id=sid, mode_id=mode)
        assert await agent.prompt(sid, "look around") == "end_turn"
        calls = check_tool_calls(agent, sid)
    assert asked_ids(client) == ["toolu_key"]  # the workspace file was read unasked
    question = client.permission_requests[0]
    assert question["toolCall"]["kind"] == "read" and "SSH directory" in question["toolCall"]["title"]
    assert [o["kind"] for o in question["options"]] == ["allow_once", "reject_once"]  # no "always" for secrets
    refused, is_error = tool_result(fake_anthropic, "toolu_key")
    assert is_error and "hunter2" not in refused
    assert calls["toolu_key"].status == "failed"
    assert "workspace notes" in tool_result(fake_anthropic, "toolu_notes")[0]


async def test_the_agents_own_config_asks_and_the_api_key_never_reaches_the_model(
    tmp_path: Path, fake_anthropic: FakeAnthropic
) -> None:
    # Without the sandbox (which unsets the key for commands) the redaction itself is tested.
    config = write_config(tmp_path / "hermes-home", f"api_key: {API_KEY}\nsandbox: off\n")
    fake_anthropic.script(
        read(str(config), "toolu_config"),
        tool_reply("terminal", {"command": "printf 'key=%s' \"$ANTHROPIC_API_KEY\""}, id="toolu_env"),
        text_reply("ok"),
    )
    client = EditorClient(policy=choose("allow_once"))
    async with running_agent(tmp_path, fake_anthropic, client=client, env={"ANTHROPIC_API_KEY": API_KEY}) as agent:
        sid = await agent.new_session()
        assert await agent.prompt(sid, "show me your config") == "end_turn"
    assert "toolu_config" in asked_ids(client)
    assert "the agent's own configuration" in client.permission_requests[0]["toolCall"]["title"]
    shown, _ = tool_result(fake_anthropic, "toolu_config")
    printed, _ = tool_result(fake_anthropic, "toolu_env")
    assert "api_key" in shown and "[redacted" in shown and "[redacted" in printed
    assert all(API_KEY not in str(body) for body in fake_anthropic.requests)


async def test_outside_the_workspace_asks_in_default_mode_and_always_covers_the_directory(
    tmp_path: Path, fake_anthropic: FakeAnthropic
) -> None:
    library = tmp_path / "library"
    (library / "sub").mkdir(parents=True)
    (library / "a.txt").write_text("alpha\n")
    (library / "sub" / "b.txt").write_text("beta\n")
    (tmp_path / "other.txt").write_text("gamma\n")
    fake_anthropic.script(
        read(str(library / "a.txt"), "toolu_a"),
        read(str(library / "sub" / "b.txt"), "toolu_b"),
        read(str(tmp_path / "other.txt"), "toolu_other"),
        text_reply("ok"),
    )
    client = EditorClient(policy=by_call({"toolu_a": "allow_always", "toolu_other": "reject_once"}))
    async with running_agent(tmp_path, fake_anthropic, client=client) as agent:
        sid = await agent.new_session()
        assert await agent.prompt(sid, "read the library") == "end_turn"
    assert asked_ids(client) == ["toolu_a", "toolu_other"]  # b.txt: under the directory allowed always
    first = client.permission_requests[0]
    always = next(o for o in first["options"] if o["kind"] == "allow_always")
    assert str(library) in always["name"] and "this session" in always["name"]
    assert "beta" in tool_result(fake_anthropic, "toolu_b")[0]
    assert tool_result(fake_anthropic, "toolu_other")[1] is True


async def test_accept_edits_reads_outside_the_workspace_unasked(tmp_path: Path, fake_anthropic: FakeAnthropic) -> None:
    (tmp_path / "other.txt").write_text("gamma\n")
    fake_anthropic.script(read(str(tmp_path / "other.txt"), "toolu_other"), text_reply("ok"))
    client = EditorClient(policy=choose("reject_once"))
    async with running_agent(tmp_path, fake_anthropic, client=client) as agent:
        sid = await agent.new_session()
        await agent.conn.set_session_mode(session_id=sid, mode_id="accept-edits")
        assert await agent.prompt(sid, "read it") == "end_turn"
    assert asked_ids(client) == [] and "gamma" in tool_result(fake_anthropic, "toolu_other")[0]


async def test_search_leaves_out_files_holding_secrets(tmp_path: Path, fake_anthropic: FakeAnthropic) -> None:
    fake_anthropic.script(tool_reply("search_files", {"pattern": "TOKEN"}, id="toolu_search"), text_reply("ok"))
    async with running_agent(tmp_path, fake_anthropic) as agent:
        (agent.workspace / "certs").mkdir()
        (agent.workspace / "certs" / "deploy.key").write_text("TOKEN=very-secret-value\n")
        (agent.workspace / "app.py").write_text("TOKEN = os.environ['TOKEN']\n")
        sid = await agent.new_session()
        assert await agent.prompt(sid, "where is the token used?") == "end_turn"
    found, _ = tool_result(fake_anthropic, "toolu_search")
    assert "app.py" in found and "very-secret-value" not in found and "left out" in found


async def test_an_editor_that_refuses_a_read_or_a_terminal_is_not_gone_around(
    tmp_path: Path, fake_anthropic: FakeAnthropic
) -> None:
    fake_anthropic.script(
        read("notes.md", "toolu_read"),
        tool_reply("terminal", {"command": "cat notes.md > copy.md"}, id="toolu_run"),
        text_reply("ok"),
    )
    client = EditorClient(refuse_reads="the file is not trusted by the user",
                          refuse_terminals="terminals are disabled in this workspace")
    async with running_agent(tmp_path, fake_anthropic, client=client, fs=True, terminal=True) as agent:
        (agent.workspace / "notes.md").write_text("on disk only\n")
        sid = await agent.new_session()
        assert await agent.prompt(sid, "read notes") == "end_turn"
        calls = check_tool_calls(agent, sid)
        workspace = agent.workspace
    read_result, read_failed = tool_result(fake_anthropic, "toolu_read")
    run_result, run_failed = tool_result(fake_anthropic, "toolu_run")
    assert read_failed and "not trusted by the user" in read_result and "on disk only" not in read_result
    assert run_failed and "terminals are disabled" in run_result and "Internal error" not in run_result
    assert not (workspace / "copy.md").exists()  # no local shell instead
    assert calls["toolu_read"].status == calls["toolu_run"].status == "failed"
