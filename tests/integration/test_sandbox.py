"""Commands in the OS sandbox, through the real stdio server.

With a sandbox, bypass and accept-edits run ordinary commands unasked *inside* it: what the
classifier misses, the kernel stops. Leaving it (the network, writes elsewhere, or the agent's own
request) always asks and says why. Without one, the user is told once per session. Skipped with
the reason where bubblewrap is missing or cannot create namespaces.
"""

from __future__ import annotations

import json
import os
import shlex
from pathlib import Path
from typing import Any

import anyio
import pytest

from acp_hermes_tools.sandbox import detect
from tests.support.acp_harness import EditorClient, PromptTask, cancel_and_wait, choose, running_agent, write_config
from tests.support.fake_anthropic import FakeAnthropic, text_reply, tool_reply
from tests.support.tool_checks import asked_ids, by_call, check_tool_calls, tool_result

pytestmark = pytest.mark.anyio
STATUS = detect()
needs_sandbox = pytest.mark.skipif(not STATUS.available, reason=f"no OS sandbox here: {STATUS.detail}")


def user_home(tmp_path: Path) -> Path:
    home = tmp_path / "user-home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_rsa").write_text("-----BEGIN OPENSSH PRIVATE KEY----- secret\n")
    return home


def terminal(command: str, call_id: str, **extra: Any) -> Any:
    return tool_reply("terminal", {"command": command, **extra}, id=call_id)


@needs_sandbox
@pytest.mark.parametrize("client_terminal", [False, True], ids=["local", "editor-terminal"])
async def test_bypass_runs_ordinary_commands_unasked_but_inside_the_sandbox(
    tmp_path: Path, fake_anthropic: FakeAnthropic, client_terminal: bool
) -> None:
    home, outside = user_home(tmp_path), tmp_path / "outside"
    outside.mkdir()
    sneaky = f"python3 -c \"open('{outside}/sneaky.txt', 'w').write('x')\""  # rated normal: the kernel says no
    fake_anthropic.script(
        terminal("echo built > made.txt && echo tmp > \"$TMPDIR/t\" && cat \"$TMPDIR/t\"", "toolu_build"),
        terminal(sneaky, "toolu_sneaky"),
        # Spelled so the analysis cannot name the key (``cat ~/.ssh/id_rsa`` asks): the sandbox must hide it.
        terminal("cat \"$(echo ~)/.ssh/id_rsa\"; echo \"key=[$ANTHROPIC_API_KEY]\"", "toolu_peek"),
        text_reply("done"),
    )
    client = EditorClient(policy=choose("reject_once"))
    async with running_agent(tmp_path, fake_anthropic, client=client, env={"HOME": str(home)},
                             terminal=client_terminal) as agent:
        sid = await agent.new_session()
        await agent.conn.set_session_mode(session_id=sid, mode_id="bypass")
        assert await agent.prompt(sid, "build it") == "end_turn"
        calls = check_tool_calls(agent, sid)
        workspace = agent.workspace
    assert asked_ids(client) == []  # nothing asked: bypass, and nothing leaves the sandbox
    assert (workspace / "made.txt").read_text() == "built\n" and "tmp" in tool_result(fake_anthropic, "toolu_build")[0]
    assert not (outside / "sneaky.txt").exists()
    sneaky_result, _ = tool_result(fake_anthropic, "toolu_sneaky")
    assert "Read-only file system" in sneaky_result and "outside_sandbox: true" in sneaky_result
    peek, _ = tool_result(fake_anthropic, "toolu_peek")
    assert "PRIVATE KEY" not in peek and "key=[]" in peek
    assert calls["toolu_sneaky"].status == "failed"
    if client_terminal:  # the editor's terminal ran each command through its launch script, sandboxed
        for command, args in client.terminal_commands:
            assert command == "/bin/sh" and Path(args[0]).name.startswith("sandboxed-") and len(args) == 2


# What each editor titles a terminal with, from terminal/create (read from their sources): Zed's
# command header before it showed the call's title, Toad's border title, acpx's log line and prompt.
TITLES = {
    "zed": lambda command, args: f"{command} {' '.join(args)}",
    "toad": lambda command, args: shlex.join([command, *args]).strip("'"),
    "acpx": lambda command, args: " ".join([command, *(json.dumps(arg) for arg in args)]),
}
WRAPPER_WORDS = ("bwrap", "seccomp", "--unshare", "--setenv", "--ro-bind", "exec 3<", "env -i", "sandbox-exec")


