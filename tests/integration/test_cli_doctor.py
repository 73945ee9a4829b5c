"""`acp-hermes doctor` names what would go wrong: the search index, memory, skills and editor configs."""

from __future__ import annotations

import json
import re
import sqlite3
import subprocess
from pathlib import Path

import pytest

from acp_hermes_memory.session_db import SessionDB
from tests.integration.test_cli import SCRIPT, cli_env
from tests.integration.test_cli_memory_skills import INJECTION, write_skill
from tests.support.acp_harness import write_config

ZED_SETTINGS = """// Zed settings: comments and trailing commas are fine here
{
  "theme": "One Dark", /* inline */
  "agent_servers": {
    "Hermes (old checkout)": {
      "type": "custom",
      "command": "/nowhere/acp-hermes/.venv/bin/acp-hermes",
      "args": [],
    },
    "Hermes": {"command": "%s", "args": [], "env": {"NOTE": "a // not a comment, ok"}},
    "Other agent": {"command": "/nowhere/other-agent"},
  },
}
"""


def doctor(home: Path, user_home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {key: value for key, value in cli_env(home).items() if key != "XDG_CONFIG_HOME"}
    env["HOME"] = str(user_home)
    return subprocess.run([SCRIPT, "doctor", *args], capture_output=True, text=True, env=env,
                          cwd=str(home.parent), stdin=subprocess.DEVNULL, timeout=120)


def test_doctor_checks_search_index_memory_skills_and_editor_configs(tmp_path: Path) -> None:
    home, user_home = tmp_path / "hermes-home", tmp_path / "user"
    write_config(home, "api_key: sk-ant-doctor-0123456789abcdef\nmemory_char_limit: 100\n"
                       "prices: {my-model: {input: 1, output: 2.5}}\n"
                       "mcp_servers:\n"
                       "  tracker: {command: sh, args: [-c, 'exit 0'], env: {TRACKER_TOKEN: tok-secret-123}}\n"
                       "  gone: {command: /nowhere/mcp-server}\n"
                       "  docs: {url: 'https://mcp.example.com/mcp', headers: {Authorization: Bearer hdr-secret}}\n"
                       "  broken: {url: 'ftp://x'}\n")
    with SessionDB(home / "acp-hermes" / "state.db") as db:
        db.create_session("s1", cwd="/w", model="m", mode="default", model_config={}, system_prompt="")
        db.append_message("s1", "user", "zephyrine lexer")
    with sqlite3.connect(home / "acp-hermes" / "state.db") as conn:  # rows gone, their words left in the index
        conn.execute("DROP TRIGGER messages_fts_delete")
        conn.execute("DELETE FROM messages")
    (home / "memories").mkdir()
    (home / "memories" / "MEMORY.md").write_text("x" * 150, encoding="utf-8")
    (home / "memories" / "USER.md").write_text(f"Likes tea.\n§\n{INJECTION}", encoding="utf-8")
    write_skill(home / "skills", "deploy", "Ship it.")
    (home / "skills" / "broken").mkdir()
    (home / "skills" / "broken" / "SKILL.md").write_text("---\nname: broken\ndescription: [unclosed\n---\nBody.\n")
    (home / "skills" / "nameless").mkdir()
    (home / "skills" / "nameless" / "SKILL.md").write_text("---\ndescription: Listed anyway.\n---\nBody.\n")
    installed = tmp_path / "bin" / "acp-hermes"
    installed.parent.mkdir()
    installed.write_text("#!/bin/sh\n")
    installed.chmod(0o755)
    (user_home / ".config" / "zed").mkdir(parents=True)
    (user_home / ".config" / "zed" / "settings.json").write_text(ZED_SETTINGS % installed)
    (user_home / ".jetbrains").mkdir()
    (user_home / ".jetbrains" / "acp.json").write_text('{\n  "agent_servers": {\n    "acp-hermes": {command: 1}\n')

    checked = doctor(home, user_home)
    report = checked.stdout
    assert checked.returncode == 1 and checked.stderr == ""  # no progress lines: stderr is not a terminal
    problems = report.split("\nProblems\n")[1]
    assert "search index, word search: OUT OF STEP" in report
    assert "search index of the session database is out of step" in problems
    assert "MEMORY.md holds 150 characters, over its limit of 100" in problems
    assert "USER.md entry 2 matches the threat pattern 'prompt_injection'" in problems
    assert "skill broken is not loaded" in problems and "not valid YAML" in problems
    assert "note: nameless loads, but a write would refuse it" in report and "nameless" not in problems
    assert f"2 skills for {tmp_path} (home: 2)" in report  # deploy, and nameless: listed leniently
    assert f"agent “Hermes” runs {installed}: found" in report
    stale = "/nowhere/acp-hermes/.venv/bin/acp-hermes"
    assert f"agent “Hermes (old checkout)”: the command {stale} does not exist" in problems
    assert "Other agent" not in report
    assert "acp.json): not valid JSON at line 3" in problems
    assert "my-model: {input: 1, output: 2.5}" in report
    assert "mcp_servers             tracker, gone, docs, broken" in report
    assert "tok-secret-123" not in report and "hdr-secret" not in report  # their env and headers stay unsaid
    assert "  tracker: stdio, sh -c exit 0 (command found: " in report
    assert "MCP server gone: command '/nowhere/mcp-server' not found" in problems
    assert "  docs: http, https://mcp.example.com/mcp (remote)" in report
    assert "mcp_servers.broken: expected `command` (stdio) or an http(s) `url`" in problems
    assert not re.search(r"\bNone\b|\bTrue\b|\bFalse\b|\[\]|\{\}", report)

    repaired = doctor(home, user_home, "--repair")
    assert "rebuilt the word search index from the stored messages" in repaired.stdout
    again = doctor(home, user_home).stdout
    assert "search index, word search: working, in step with the messages" in again
    assert "search index of the session database" not in again


PAGE = 4096


def _damaged_database(path: Path, *, sessions_too: bool) -> dict[str, int]:
    """A real state.db of 12 messages in two sessions (three to a page), with the page holding messages
    6-8 zeroed, and the sessions table's page too if asked; returns how many messages each session had."""
    written = {"alpha": 0, "beta": 0}
    with SessionDB(path) as db:
        for session_id in written:
            db.create_session(session_id, cwd="/w", model="m", mode="default", model_config={}, system_prompt="")
        for n in range(12):
            session_id = "alpha" if n < 7 else "beta"
            calls = [{"id": f"toolu_{n}", "name": "terminal", "arguments": {"command": "make"}}] if n % 3 == 1 else None
            filler = " ".join(f"word{n}x{i}" for i in range(110))
            db.append_message(session_id, "assistant" if n % 2 else "user", f"MARKER-{n:02d}: {filler}",
                              tool_calls=calls)
            written[session_id] += 1
    with sqlite3.connect(path) as conn:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        assert conn.execute("PRAGMA page_size").fetchone()[0] == PAGE
        sessions_page = conn.execute("SELECT rootpage FROM sqlite_master WHERE name = 'sessions'").fetchone()[0]
    data = path.read_bytes()
    pages = {data.index(f"MARKER-{n:02d}:".encode()) // PAGE for n in (6, 7, 8)}
    assert len(pages) == 1 and data[pages.pop() * PAGE] == 0x0D  # one table leaf page holds the three
    with path.open("r+b") as raw:
        for page in (data.index(b"MARKER-07:") // PAGE, *([sessions_page - 1] if sessions_too else [])):
            raw.seek(page * PAGE)
            raw.write(bytes(PAGE))
    return written


@pytest.mark.parametrize("sessions_too", [False, True], ids=["messages page", "messages and sessions pages"])
def test_repair_reports_the_rows_it_really_recovered_and_lost(tmp_path: Path, sessions_too: bool) -> None:
    home, user_home = tmp_path / "hermes-home", tmp_path / "user"
    database = home / "acp-hermes" / "state.db"
    database.parent.mkdir(parents=True)
    written = _damaged_database(database, sessions_too=sessions_too)

    repaired = doctor(home, user_home, "--repair").stdout
    with sqlite3.connect(database) as conn:
        counts = dict(conn.execute("SELECT session_id, count(*) FROM messages GROUP BY session_id").fetchall())
        stored = dict(conn.execute("SELECT id, message_count FROM sessions").fetchall())
        markers = sorted(int(row[0][7:9]) for row in conn.execute("SELECT content FROM messages"))
        calls = dict(conn.execute("SELECT id, tool_call_count FROM sessions").fetchall())
    recovered = sum(counts.values())
    assert markers == [0, 1, 2, 3, 4, 5, 9, 10, 11]  # the zeroed page held 6, 7 and 8: nothing else is gone
    assert (f"  repaired: a fresh session database holds 2 sessions and {recovered} messages recovered from the "
            f"damaged one, which is kept as {database}.damaged-") in repaired
    assert (f"  lost: {12 - recovered} messages that the damaged file lists but that cannot be read\n"
            in repaired)  # plurals written out; no "0 sessions"
    assert ("  of those, 2 sessions lost their title and folder" in repaired) is sessions_too
    assert "(s)" not in repaired
    assert "500" not in repaired.split("Environment")[1].split("ripgrep")[0]
    assert stored == counts == {"alpha": 6, "beta": 3} != written  # counted from what is there
    assert calls == {"alpha": 2, "beta": 1}  # messages 1 and 4 | 10 called a tool (7 is lost)

    listed = {row["id"]: row["messages"] for row in json.loads(
        subprocess.run([SCRIPT, "sessions", "list", "--json"], capture_output=True, text=True,
                       env=cli_env(home), timeout=120).stdout)}
    assert listed == counts
    shown = subprocess.run([SCRIPT, "sessions", "list"], capture_output=True, text=True, env=cli_env(home),
                           timeout=120).stdout
    assert "[None]" not in shown and shown.count("[folder unknown]") == (2 if sessions_too else 0)

    again = doctor(home, user_home, "--repair").stdout
    assert "  the session database needs no repair\n" in again and "nothing to repair" not in again


ZED_WRONG = """{
  "agent_servers": {
    "acp-hermes": {"command": "%s", "env": {"ANTHROPIC_API_KEY": "ANTHROPIC_API_KEY"},
                   "default_mode": "acceptEdits", "default_config_options": {"mode": "yolo"}},
    "hermes dollar": {"command": "%s", "env": {"ANTHROPIC_API_KEY": "$ANTHROPIC_API_KEY"}},
    "hermes fine": {"command": "%s", "env": {"ANTHROPIC_API_KEY": "sk-ant-api03-abc"}, "default_mode": "plan"}
  }
}
"""

AVANTE_DEFAULT = """-- my avante spec
return {
  "yetone/avante.nvim",
  opts = {
    provider = "acp-hermes",
    -- behaviour = { auto_approve_tool_permissions = false },  (commented out: not in force)
    acp_providers = {
      ["acp-hermes"] = { command = "%s", args = {} },
    },
  },
}
"""


def test_doctor_flags_editor_settings_that_start_acp_hermes_wrong(tmp_path: Path) -> None:
    home, user_home = tmp_path / "hermes-home", tmp_path / "user"
    write_config(home, "api_key: sk-ant-doctor-0123456789abcdef\n")
    installed = tmp_path / "bin" / "acp-hermes"
    installed.parent.mkdir()
    installed.write_text("#!/bin/sh\n")
    installed.chmod(0o755)
    (user_home / ".config" / "zed").mkdir(parents=True)
    (user_home / ".config" / "zed" / "settings.json").write_text(ZED_WRONG % (installed, installed, installed))
    plugins = user_home / ".config" / "nvim" / "lua" / "plugins"
    plugins.mkdir(parents=True)
    (plugins / "avante.lua").write_text(AVANTE_DEFAULT % installed)

    report = doctor(home, user_home).stdout
    problems = report.split("\nProblems\n")[1]
    assert "agent “acp-hermes”: env ANTHROPIC_API_KEY is 'ANTHROPIC_API_KEY', a variable's name, not a key" in problems
    assert "agent “hermes dollar”: env ANTHROPIC_API_KEY is '$ANTHROPIC_API_KEY', a variable's name" in problems
    assert "default_mode is 'acceptEdits', which is not an acp-hermes mode: use one of default, accept-edits" \
        in problems
    assert "default_config_options.mode is 'yolo'" in problems
    assert "hermes fine" not in problems and "sk-ant-api03-abc" not in report
    avante = f"Neovim (avante.nvim) ({plugins / 'avante.lua'})"
    assert f"{avante}: agent “acp-hermes” runs {installed}: found" in report
    assert f"{avante}, agent “acp-hermes”: avante.nvim approves every permission request itself" in problems
    assert "auto_approve_tool_permissions is not set (avante's default: true)" in problems

    (plugins / "avante.lua").write_text((AVANTE_DEFAULT % installed).replace(
        "provider = ", "behaviour = { auto_approve_tool_permissions = false },\n    provider = "))
    (user_home / ".config" / "zed" / "settings.json").write_text("{}")
    fixed = doctor(home, user_home).stdout
    assert f"{avante}: agent “acp-hermes” runs {installed}: found" in fixed
    assert "avante.nvim approves" not in fixed and "variable's name" not in fixed


def test_a_home_that_is_a_file_is_one_problem_not_a_configuration_error_too(tmp_path: Path) -> None:
    home, user_home = tmp_path / "hermes-home", tmp_path / "user"
    home.write_text("not a directory\n")
    problems = doctor(home, user_home).stdout.split("\nProblems\n")[1]
    assert problems.count("is a file, not a directory") == 1, problems
    assert "invalid configuration" not in problems


def test_a_skill_whose_folder_name_is_invalid_is_reported_once_with_that_reason(tmp_path: Path) -> None:
    home, user_home = tmp_path / "hermes-home", tmp_path / "user"
    write_config(home, "api_key: sk-ant-doctor-0123456789abcdef\n")
    write_skill(home / "skills", "deploy", "Ship it.")
    (home / "skills" / "Deploy Prod").mkdir()  # its name line matches the folder, so only the folder is wrong
    (home / "skills" / "Deploy Prod" / "SKILL.md").write_text("---\nname: Deploy Prod\ndescription: Ship.\n---\nGo.\n")
    (home / "skills" / "My Tools" / "lint").mkdir(parents=True)  # a category folder the store refuses
    (home / "skills" / "My Tools" / "lint" / "SKILL.md").write_text("---\nname: lint\ndescription: Lint.\n---\nRun.\n")

    checked = doctor(home, user_home, "--log-level", "WARNING")
    problems = checked.stdout.split("\nProblems\n")[1].splitlines()
    assert checked.returncode == 1
    assert problems == [
        "  - skill Deploy Prod is not loaded "
        f"({home / 'skills' / 'Deploy Prod' / 'SKILL.md'}): its folder's name 'Deploy Prod' is not a valid skill "
        "name (lowercase letters, digits, '.', '_' and '-', at most 64 characters): rename the folder, and the "
        "frontmatter's `name:` to match",
        "  - skill My Tools/lint is not loaded "
        f"({home / 'skills' / 'My Tools' / 'lint' / 'SKILL.md'}): its category folder's name 'My Tools' is not a "
        "valid name (lowercase letters, digits, '.', '_' and '-', at most 64 characters): rename that folder",
    ]
    assert "NOT LOADED: Deploy Prod: its folder's name" in checked.stdout
    assert checked.stderr.count("not listing the skill in") <= 1  # the store's own log line, once per look

    listing = subprocess.run([SCRIPT, "skills", "list"], capture_output=True, text=True, env=cli_env(home),
                             cwd=str(tmp_path), stdin=subprocess.DEVNULL, timeout=120)
    assert listing.returncode == 0 and listing.stdout.startswith("deploy ")
    assert listing.stderr == ("Not listed, as they do not load: Deploy Prod, My Tools/lint "
                              "(`acp-hermes doctor` says why).\n")
