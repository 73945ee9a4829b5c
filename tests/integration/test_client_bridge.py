"""Tools through the editor's own file system and terminals (client fs and terminal capabilities).

With ``fs`` the agent reads through ``fs/read_text_file`` (so unsaved buffers win) and writes
through ``fs/write_text_file``; with ``terminal`` commands run in ``terminal/create`` terminals
that the tool call embeds and that are released afterwards. After the agent's own command
changed a file on disk, a read must not serve the editor's stale buffer.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from tests.support.acp_harness import EditorClient, choose, running_agent
from tests.support.fake_anthropic import FakeAnthropic, text_reply, tool_reply
from tests.support.tool_checks import check_tool_calls, tool_result

pytestmark = pytest.mark.anyio

ON_DISK = "def main():\n    return 1\n"
UNSAVED = "def main():\n    return 42  # not saved yet\n"


async def test_reads_and_writes_go_through_the_editor(tmp_path: Path, fake_anthropic: FakeAnthropic) -> None:
    patch = (
        "--- a/lib.py\n+++ b/lib.py\n@@ -1 +1 @@\n-X = 1\n+X = 2\n"
        "--- /dev/null\n+++ b/new/mod.py\n@@ -0,0 +1 @@\n+Y = 3\n"
    )
    fake_anthropic.script(
        tool_reply("read_file", {"path": "app.py"}, id="toolu_read"),
        tool_reply("patch", {"mode": "replace", "path": "app.py", "old_string": "return 42",
                             "new_string": "return 43"}, id="toolu_replace"),
        tool_reply("write_file", {"path": "pkg/fresh.py", "content": "Z = 0\n"}, id="toolu_write"),
        tool_reply("patch", {"mode": "patch", "patch": patch}, id="toolu_multi"),
        tool_reply("read_file", {"path": "lib.py"}, id="toolu_reread"),
        tool_reply("search_files", {"pattern": "X = ", "file_glob": "*.py"}, id="toolu_search"),
        tool_reply("todo", {"todos": [{"id": "a", "content": "Check the editor", "status": "completed"}]},
                   id="toolu_todo"),
        text_reply("done"),
    )
    fake_anthropic.script_auxiliary(text_reply("Bridge"))
    client = EditorClient(policy=choose("allow_once"))
    async with running_agent(tmp_path, fake_anthropic, client=client, fs=True) as agent:
        app, lib = agent.workspace / "app.py", agent.workspace / "lib.py"
        app.write_text(ON_DISK)
        lib.write_text("X = 1\n")
        client.buffers[str(app)] = UNSAVED
        sid = await agent.new_session()
        assert await agent.prompt(sid, "edit through the editor") == "end_turn"
        calls = check_tool_calls(agent, sid)

    assert all(view.status == "completed" for view in calls.values())
    # The unsaved buffer wins over the disk, for reading and as the base of an edit.
    assert tool_result(fake_anthropic, "toolu_read")[0] == "1|def main():\n2|    return 42  # not saved yet"
    assert str(app) in client.reads
    assert calls["toolu_replace"].content("diff") == [
        {"type": "diff", "path": str(app), "oldText": UNSAVED, "newText": UNSAVED.replace("42", "43")}
    ]
    # Every write arrived as fs/write_text_file (absolute paths) and landed on disk through the editor.
    fresh, new_module = agent.workspace / "pkg" / "fresh.py", agent.workspace / "new" / "mod.py"
    assert client.writes == [
        (str(app), UNSAVED.replace("42", "43")),
        (str(fresh), "Z = 0\n"),
        (str(lib), "X = 2\n"),
        (str(new_module), "Y = 3\n"),
    ]
    assert app.read_text() == UNSAVED.replace("42", "43")
    assert new_module.read_text() == "Y = 3\n"
    assert calls["toolu_write"].content("diff") == [{"type": "diff", "path": str(fresh), "newText": "Z = 0\n"}]
    multi_diffs = {d["path"]: d for d in calls["toolu_multi"].content("diff")}
    assert "oldText" not in multi_diffs[str(new_module)]  # a created file has no old text
    assert tool_result(fake_anthropic, "toolu_reread")[0] == "1|X = 2"
    assert len(agent.sent("fs/write_text_file")) == 4
    assert "lib.py:1:X = 2" in tool_result(fake_anthropic, "toolu_search")[0]
    assert agent.updates(sid, "plan")[-1]["entries"] == [
        {"content": "Check the editor", "priority": "medium", "status": "completed"}
    ]


async def test_commands_run_in_editor_terminals_that_are_embedded_then_released(
    tmp_path: Path, fake_anthropic: FakeAnthropic
) -> None:
    fake_anthropic.script(
        tool_reply("terminal", {"command": "pwd; echo built; exit 0"}, id="toolu_ok"),
        tool_reply("terminal", {"command": "echo broken >&2; exit 4"}, id="toolu_bad"),
        tool_reply("terminal", {"command": "sleep 30", "timeout": 1}, id="toolu_slow"),
        text_reply("ran"),
    )
    fake_anthropic.script_auxiliary(text_reply("Terminals"))
    client = EditorClient(policy=choose("allow_once"))
    async with running_agent(tmp_path, fake_anthropic, client=client, terminal=True) as agent:
        sid = await agent.new_session()
        assert await agent.prompt(sid, "build") == "end_turn"
        calls = check_tool_calls(agent, sid)
        sent = agent.sent()

    creates = [m["params"] for m in sent if m.get("method") == "terminal/create"]
    assert len(creates) == 3
    assert all(params["cwd"] == str(agent.workspace) for params in creates)
    # The exact command is what the terminal shows (quoted unless it is plain words) beside the script that runs it.
    assert [(params["command"], params["args"][1]) for params in creates] == [
        ("/bin/sh", "'pwd; echo built; exit 0'"), ("/bin/sh", "'echo broken >&2; exit 4'"), ("/bin/sh", "sleep 30")]

    ok, bad, slow = calls["toolu_ok"], calls["toolu_bad"], calls["toolu_slow"]
    terminal_ids = list(client.terminals)
    assert sorted(client.released) == sorted(terminal_ids)  # every terminal was released
    for view, terminal_id in zip((ok, bad, slow), terminal_ids, strict=True):
        embedded = [i for i, m in enumerate(sent) if m.get("method") == "session/update"
                    and m["params"]["update"].get("toolCallId") == view.id
                    and {"type": "terminal", "terminalId": terminal_id} in (m["params"]["update"].get("content") or [])]
        released = next(i for i, m in enumerate(sent) if m.get("method") == "terminal/release"
                        and m["params"]["terminalId"] == terminal_id)
        assert embedded and embedded[0] < released, f"{terminal_id} was not shown before its release"
        assert view.content("terminal") == [{"type": "terminal", "terminalId": terminal_id}]

    assert ok.status == "completed" and ok.text() == "exit code 0"
    assert tool_result(fake_anthropic, "toolu_ok") == (f"{agent.workspace}\nbuilt\n[exit code: 0]", False)
    assert bad.status == "failed"
    assert tool_result(fake_anthropic, "toolu_bad") == ("broken\n[exit code: 4]", True)
    assert slow.status == "failed"
    assert "timed out after 1s" in tool_result(fake_anthropic, "toolu_slow")[0]
    assert client.killed == [terminal_ids[2]]  # the timeout killed the terminal's command
    assert all(t.process.returncode is not None for t in client.terminals.values())


@pytest.mark.parametrize("client_terminal", [False, True], ids=["local-command", "client-terminal"])
async def test_reads_after_the_agents_own_command_are_not_stale(
    tmp_path: Path, fake_anthropic: FakeAnthropic, client_terminal: bool
) -> None:
    fake_anthropic.script(
        tool_reply("read_file", {"path": "config.py"}, id="toolu_before"),
        tool_reply("terminal", {"command": "printf 'DEBUG = True\\n' > config.py"}, id="toolu_rewrite"),
        tool_reply("read_file", {"path": "config.py"}, id="toolu_after"),
        tool_reply("read_file", {"path": "other.py"}, id="toolu_untouched"),
        text_reply("done"),
    )
    fake_anthropic.script_auxiliary(text_reply("Stale"))
    client = EditorClient(policy=choose("allow_once"))
    async with running_agent(tmp_path, fake_anthropic, client=client, fs=True, terminal=client_terminal) as agent:
        config, other = agent.workspace / "config.py", agent.workspace / "other.py"
        config.write_text("DEBUG = False\n")
        other.write_text("SAVED = 1\n")
        an_hour_ago = time.time() - 3600
        for path in (config, other):
            os.utime(path, (an_hour_ago, an_hour_ago))
        client.buffers[str(config)] = "DEBUG = False\n"  # the editor has the file open, unmodified
        client.buffers[str(other)] = "UNSAVED = 2\n"
        sid = await agent.new_session()
        assert await agent.prompt(sid, "flip the flag") == "end_turn"
        calls = check_tool_calls(agent, sid)

    assert all(view.status == "completed" for view in calls.values())
    assert bool(client.terminals) is client_terminal
    assert tool_result(fake_anthropic, "toolu_before")[0] == "1|DEBUG = False"
    assert config.read_text() == "DEBUG = True\n"
    assert client.buffers[str(config)] == "DEBUG = False\n"  # the editor never reloaded it
    assert tool_result(fake_anthropic, "toolu_after")[0] == "1|DEBUG = True"
    # A file the command did not touch is still read through the editor, unsaved changes included.
    assert tool_result(fake_anthropic, "toolu_untouched")[0] == "1|UNSAVED = 2"