@needs_sandbox
async def test_an_editor_terminal_is_titled_with_the_users_command_and_the_sandbox_still_holds(
    tmp_path: Path, fake_anthropic: FakeAnthropic
) -> None:
    home = user_home(tmp_path)
    plain, peek = "ls -a", "cat \"$(echo ~)/.ssh/id_rsa\"; echo \"key=[$ANTHROPIC_API_KEY]\""
    fake_anthropic.script(terminal(plain, "toolu_plain"), terminal(peek, "toolu_peek"), text_reply("done"))
    client = EditorClient(policy=choose("reject_once"))
    async with running_agent(tmp_path, fake_anthropic, client=client, env={"HOME": str(home)},
                             terminal=True) as agent:
        sid = await agent.new_session()
        await agent.conn.set_session_mode(session_id=sid, mode_id="bypass")
        assert await agent.prompt(sid, "look around") == "end_turn"
        check_tool_calls(agent, sid)
        creates = [m["params"] for m in agent.sent("terminal/create")]
    launchers = tmp_path / "hermes-home" / "acp-hermes" / "terminals"
    assert asked_ids(client) == []  # both ran unasked, inside the sandbox
    (plain_create, peek_create) = creates
    # The user's command line is what each editor shows: as written when it is plain words, quoted
    # otherwise (inert in an editor that joins arguments unquoted); never a word of the sandbox.
    for create, user, shown in ((plain_create, plain, plain), (peek_create, peek, shlex.quote(peek))):
        command, args = create["command"], create["args"]
        assert command == "/bin/sh" and args[1] == shown
        assert Path(args[0]).parent == launchers and Path(args[0]).name.startswith("sandboxed-")
        for editor, title in TITLES.items():
            text = title(command, args)
            assert text.startswith("/bin/sh ") and args[0] in text, editor
            assert (json.dumps(shown) if editor == "acpx" else user) in text, editor
            assert not any(word in text for word in WRAPPER_WORDS), editor
    # ... while what ran was the sandboxed command line: the key stays hidden, no secret in the environment.
    peeked, _ = tool_result(fake_anthropic, "toolu_peek")
    assert "PRIVATE KEY" not in peeked and "key=[]" in peeked
    assert tool_result(fake_anthropic, "toolu_plain") == (".\n..\n[exit code: 0]", False)
    assert list(launchers.iterdir()) == []  # each script went once its command ended


@needs_sandbox
async def test_leaving_the_sandbox_asks_and_says_why(tmp_path: Path, fake_anthropic: FakeAnthropic) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    fake_anthropic.script(
        terminal("curl -sS http://127.0.0.1:9/", "toolu_net"),
        terminal(f"cp notes.txt {outside}/notes.txt", "toolu_copy"),
        terminal(f"touch {outside}/asked-for", "toolu_asked", outside_sandbox=True),
        text_reply("done"),
    )
    answers: dict[str, str | None] = {"toolu_net": "reject_once", "toolu_copy": "allow_once",
                                      "toolu_asked": "allow_once"}
    client = EditorClient(policy=by_call(answers))
    async with running_agent(tmp_path, fake_anthropic, client=client) as agent:
        (agent.workspace / "notes.txt").write_text("n\n")
        sid = await agent.new_session()
        await agent.conn.set_session_mode(session_id=sid, mode_id="bypass")
        assert await agent.prompt(sid, "ship it") == "end_turn"
        check_tool_calls(agent, sid)
    assert asked_ids(client) == ["toolu_net", "toolu_copy", "toolu_asked"]
    titles = {r["toolCall"]["toolCallId"]: r["toolCall"]["title"] for r in client.permission_requests}
    assert "needs the network" in titles["toolu_net"]
    assert "runs outside the sandbox" in titles["toolu_copy"] and "outside the workspace" in titles["toolu_copy"]
    assert "runs outside the sandbox" in titles["toolu_asked"]
    assert (outside / "notes.txt").exists() and (outside / "asked-for").exists()  # approved: ran outside
    options = [[o["kind"] for o in r["options"]] for r in client.permission_requests]
    assert options == [["allow_once", "reject_once"]] * 3  # leaving is never granted for good


async def test_without_a_sandbox_the_user_is_told_once_per_session(tmp_path: Path,
                                                                   fake_anthropic: FakeAnthropic) -> None:
    write_config(tmp_path / "hermes-home", "sandbox: off\n")
    fake_anthropic.script(terminal("echo one", "toolu_1"), terminal("echo two", "toolu_2"), text_reply("done"))
    client = EditorClient(policy=choose("allow_once"))
    async with running_agent(tmp_path, fake_anthropic, client=client) as agent:
        sid = await agent.new_session()
        assert await agent.prompt(sid, "run two") == "end_turn"
        assert await agent.prompt(sid, "/sandbox") == "end_turn"
        described = agent.agent_text(sid)
    first, second = (r["toolCall"]["content"] for r in client.permission_requests)
    assert any("without an OS sandbox" in str(item) for item in first)
    assert not any("without an OS sandbox" in str(item) for item in second)
    assert "no sandbox: turned off in the configuration" in described


def running_with(token: str) -> list[int]:
    """Host pids of live processes whose command line contains ``token``."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and token in (entry / "cmdline").read_bytes().decode(errors="replace") \
                    and (entry / "stat").read_text().rsplit(")", 1)[1].split()[0] != "Z":
                found.append(int(entry.name))
        except OSError:
            continue
    return found


@needs_sandbox
async def test_cancelling_a_sandboxed_command_ends_everything_it_started(
    tmp_path: Path, fake_anthropic: FakeAnthropic
) -> None:
    token = f"31.{os.getpid()}"  # a sleep length no other process uses
    command = f"(setsid sleep {token} &) ; (sleep {token}; touch late) & echo started; sleep {token}"
    fake_anthropic.script(terminal(command, "toolu_slow"), text_reply("Still here."))
    fake_anthropic.script_auxiliary(text_reply("Cancelled"))
    async with running_agent(tmp_path, fake_anthropic, client=EditorClient(policy=choose("allow_once"))) as agent:
        sid = await agent.new_session()
        task = PromptTask(agent, sid)
        async with anyio.create_task_group() as group:
            group.start_soon(task.run, "wait")
            await agent.wait_for(lambda: len(running_with(token)) >= 3)
            assert await cancel_and_wait(agent, task) == "cancelled"
        # The namespace is torn down by the kernel once its first process dies: bounded wait for that.
        with anyio.fail_after(10):
            while running_with(token):
                await anyio.sleep(0.05)
        assert await agent.prompt(sid, "and now?") == "end_turn"
    assert not (agent.workspace / "late").exists()
