"""`acp-hermes sessions …` as a real subprocess over the state.db a real server wrote."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.integration.test_cli import run_cli
from tests.support.acp_harness import running_agent
from tests.support.fake_anthropic import FakeAnthropic, text_reply

pytestmark = pytest.mark.anyio


async def test_list_show_search_export_and_delete(tmp_path: Path, fake_anthropic: FakeAnthropic) -> None:
    home = tmp_path / "hermes-home"
    fake_anthropic.script(text_reply("Use a zephyrine lexer."), text_reply("Tabs."))
    fake_anthropic.script_auxiliary(text_reply("Lexer choice"), text_reply("Indentation"))
    async with running_agent(tmp_path, fake_anthropic, home=home) as agent:
        first = await agent.new_session()
        assert await agent.prompt(first, "which lexer?") == "end_turn"
        await agent.wait_for_update(first, "session_info_update")
        second = await agent.new_session()
        assert await agent.prompt(second, "tabs or spaces?") == "end_turn"
        await agent.wait_for_update(second, "session_info_update")

    listed = json.loads(run_cli("sessions", "list", "--json", home=home).stdout)
    assert [s["id"] for s in listed] == [second, first] and listed[1]["title"] == "Lexer choice"
    assert "Lexer choice" in run_cli("sessions", "list", home=home).stdout

    shown = run_cli("sessions", "show", first, home=home).stdout
    assert shown.startswith("# Lexer choice") and "which lexer?" in shown and "zephyrine" in shown
    found = json.loads(run_cli("sessions", "search", "zephyrine", "--json", home=home).stdout)
    assert [s["id"] for s in found] == [first]

    out = tmp_path / "first.jsonl"
    assert run_cli("sessions", "export", first, "--format", "jsonl", "--output", str(out), home=home).returncode == 0
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["role"] for r in rows] == ["user", "assistant"] and rows[1]["content"] == "Use a zephyrine lexer."

    refused = run_cli("sessions", "delete", first, home=home)  # no terminal to ask on, no --yes
    assert refused.returncode == 2 and "--yes" in refused.stderr
    assert run_cli("sessions", "delete", first, "--yes", home=home).returncode == 0
    assert [s["id"] for s in json.loads(run_cli("sessions", "list", "--json", home=home).stdout)] == [second]
    missing = run_cli("sessions", "show", first, home=home)
    assert missing.returncode == 1 and "no session" in missing.stderr
