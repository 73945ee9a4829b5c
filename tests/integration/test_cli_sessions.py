"""`acp-hermes sessions …` as a real subprocess over the state.db a real server wrote."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from acp_hermes_memory.session_db import SessionDB
from tests.integration.test_cli import SCRIPT, cli_env, run_cli
from tests.support.acp_harness import running_agent
from tests.support.fake_anthropic import FakeAnthropic, text_reply, tool_reply

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


async def test_jsonl_export_keeps_tool_call_arguments_and_results_as_stored(
    tmp_path: Path, fake_anthropic: FakeAnthropic
) -> None:
    home = tmp_path / "hermes-home"
    (tmp_path / "workspace").mkdir()
    (tmp_path / "workspace" / "notes.txt").write_text("the lexer is zephyrine\n")
    fake_anthropic.script(tool_reply("read_file", {"path": "notes.txt"}, id="toolu_read"), text_reply("Read it."))
    fake_anthropic.script_auxiliary(text_reply("Notes"))
    async with running_agent(tmp_path, fake_anthropic, home=home) as agent:
        sid = await agent.new_session()
        assert await agent.prompt(sid, "read the notes") == "end_turn"

    rows = [json.loads(line) for line in run_cli("sessions", "export", sid, "--format", "jsonl", home=home)
            .stdout.splitlines()]
    assert [r["role"] for r in rows] == ["user", "assistant", "tool", "assistant"]
    assert rows[1]["tool_calls"] == [{"id": "toolu_read", "name": "read_file", "arguments": {"path": "notes.txt"}}]
    result = rows[2]["tool_result"]
    assert rows[2]["tool_call_id"] == "toolu_read" and result["tool_use_id"] == "toolu_read"
    assert "the lexer is zephyrine" in json.dumps(result) and not result.get("is_error")
    assert rows[0]["tool_calls"] is None and rows[0]["tool_result"] is None


def test_export_refuses_a_folder_that_does_not_exist(tmp_path: Path) -> None:
    home = tmp_path / "hermes-home"
    with SessionDB(home / "acp-hermes" / "state.db") as db:
        db.create_session("s-export", cwd="/w", model="m", mode="default", model_config={}, system_prompt="")
        db.append_message("s-export", "user", "hello")
    missing = tmp_path / "missing" / "dir"
    refused = run_cli("sessions", "export", "s-export", "--output", str(missing / "x.md"), home=home)
    assert refused.returncode == 1 and refused.stdout == ""
    assert f"the folder {missing} does not exist" in refused.stderr and len(refused.stderr.splitlines()) == 1
    assert not (tmp_path / "missing").exists()
    written = run_cli("sessions", "export", "s-export", "--output", str(tmp_path / "x.md"), home=home)
    assert written.returncode == 0 and (tmp_path / "x.md").read_text().startswith("# Conversation")


def test_export_errors_name_the_path_given_and_json_goes_with_output(tmp_path: Path) -> None:
    home = tmp_path / "hermes-home"
    with SessionDB(home / "acp-hermes" / "state.db") as db:
        db.create_session("s-export", cwd="/w", model="m", mode="default", model_config={}, system_prompt="")
        db.append_message("s-export", "user", "hello")
    env = {**cli_env(home), "HOME": str(tmp_path)}

    def export(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([SCRIPT, "sessions", "export", "s-export", *args], capture_output=True, text=True,
                              env=env, cwd=str(tmp_path), stdin=subprocess.DEVNULL, timeout=120)

    refused = export("--json")  # the export is Markdown or JSON lines; --json alone would be ignored
    assert refused.returncode == 2 and refused.stdout == ""
    assert "`--json` goes with `--output`" in refused.stderr and "--format jsonl" in refused.stderr
    assert "sessions show ID --json" in refused.stderr

    home_folder = export("--output", "~/missing/x.md")
    assert home_folder.returncode == 1
    assert home_folder.stderr == ("acp-hermes: the folder ~/missing does not exist: create it first, or write "
                                  "elsewhere\n")
    if Path("/proc/self").is_dir():  # a folder nobody can create files in, root included
        unwritable = export("--output", "/proc/acp-hermes-export.md")
        assert unwritable.returncode == 1 and "Traceback" not in unwritable.stderr
        assert unwritable.stderr.startswith("acp-hermes: cannot write /proc/acp-hermes-export.md: ")
        assert ".tmp" not in unwritable.stderr  # not the temp file the write goes through

    noted = export("--output", "x.md", "--json")
    assert noted.returncode == 0 and json.loads(noted.stdout) == {"written": "x.md", "rows": 1}


def test_list_by_folder_with_a_limit_and_sessions_a_repair_left_without_one(tmp_path: Path) -> None:
    home, workspace = tmp_path / "hermes-home", tmp_path / "workspace"
    workspace.mkdir()
    with SessionDB(home / "acp-hermes" / "state.db") as db:
        for number in range(3):
            db.create_session(f"here-{number}", cwd=str(workspace), model="m", mode="default", model_config={},
                              system_prompt="")
            db.append_message(f"here-{number}", "user", "hello")
        db.create_session("recovered", cwd=None, model=None, mode=None, model_config={}, system_prompt=None,
                          title="(recovered messages)")  # what `doctor --repair` makes of a lost session row
        db.append_message("recovered", "user", "saved words")

    def listing(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([SCRIPT, "sessions", "list", *args], capture_output=True, text=True,
                              env=cli_env(home), cwd=str(workspace), stdin=subprocess.DEVNULL, timeout=120)

    here = listing("--cwd", ".")  # relative to where it runs: sessions store absolute folders
    assert here.returncode == 0 and here.stdout.count(f"[{workspace}]") == 3 and "recovered" not in here.stdout
    empty = listing("--cwd", str(tmp_path))
    assert empty.returncode == 0 and empty.stdout == f"No sessions in {tmp_path} yet.\n"
    unknown = listing("--cwd", "no-such-folder")
    assert unknown.returncode == 1 and unknown.stdout == ""
    assert unknown.stderr == (f"acp-hermes: no sessions in no-such-folder: there is no such folder "
                              f"({workspace / 'no-such-folder'})\n")

    everything = listing()
    assert "[None]" not in everything.stdout and "(recovered messages)  [folder unknown]" in everything.stdout
    for limit in ("0", "-1", "many"):
        wrong = listing("--limit", limit)
        assert wrong.returncode == 2 and wrong.stdout == ""
        assert f"argument --limit: give a number of sessions, 1 or more (not '{limit}')" in wrong.stderr
    two = listing("--limit", "2")
    assert len(two.stdout.splitlines()) == 3 and two.stdout.endswith("(the 2 most recent; `--limit 4` shows more)\n")
    assert "shows more" not in listing("--limit", "4").stdout


def test_sessions_are_named_by_a_unique_prefix_of_their_id(tmp_path: Path) -> None:
    home = tmp_path / "hermes-home"
    with SessionDB(home / "acp-hermes" / "state.db") as db:
        for session_id, title in (("ab12-first", "Lexer"), ("ab34-second", "Parser"), ("cd56-third", "Docs")):
            db.create_session(session_id, cwd="/w", model="m", mode="default", model_config={}, system_prompt="")
            db.update_session(session_id, title=title)
            db.append_message(session_id, "user", f"about the {title.lower()}")

    shown = run_cli("sessions", "show", "cd", home=home)
    assert shown.returncode == 0 and shown.stdout.startswith("# Docs") and "about the docs" in shown.stdout
    exported = run_cli("sessions", "export", "ab3", "--format", "jsonl", home=home)
    assert exported.returncode == 0 and json.loads(exported.stdout.splitlines()[0])["session"] == "ab34-second"

    ambiguous = run_cli("sessions", "show", "ab", home=home)
    assert ambiguous.returncode == 1 and ambiguous.stdout == ""
    assert "'ab' is the start of 2 session ids" in ambiguous.stderr
    assert "ab12-first" in ambiguous.stderr and "Lexer" in ambiguous.stderr and "ab34-second" in ambiguous.stderr
    assert "cd56-third" not in ambiguous.stderr
    unknown = run_cli("sessions", "export", "zz", home=home)
    assert unknown.returncode == 1 and "no session 'zz'" in unknown.stderr

    assert run_cli("sessions", "delete", "ab", "--yes", home=home).returncode == 1  # ambiguous: nothing deleted
    deleted = run_cli("sessions", "delete", "ab1", "--yes", home=home)
    assert deleted.returncode == 0 and "Deleted ab12-first." in deleted.stdout
    left = [s["id"] for s in json.loads(run_cli("sessions", "list", "--json", home=home).stdout)]
    assert sorted(left) == ["ab34-second", "cd56-third"]


def _past_session_with_a_command(home: Path) -> None:
    with SessionDB(home / "acp-hermes" / "state.db") as db:
        db.create_session("s-search", cwd="/w", model="m", mode="default", model_config={}, system_prompt="")
        db.update_session("s-search", title="Lexer hunt")
        db.append_message("s-search", "user", "where is the zephyrine lexer used?")
        db.append_message("s-search", "assistant", "Searching.", tool_calls=[
            {"id": "toolu_rg", "name": "terminal", "arguments": {"command": "rg -n zephyrine src/", "timeout": 30}}])


def test_search_shows_matches_and_tool_calls_for_people(tmp_path: Path) -> None:
    home = tmp_path / "hermes-home"
    _past_session_with_a_command(home)

    found = run_cli("sessions", "search", "zephyrine", home=home)  # not a terminal: «guillemets»
    assert found.returncode == 0
    assert "    where is the «zephyrine» lexer used?" in found.stdout
    assert "    Searching. · ran terminal: rg -n «zephyrine» src/" in found.stdout
    assert ">>>" not in found.stdout and "<<<" not in found.stdout and "toolu_rg" not in found.stdout
    assert "\x1b[" not in found.stdout

    excerpts = json.loads(run_cli("sessions", "search", "zephyrine", "--json", home=home).stdout)[0]["excerpts"]
    text, ((start, end),) = excerpts[0]["text"], excerpts[0]["marks"]
    assert text[start:end] == "zephyrine"


def test_search_on_a_terminal_shows_matches_in_bold(tmp_path: Path) -> None:
    import os
    import pty
    import subprocess

    from tests.integration.test_cli import SCRIPT, cli_env

    home = tmp_path / "hermes-home"
    _past_session_with_a_command(home)
    env = {key: value for key, value in cli_env(home).items() if key != "NO_COLOR"}
    leader, follower = pty.openpty()
    try:
        process = subprocess.run([SCRIPT, "sessions", "search", "zephyrine"], stdout=follower,
                                 stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, env=env, timeout=120)
        os.close(follower)
        follower = -1
        output = b""
        while True:
            try:
                chunk = os.read(leader, 65536)
            except OSError:  # Linux: EIO once the other side is closed and drained
                break
            if not chunk:
                break
            output += chunk
    finally:
        os.close(leader)
        if follower != -1:
            os.close(follower)
    shown = output.decode()
    assert process.returncode == 0, process.stderr
    assert "ran terminal: rg -n \x1b[1mzephyrine\x1b[0m src/" in shown and "«" not in shown


def test_subagent_sessions_are_listed_found_marked_and_deleted_with_their_parent(tmp_path: Path) -> None:
    home = tmp_path / "hermes-home"
    with SessionDB(home / "acp-hermes" / "state.db") as db:
        for session_id, parent, cwd, title in (("p1234567-parent", None, "/w", "Parser refactor"),
                                               ("c-child", "p1234567-parent", "/w", "Find the lexer bug"),
                                               ("g-grandchild", "c-child", "/w", "Read the lexer"),
                                               ("o-other", None, "/elsewhere", "Other work")):
            db.create_session(session_id, cwd=cwd, model="m", mode="default", model_config={}, system_prompt="",
                              parent_session_id=parent, source="subagent" if parent else "acp", title=title)
            db.append_message(session_id, "user", f"{title}: zephyrine")

    listed = run_cli("sessions", "list", "--cwd", "/w", home=home).stdout
    assert "  Find the lexer bug  (subagent of p1234567)  [/w]" in listed
    assert "  Read the lexer  (subagent of c-child)  [/w]" in listed
    assert "Parser refactor  [/w]" in listed and "Other work" not in listed
    as_json = {s["id"]: s for s in json.loads(run_cli("sessions", "list", "--json", home=home).stdout)}
    assert set(as_json) == {"p1234567-parent", "c-child", "g-grandchild", "o-other"}
    assert (as_json["c-child"]["source"], as_json["c-child"]["parent_session_id"]) == ("subagent", "p1234567-parent")
    assert (as_json["o-other"]["source"], as_json["o-other"]["parent_session_id"]) == ("acp", None)
    assert len(json.loads(run_cli("sessions", "list", "--json", "--limit", "2", home=home).stdout)) == 2

    found = run_cli("sessions", "search", "lexer", home=home).stdout
    assert "  Find the lexer bug (subagent of p1234567)\n" in found and found.count("(subagent of") == 2
    searched = {s["id"]: s for s in json.loads(run_cli("sessions", "search", "lexer", "--json", home=home).stdout)}
    grandchild = searched["g-grandchild"]
    assert (grandchild["source"], grandchild["parent_session_id"]) == ("subagent", "c-child")

    deleted = run_cli("sessions", "delete", "p123", "--yes", home=home)
    assert deleted.returncode == 0 and "Deleted p1234567-parent and 2 sessions of its subagents." in deleted.stdout
    assert [s["id"] for s in json.loads(run_cli("sessions", "list", "--json", home=home).stdout)] == ["o-other"]
