"""`acp-hermes doctor` names what would go wrong: the search index, memory, skills and editor configs."""

from __future__ import annotations

import re
import sqlite3
import subprocess
from pathlib import Path

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
