"""The agent's files on disk: private to their owner, tidy after a killed write, and a damaged
session database reported with its path and repaired by ``acp-hermes doctor --repair``.
"""

from __future__ import annotations

import os
import re
import stat
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
from acp import RequestError

from acp_hermes_memory.session_db import SessionDB
from tests.integration.test_cli import SCRIPT, cli_env, run_cli
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
    assert "damaged one, which is kept as" in repaired.stdout, repaired.stdout + repaired.stderr
    assert re.search(r"holds [\d,]+ sessions? and [\d,]+ messages? recovered", repaired.stdout)  # a wiped header: 0
    assert "DAMAGED" not in run_cli("doctor", home=home).stdout  # (no API key is its only problem here)
    assert list(database.parent.glob("state.db.damaged-*"))  # nothing thrown away

    fake_anthropic.script(text_reply("fresh start"))
    async with running_agent(tmp_path, fake_anthropic, home=home) as agent:
        sid = await agent.new_session()
        assert await agent.prompt(sid, "hello again") == "end_turn"


def kept_as_moved(name: str) -> bool:
    """The one exception: what a sandboxed command planted in a workspace (``.envrc``, a ``.git`` hook),
    moved into ``acp-hermes/quarantine/<time>/<workspace>/`` as it was, mode included (an executable
    bit is part of the evidence). acp-hermes did not create it, and the quarantine folders above it,
    which acp-hermes did create, are 0700 and keep everyone else out. (SOUL.md would be another, the
    user's own file, but acp-hermes never creates it; a file the user made keeps its mode.)"""
    parts = Path(name).parts
    return parts[:2] == ("acp-hermes", "quarantine") and len(parts) >= 5


def loose_entries(home: Path) -> dict[str, str]:
    """Every folder of ``home`` (itself included) that is not 0700 and every file that is not 0600."""
    loose = {}
    for path in [home, *sorted(home.rglob("*"))]:
        info = path.lstat()
        wanted = 0o700 if stat.S_ISDIR(info.st_mode) else 0o600
        name = str(path.relative_to(home))
        if stat.S_IMODE(info.st_mode) == 0o400 and "/git/objects/" in name:
            continue  # git makes its object files read-only: private as well, and never changed in place
        if stat.S_IMODE(info.st_mode) != wanted and not kept_as_moved(name):
            loose[name] = oct(stat.S_IMODE(info.st_mode))
    return loose


def always_if_offered(tool_call: dict[str, Any], options: list[dict[str, Any]]) -> str:
    kinds = {option["kind"]: option["optionId"] for option in options}
    return kinds.get("allow_always") or kinds["allow_once"]


def editor_script(folder: Path) -> Path:
    """An $EDITOR that writes one entry into the file it is given."""
    editor = folder / "editor.sh"
    editor.write_text('#!/bin/sh\nprintf "Prefers tabs\\n" > "$1"\n', encoding="utf-8")
    editor.chmod(0o755)
    return editor


