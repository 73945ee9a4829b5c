"""The agent's files on disk: private to their owner, tidy after a killed write, and a damaged
session database reported with its path and repaired by ``acp-hermes doctor --repair``.
"""

from __future__ import annotations

import os
import re
import stat
import time
from pathlib import Path

import pytest
from acp import RequestError

from acp_hermes_memory.session_db import SessionDB
from tests.integration.test_cli import run_cli
from tests.support.acp_harness import EditorClient, choose, running_agent
from tests.support.fake_anthropic import FakeAnthropic, text_reply, tool_reply

pytestmark = pytest.mark.anyio


def mode_of(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


async def test_conversations_logs_and_grants_are_readable_by_their_owner_only(
    tmp_path: Path, fake_anthropic: FakeAnthropic
) -> None:
    home = tmp_path / "hermes-home"
    own = home / "acp-hermes"
    own.mkdir(parents=True)
    stale, fresh = own / ".permissions.yaml.0a1b2c.tmp", own / ".config.yaml.3d4e5f.tmp"
    stale.write_text("half a write")
    fresh.write_text("a write under way")
    two_hours_ago = time.time() - 7200
    os.utime(stale, (two_hours_ago, two_hours_ago))
    fake_anthropic.script(tool_reply("terminal", {"command": "echo hi"}, id="toolu_echo"), text_reply("done"))
    old_umask = os.umask(0o022)  # what most users have: new files 0644 unless the agent says otherwise
    try:
        client = EditorClient(policy=choose("allow_always"))
        async with running_agent(tmp_path, fake_anthropic, client=client, home=home) as agent:
            sid = await agent.new_session()
            assert not stale.exists() and fresh.exists()  # tidied before the first session was served
            assert await agent.prompt(sid, "say hi") == "end_turn"
            database = sorted(own.glob("state.db*"))
            assert mode_of(own) == 0o700 and mode_of(own / "logs") == 0o700
            assert {p.name: mode_of(p) for p in database if not p.name.endswith(".lock")} == {
                p.name: 0o600 for p in database if not p.name.endswith(".lock")
            }
            assert len(database) >= 2  # the database and its write-ahead log
    finally:
        os.umask(old_umask)
    assert mode_of(own / "permissions.yaml") == 0o600
    logs = list((own / "logs").iterdir())
    assert logs and all(mode_of(log) == 0o600 for log in logs)


async def test_a_damaged_database_is_named_with_its_fix_and_doctor_repair_recovers_it(
    tmp_path: Path, fake_anthropic: FakeAnthropic
) -> None:
    home = tmp_path / "hermes-home"
    database = home / "acp-hermes" / "state.db"
    database.parent.mkdir(parents=True)
    with SessionDB(database) as db:
        db.create_session("kept", cwd=str(tmp_path), model="m", mode="default", model_config={}, system_prompt="")
        db.append_message("kept", "user", "remember this conversation")
    with database.open("r+b") as raw:  # scribble over the header: SQLite no longer knows the file
        raw.write(b"this is not a database any more" * 4)

    async with running_agent(tmp_path, fake_anthropic, home=home) as agent:
        with pytest.raises(RequestError) as refused:
            await agent.new_session()
    message = str(refused.value)
    assert str(database) in message and "acp-hermes doctor --repair" in message

    checked = run_cli("doctor", home=home)
    assert checked.returncode != 0 and "DAMAGED" in checked.stdout
    repaired = run_cli("doctor", "--repair", home=home)
    assert "damaged file is kept as" in repaired.stdout, repaired.stdout + repaired.stderr
    assert re.search(r"recovered \d+ session\(s\) and \d+ message\(s\)", repaired.stdout)  # a wiped header: 0
    assert "DAMAGED" not in run_cli("doctor", home=home).stdout  # (no API key is its only problem here)
    assert list(database.parent.glob("state.db.damaged-*"))  # nothing thrown away

    fake_anthropic.script(text_reply("fresh start"))
    async with running_agent(tmp_path, fake_anthropic, home=home) as agent:
        sid = await agent.new_session()
        assert await agent.prompt(sid, "hello again") == "end_turn"
