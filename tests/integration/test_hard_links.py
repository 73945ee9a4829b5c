"""Hard links to secrets, through the real stdio server: a workspace file that is, under a harmless
name, the inode of a private key or of a file under $HERMES_HOME is read only when asked (every
time, with the reason), and search leaves it out; other hard-linked files read as before.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from tests.support.acp_harness import EditorClient, allow_bypass_here, running_agent
from tests.support.fake_anthropic import FakeAnthropic, text_reply, tool_reply
from tests.support.tool_checks import asked_ids, by_call, check_tool_calls, tool_result

pytestmark = pytest.mark.anyio
KEY = "-----BEGIN OPENSSH PRIVATE KEY----- hunter2\n"
HERMES_SECRET = "OPENROUTER_API_KEY=sk-or-hunter3\n"


def read(path: str, call_id: str) -> Any:
    return tool_reply("read_file", {"path": path}, id=call_id)


def linked_workspace(tmp_path: Path) -> tuple[Path, Path, Path]:
    """A user home with a private key, a HERMES_HOME with a secret, and a workspace whose
    ``notes.txt`` and ``memo.txt`` are hard links to them; ``shared.txt`` and ``copy.txt`` are
    hard links to each other (nothing secret)."""
    home, hermes, workspace = tmp_path / "user-home", tmp_path / "hermes-home", tmp_path / "workspace"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_rsa").write_text(KEY)
    hermes.mkdir()
    allow_bypass_here(hermes)
    (hermes / ".env").write_text(HERMES_SECRET)
    workspace.mkdir()
    os.link(home / ".ssh" / "id_rsa", workspace / "notes.txt")
    os.link(hermes / ".env", workspace / "memo.txt")
    (workspace / "shared.txt").write_text("shared text\n")
    os.link(workspace / "shared.txt", workspace / "copy.txt")
    return home, hermes, workspace


@pytest.mark.parametrize("mode", ["default", "bypass"])
async def test_a_hard_link_to_a_secret_asks_every_time_and_a_refusal_keeps_it_from_the_model(
    tmp_path: Path, fake_anthropic: FakeAnthropic, mode: str
) -> None:
    home, hermes, workspace = linked_workspace(tmp_path)
    fake_anthropic.script(
        read("notes.txt", "toolu_key"),
        read("memo.txt", "toolu_hermes"),
        read("shared.txt", "toolu_shared"),
        read("notes.txt", "toolu_key_again"),
        text_reply("ok"),
    )
    client = EditorClient(policy=by_call({"toolu_key": "reject_once", "toolu_hermes": "reject_once",
                                          "toolu_key_again": "allow_once"}))
    async with running_agent(tmp_path, fake_anthropic, client=client, env={"HOME": str(home)},
                             home=hermes, workspace=workspace) as agent:
        sid = await agent.new_session()
        await agent.conn.set_session_mode(session_id=sid, mode_id=mode)
        assert await agent.prompt(sid, "look around") == "end_turn"
        calls = check_tool_calls(agent, sid)
    # Asked every time, in every mode; the other hard link was read unasked.
    assert asked_ids(client) == ["toolu_key", "toolu_hermes", "toolu_key_again"]
    key_question, hermes_question, _ = (request["toolCall"] for request in client.permission_requests)
    assert key_question["kind"] == "read"
    assert "a hard link to ~/.ssh/id_rsa (inside an SSH directory)" in key_question["title"]
    assert f"is a hard link to {home / '.ssh' / 'id_rsa'}" in str(key_question["content"])
    assert "the agent's own configuration" in hermes_question["title"]
    assert [o["kind"] for o in client.permission_requests[0]["options"]] == ["allow_once", "reject_once"]
    for call_id, secret in (("toolu_key", "hunter2"), ("toolu_hermes", "hunter3")):
        refused, is_error = tool_result(fake_anthropic, call_id)
        assert is_error and secret not in refused
        assert calls[call_id].status == "failed"
    assert "shared text" in tool_result(fake_anthropic, "toolu_shared")[0]
    assert "hunter2" in tool_result(fake_anthropic, "toolu_key_again")[0]  # the user allowed it, once


async def test_search_leaves_out_hard_links_to_secrets(tmp_path: Path, fake_anthropic: FakeAnthropic) -> None:
    home, hermes, workspace = linked_workspace(tmp_path)
    (workspace / "app.py").write_text("key = load('hunter')\n")
    fake_anthropic.script(
        tool_reply("search_files", {"pattern": "hunter"}, id="toolu_search"),
        tool_reply("search_files", {"pattern": "hunter", "path": "notes.txt"}, id="toolu_aimed"),
        text_reply("ok"),
    )
    client = EditorClient(policy=by_call({"toolu_aimed": "reject_once"}))
    async with running_agent(tmp_path, fake_anthropic, client=client, env={"HOME": str(home)},
                             home=hermes, workspace=workspace) as agent:
        sid = await agent.new_session()
        await agent.conn.set_session_mode(session_id=sid, mode_id="bypass")
        assert await agent.prompt(sid, "where is the key loaded?") == "end_turn"
        calls = check_tool_calls(agent, sid)
    found, _ = tool_result(fake_anthropic, "toolu_search")
    assert "app.py" in found and "left out" in found
    assert "hunter2" not in found and "hunter3" not in found and "notes.txt" not in found and "memo.txt" not in found
    assert asked_ids(client) == ["toolu_aimed"]  # a search of that very file asks, as a read of the key
    aimed, is_error = tool_result(fake_anthropic, "toolu_aimed")
    assert is_error and "hunter2" not in aimed and calls["toolu_aimed"].status == "failed"
