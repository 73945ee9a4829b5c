"""Permission modes through the real stdio server: what asks, what runs, what is refused.

``default`` asks for edits and commands, ``accept-edits`` lets workspace edits through, ``plan``
refuses every mutation without asking, ``bypass`` asks for nothing ordinary — where no sandbox runs
commands, only if the user's config allows it (``allow_unsandboxed_bypass``). In every mode,
writes outside the workspace (cwd plus additionalDirectories, with ``..`` and symlinks resolved)
and to sensitive paths still ask, dangerous commands ask even in bypass or under a remembered
grant, and catastrophic commands are refused without a prompt and without running.

Commands that must never run are sent to a recording stand-in for the shell (``$SHELL``), so a
regression in the gate cannot harm the machine: the log says what would have run.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from acp import RequestError

from acp_hermes_tools.sandbox import detect
from tests.support.acp_harness import AgentProcess, EditorClient, choose, running_agent, write_config
from tests.support.fake_anthropic import FakeAnthropic, text_reply, tool_reply
from tests.support.tool_checks import asked_ids, by_call, check_tool_calls, tool_result

pytestmark = pytest.mark.anyio

MODES = ("default", "accept-edits", "plan", "bypass")
WORKSPACE_EDITS = ("toolu_ws", "toolu_extra")
ALWAYS_ASK = ("toolu_outside", "toolu_dotdot", "toolu_symlink", "toolu_env", "toolu_git", "toolu_key", "toolu_ssh")
CATASTROPHIC = {
    "toolu_root": "rm -rf /",
    "toolu_home": "rm -rf ~",
    "toolu_mkfs": "mkfs.ext4 /dev/sda",
    "toolu_forkbomb": ":(){ :|:& };:",
}


def recording_shell(tmp_path: Path) -> tuple[Path, Path]:
    """A ``$SHELL`` that logs each ``-c`` command line (NUL-terminated) instead of running it."""
    log = tmp_path / "shell.log"
    shell = tmp_path / "recording-shell"
    shell.write_text(f"#!/bin/sh\nprintf '%s\\0' \"$2\" >> '{log}'\necho recorded\n")
    shell.chmod(0o755)
    return shell, log


def recorded(log: Path) -> list[str]:
    return [entry for entry in log.read_text().split("\0") if entry] if log.exists() else []


async def set_mode(agent: AgentProcess, sid: str, mode: str) -> None:
    """Switch through the config option (what Zed uses); the legacy modes API is tested too."""
    if mode == "bypass":
        await agent.conn.set_session_mode(session_id=sid, mode_id=mode)
        return
    response = await agent.conn.set_config_option(config_id="mode", session_id=sid, value=mode)
    options = response.model_dump(by_alias=True)["configOptions"]
    assert next(o for o in options if o["id"] == "mode")["currentValue"] == mode


@pytest.mark.parametrize("sandbox", ["auto", "off"])
@pytest.mark.parametrize("mode", MODES)
async def test_what_each_mode_asks_for(tmp_path: Path, fake_anthropic: FakeAnthropic, mode: str, sandbox: str) -> None:
    home, extra, outside = tmp_path / "user-home", tmp_path / "extra-dir", tmp_path / "outside"
    for directory in (home, extra, outside):
        directory.mkdir()
    write_config(tmp_path / "hermes-home", f"sandbox: {sandbox}\nallow_unsandboxed_bypass: true\n")
    sandboxed = sandbox == "auto" and detect().available
    (outside / "target.txt").write_text("target\n")
    fake_anthropic.script(
        tool_reply("read_file", {"path": "a.txt"}, id="toolu_read"),
        tool_reply("patch", {"mode": "replace", "path": "a.txt", "old_string": "a", "new_string": "b"},
                   id="toolu_ws"),
        tool_reply("write_file", {"path": str(extra / "notes.txt"), "content": "extra\n"}, id="toolu_extra"),
        tool_reply("write_file", {"path": str(outside / "new.txt"), "content": "out\n"}, id="toolu_outside"),
        tool_reply("write_file", {"path": "../outside/dotdot.txt", "content": "up\n"}, id="toolu_dotdot"),
        tool_reply("patch", {"mode": "replace", "path": "link.txt", "old_string": "target", "new_string": "hit"},
                   id="toolu_symlink"),
        tool_reply("write_file", {"path": ".env", "content": "SECRET=1\n"}, id="toolu_env"),
        tool_reply("write_file", {"path": ".git/config", "content": "[core]\n"}, id="toolu_git"),
        tool_reply("write_file", {"path": "keys/id_rsa", "content": "KEY\n"}, id="toolu_key"),
        tool_reply("write_file", {"path": "~/.ssh/authorized_keys", "content": "ssh-ed25519 AAAA\n"},
                   id="toolu_ssh"),
        tool_reply("terminal", {"command": "touch ran-command"}, id="toolu_cmd"),
        text_reply("done"),
    )
    fake_anthropic.script_auxiliary(text_reply("Modes"))
    client = EditorClient(policy=choose("allow_once"))
    async with running_agent(tmp_path, fake_anthropic, client=client, env={"HOME": str(home)}) as agent:
        workspace = agent.workspace
        (workspace / "a.txt").write_text("a\n")
        (workspace / "link.txt").symlink_to(outside / "target.txt")
        sid = await agent.new_session(additional_directories=[str(extra)])
        await set_mode(agent, sid, mode)
        assert await agent.prompt(sid, "do everything") == "end_turn"
        calls = check_tool_calls(agent, sid)

    mutating = [call_id for call_id in calls if call_id != "toolu_read"]
    expected_asks = {
        "default": mutating,
        # with a sandbox, an ordinary command runs in it unasked where edits do
        "accept-edits": [c for c in mutating if c not in WORKSPACE_EDITS and not (sandboxed and c == "toolu_cmd")],
        "bypass": list(ALWAYS_ASK),
        "plan": [],
    }[mode]
    assert asked_ids(client) == expected_asks
    assert calls["toolu_read"].status == "completed"
    written = {
        "toolu_ws": workspace / "a.txt",
        "toolu_extra": extra / "notes.txt",
        "toolu_outside": outside / "new.txt",
        "toolu_dotdot": outside / "dotdot.txt",
        "toolu_symlink": outside / "target.txt",
        "toolu_env": workspace / ".env",
        "toolu_git": workspace / ".git" / "config",
        "toolu_key": workspace / "keys" / "id_rsa",
        "toolu_ssh": home / ".ssh" / "authorized_keys",
        "toolu_cmd": workspace / "ran-command",
    }
    if mode == "plan":
        assert "Plan mode is on" in str(fake_anthropic.requests[0]["messages"][-1])
        for call_id in mutating:
            assert calls[call_id].statuses == ["pending", "failed"], call_id
            text, is_error = tool_result(fake_anthropic, call_id)
            assert "plan mode" in text and is_error
        assert (workspace / "a.txt").read_text() == "a\n"
        assert (outside / "target.txt").read_text() == "target\n"
        created = [path for call_id, path in written.items() if call_id not in ("toolu_ws", "toolu_symlink")]
        assert not any(path.exists() for path in created)
        return
    assert all(view.status == "completed" for view in calls.values())
    assert all(path.exists() for path in written.values())
    assert (outside / "target.txt").read_text() == "hit\n"  # the symlink was followed, after asking
    assert (workspace / "link.txt").is_symlink()
    requests = {r["toolCall"]["toolCallId"]: r["toolCall"] for r in client.permission_requests}
    symlink_request = requests["toolu_symlink"]
    assert symlink_request["content"][0]["path"] == str((outside / "target.txt").resolve())
    assert "outside the workspace" in symlink_request["title"]
    assert "outside the workspace" in requests["toolu_dotdot"]["title"]
    assert str((outside / "dotdot.txt").resolve()) in requests["toolu_dotdot"]["content"][0]["path"]
    for call_id in ("toolu_env", "toolu_git", "toolu_key", "toolu_ssh"):
        assert [o["kind"] for o in client.permission_requests[asked_ids(client).index(call_id)]["options"]] == [
            "allow_once", "reject_once"
        ], call_id  # a sensitive write is never granted for good


@pytest.mark.parametrize("mode", ["default", "bypass", "plan"])
async def test_dangerous_commands_ask_and_catastrophic_ones_never_run(
    tmp_path: Path, fake_anthropic: FakeAnthropic, mode: str
) -> None:
    shell, log = recording_shell(tmp_path)
    home = tmp_path / "user-home"
    home.mkdir()
    # The gate alone: the recording shell logs outside the workspace, which a sandbox would refuse.
    write_config(tmp_path / "hermes-home", "sandbox: off\nallow_unsandboxed_bypass: true\n")
    fake_anthropic.script(
        tool_reply("terminal", {"command": "rm old.txt"}, id="toolu_rm"),
        tool_reply("terminal", {"command": "git push origin main"}, id="toolu_push"),
        tool_reply("terminal", {"command": "rm -rf build"}, id="toolu_rmrf"),
        tool_reply("terminal", {"command": "git push --force"}, id="toolu_force"),
        *(tool_reply("terminal", {"command": command}, id=call_id) for call_id, command in CATASTROPHIC.items()),
        text_reply("done"),
    )
    fake_anthropic.script_auxiliary(text_reply("Danger"))
    # Normal commands are granted "always" when asked, so the dangerous ones run under a grant.
    answers: dict[str, str | None] = {"toolu_rm": "allow_always", "toolu_push": "allow_always",
                                      "toolu_rmrf": "allow_once", "toolu_force": "reject_once"}
    client = EditorClient(policy=by_call(answers))
    env = {"SHELL": str(shell), "HOME": str(home)}
    async with running_agent(tmp_path, fake_anthropic, client=client, env=env) as agent:
        sid = await agent.new_session()
        if mode != "default":
            await set_mode(agent, sid, mode)
        assert await agent.prompt(sid, "clean up") == "end_turn"
        calls = check_tool_calls(agent, sid)

    ran = recorded(log)
    assert not set(CATASTROPHIC.values()) & set(ran)
    for call_id in CATASTROPHIC:
        assert calls[call_id].statuses == ["pending", "failed"], call_id
        text, is_error = tool_result(fake_anthropic, call_id)
        assert ("never allowed" in text or "plan mode" in text) and is_error, text
    if mode == "plan":
        assert asked_ids(client) == [] and ran == []
        return
    expected = {"default": ["toolu_rm", "toolu_push", "toolu_rmrf", "toolu_force"],
                "bypass": ["toolu_rmrf", "toolu_force"]}[mode]
    assert asked_ids(client) == expected
    assert ran == ["rm old.txt", "git push origin main", "rm -rf build"]  # the rejected force push never ran
    for call_id in CATASTROPHIC:
        assert "never allowed" in tool_result(fake_anthropic, call_id)[0]
    requests = {r["toolCall"]["toolCallId"]: r for r in client.permission_requests}
    assert "recursive delete" in requests["toolu_rmrf"]["toolCall"]["title"]
    assert "force push" in requests["toolu_force"]["toolCall"]["title"]
    for call_id in ("toolu_rmrf", "toolu_force"):
        assert [o["kind"] for o in requests[call_id]["options"]] == ["allow_once", "reject_once"]
    assert calls["toolu_force"].status == "failed" and calls["toolu_rmrf"].status == "completed"


async def test_the_mode_persists_with_the_session_across_processes(
    tmp_path: Path, fake_anthropic: FakeAnthropic
) -> None:
    home = tmp_path / "home"
    async with running_agent(tmp_path, fake_anthropic, home=home) as agent:
        sid = await agent.new_session()
        await agent.conn.set_session_mode(session_id=sid, mode_id="accept-edits")
        options = await agent.wait_for_update(sid, "config_option_update")
        assert _mode_value(options["configOptions"]) == "accept-edits"
        await agent.conn.set_config_option(config_id="mode", session_id=sid, value="plan")
        changed = await agent.wait_for_update(sid, "current_mode_update")
        assert changed["currentModeId"] == "plan"

    fake_anthropic.script(
        tool_reply("write_file", {"path": "plan.txt", "content": "x\n"}, id="toolu_write"),
        text_reply("Here is my plan."),
    )
    client = EditorClient(policy=choose("allow_once"))
    async with running_agent(tmp_path, fake_anthropic, client=client, home=home) as agent:
        loaded = await agent.conn.load_session(cwd=str(agent.workspace), session_id=sid, mcp_servers=[])
        state = loaded.model_dump(by_alias=True)
        assert state["modes"]["currentModeId"] == "plan"
        assert _mode_value(state["configOptions"]) == "plan"
        assert await agent.prompt(sid, "write it") == "end_turn"
        calls = check_tool_calls(agent, sid)
    assert client.permission_requests == []
    assert calls["toolu_write"].status == "failed"
    assert not (agent.workspace / "plan.txt").exists()


def _mode_value(options: list[dict[str, Any]]) -> str:
    return str(next(o for o in options if o["id"] == "mode")["currentValue"])


# -- bypass needs a sandbox, or the user's explicit choice ------------------------------------------

WITHOUT_BYPASS = ["default", "accept-edits", "plan"]


def offered(state: dict[str, Any]) -> tuple[list[str], list[str]]:
    """The modes a session/new, load, resume or fork answer offers: in ``modes`` and in the mode option."""
    option = next(o for o in state["configOptions"] if o["id"] == "mode")
    return [m["id"] for m in state["modes"]["availableModes"]], [o["value"] for o in option["options"]]


async def test_without_a_sandbox_bypass_is_not_offered_and_choosing_it_is_refused_with_the_reason(
    tmp_path: Path, fake_anthropic: FakeAnthropic
) -> None:
    config = write_config(tmp_path / "hermes-home", "sandbox: off\n")
    # Only the user's own config may allow it: not the project, not the environment the editor sets.
    for project_file in (".hermes/config.yaml", ".hermes/acp-hermes/config.yaml", "acp-hermes.yaml"):
        (tmp_path / "workspace" / project_file).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / "workspace" / project_file).write_text("allow_unsandboxed_bypass: true\n")
    env = {"ALLOW_UNSANDBOXED_BYPASS": "true", "ACP_HERMES_ALLOW_UNSANDBOXED_BYPASS": "true"}
    fake_anthropic.script_auxiliary(text_reply("Modes"))
    async with running_agent(tmp_path, fake_anthropic, env=env) as agent:
        created = (await agent.conn.new_session(cwd=str(agent.workspace), mcp_servers=[])).model_dump(by_alias=True)
        sid = created["sessionId"]
        assert offered(created) == (WITHOUT_BYPASS, WITHOUT_BYPASS)
        for switch in (agent.conn.set_session_mode(session_id=sid, mode_id="bypass"),
                       agent.conn.set_config_option(config_id="mode", session_id=sid, value="bypass")):
            with pytest.raises(RequestError) as refused:
                await switch
            assert refused.value.code == -32602
            message = str(refused.value)
            assert message.startswith("bypass is not available without a sandbox, and commands run without one "
                                      "here: turned off in the configuration (sandbox: off).")
            assert f"set `allow_unsandboxed_bypass: true` in {config}" in message
        # The server goes on serving; the other modes switch as ever.
        response = await agent.conn.set_config_option(config_id="mode", session_id=sid, value="accept-edits")
        assert _mode_value(response.model_dump(by_alias=True)["configOptions"]) == "accept-edits"
        assert await agent.prompt(sid, "/mode bypass") == "end_turn"
        assert "Could not change the mode: bypass is not available without a sandbox" in agent.agent_text(sid)
        loaded = await agent.conn.load_session(cwd=str(agent.workspace), session_id=sid, mcp_servers=[])
        resumed = await agent.conn.resume_session(cwd=str(agent.workspace), session_id=sid)
        forked = await agent.conn.fork_session(cwd=str(agent.workspace), session_id=sid)
        for state in (loaded, resumed, forked):
            dumped = state.model_dump(by_alias=True)
            assert offered(dumped) == (WITHOUT_BYPASS, WITHOUT_BYPASS)
            assert dumped["modes"]["currentModeId"] == "accept-edits"


async def test_a_default_mode_of_bypass_without_a_sandbox_starts_in_default_and_says_why(
    tmp_path: Path, fake_anthropic: FakeAnthropic
) -> None:
    write_config(tmp_path / "hermes-home", "sandbox: off\ndefault_mode: bypass\n")
    async with running_agent(tmp_path, fake_anthropic) as agent:
        created = (await agent.conn.new_session(cwd=str(agent.workspace), mcp_servers=[])).model_dump(by_alias=True)
        sid = created["sessionId"]
        assert created["modes"]["currentModeId"] == _mode_value(created["configOptions"]) == "default"
        said = await agent.wait_for_update(sid, "agent_message_chunk")
    assert said["content"]["text"].startswith("⚠️ This session is in `default` mode, not `bypass`: bypass is not "
                                              "available without a sandbox")
    assert "allow_unsandboxed_bypass: true" in said["content"]["text"]
    assert len(agent.updates(sid, "agent_message_chunk")) == 1


async def test_the_users_own_config_may_offer_bypass_without_a_sandbox(
    tmp_path: Path, fake_anthropic: FakeAnthropic
) -> None:
    write_config(tmp_path / "hermes-home", "sandbox: off\nallow_unsandboxed_bypass: true\n")
    async with running_agent(tmp_path, fake_anthropic) as agent:
        created = (await agent.conn.new_session(cwd=str(agent.workspace), mcp_servers=[])).model_dump(by_alias=True)
        assert offered(created) == (list(MODES), list(MODES))
        bypass = next(m for m in created["modes"]["availableModes"] if m["id"] == "bypass")
        assert bypass["name"] == "Bypass (no sandbox)"
        assert "every command runs with your rights, unasked" in bypass["description"]
        await agent.conn.set_session_mode(session_id=created["sessionId"], mode_id="bypass")