def run_with(*args: str, home: Path, stdin: str | None = None, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([SCRIPT, *args], input=stdin, stdin=None if stdin is not None else subprocess.DEVNULL,
                          capture_output=True, text=True, env={**cli_env(home), **env}, cwd=str(home.parent),
                          timeout=180)


@pytest.mark.parametrize("umask", [0o022, 0o000], ids=["umask-022", "umask-000"])
async def test_every_folder_and_file_every_command_creates_is_private(
    tmp_path: Path, fake_anthropic: FakeAnthropic, umask: int
) -> None:
    home = tmp_path / "hermes-home"  # fresh: every command below may be the one that makes it
    editor = editor_script(tmp_path)
    skill = "---\nname: rotate-logs\ndescription: Rotate the service logs.\n---\n\nRun `logrotate -f`.\n"
    fake_anthropic.script(
        tool_reply("memory", {"action": "add", "target": "memory", "content": "Tests run with pytest"}),
        tool_reply("skill_manage", {"action": "create", "name": "rotate-logs", "content": skill, "category": "ops"}),
        tool_reply("skill_manage", {"action": "write_file", "name": "rotate-logs",
                                    "file_path": "references/paths.md", "content": "- /var/log/app\n"}),
        tool_reply("terminal", {"command": "echo hi"}),  # asked, and allowed always: permissions.yaml
        tool_reply("terminal", {"command": "touch .envrc"}),  # planted: the sandbox moves it to quarantine/
        text_reply("Noted, saved and checked."),
    )
    fake_anthropic.script_auxiliary(text_reply("Private files"))
    old_umask = os.umask(umask)  # the commands and the server inherit it
    try:
        steps = [
            run_with("setup", "--no-check", home=home, stdin="sk-ant-private-0123456789abcdef\n\n\n"),
            run_with("memory", "edit", "user", home=home, EDITOR=str(editor)),
            run_with("memory", "show", home=home),
            run_with("skills", "list", home=home),
            run_with("sessions", "list", home=home),
            run_with("demo", "--offline", "--yes", home=home),
        ]
        assert [step.returncode for step in steps] == [0] * len(steps), [step.stderr for step in steps]
        run_with("doctor", home=home)  # its status says what it found (no sandbox here, say), not whether it ran
        client = EditorClient(policy=always_if_offered)  # remembered: permissions.yaml
        async with running_agent(tmp_path, fake_anthropic, client=client, home=home) as agent:
            sid = await agent.new_session()
            assert await agent.prompt(sid, "remember, write a skill, check") == "end_turn"
            await agent.wait_for_update(sid, "session_info_update")  # the title, stored
    finally:
        os.umask(old_umask)
    made = {str(path.relative_to(home)) for path in home.rglob("*")}
    assert {"acp-hermes/config.yaml", "acp-hermes/permissions.yaml", "acp-hermes/state.db", "acp-hermes/logs",
            "memories/USER.md", "memories/MEMORY.md", "skills/ops/rotate-logs/SKILL.md",
            "skills/ops/rotate-logs/references/paths.md"} <= made, sorted(made)
    assert any(name.endswith(".lock") for name in made), sorted(made)
    assert any(kept_as_moved(name) and name.endswith("/.envrc") for name in made), sorted(made)
    assert loose_entries(home) == {}


def test_setup_alone_makes_a_private_home_and_what_the_user_made_keeps_its_mode(tmp_path: Path) -> None:
    fresh, users = tmp_path / "fresh-home", tmp_path / "users-home"
    editor = editor_script(tmp_path)
    old_umask = os.umask(0o022)
    try:
        setup = run_with("setup", "--no-check", home=fresh, stdin="sk-ant-private-0123456789abcdef\n\n\n")
        (users / "memories").mkdir(parents=True)  # the user's (or Hermes Agent's): 0755
        user_file = users / "memories" / "USER.md"
        user_file.write_text("Name: Dana", encoding="utf-8")  # 0644
        edits = [run_with("memory", "edit", target, home=users, EDITOR=str(editor)) for target in ("user", "memory")]
    finally:
        os.umask(old_umask)
    assert setup.returncode == 0, setup.stderr
    assert (fresh / "acp-hermes" / "config.yaml").is_file() and loose_entries(fresh) == {}
    assert [edit.returncode for edit in edits] == [0, 0], [edit.stderr for edit in edits]
    assert user_file.read_text(encoding="utf-8") == "Prefers tabs"
    memories = users / "memories"
    assert {p.name: oct(mode_of(p)) for p in [users, memories, *memories.iterdir()]} == {
        "users-home": "0o755", "memories": "0o755", "USER.md": "0o644",  # as the user made them
        "USER.md.lock": "0o600", "MEMORY.md": "0o600", "MEMORY.md.lock": "0o600",  # made by acp-hermes
    }
