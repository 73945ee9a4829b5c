"""Workspace trust through the real stdio server (docs/trust.md, DESIGN invariant 11).

A repository that carries an AGENTS.md, a subdirectory's instructions, a project skill, an MCP server in
``.mcp.json`` and ``.hermes/config.yaml`` is asked about once, before the first model request, listing
what it carries; declined, none of it reaches the model (system prompt, tools, skills index, tool
results) and no server process starts; trusted, all of it is live in the same session, and a new agent
process asks nothing. A changed ``.mcp.json`` command asks again, on its own. A workspace that carries
nothing is never asked about. The same through a client with forms, through a client with its own
trust dialog (vibe's ``_trust/*`` methods), and headless (``--trust``, ``ACP_HERMES_TRUST=1``). A
project's settings that would widen what runs unasked are ignored, with one notice.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from acp_hermes_memory.session_db import SessionDB
from acp_hermes_tools.sandbox import detect
from tests.support.acp_harness import AgentProcess, EditorClient, running_agent
from tests.support.fake_anthropic import FakeAnthropic, text_reply, tool_reply
from tests.support.schema_check import RELEASE_UNSTABLE_SCHEMA_PATH, UNSTABLE_SCHEMA_PATH
from tests.support.tool_checks import asked_ids, tool_result

pytestmark = pytest.mark.anyio

SERVER = Path(__file__).resolve().parents[1] / "support" / "mcp_server.py"
CONTEXT, HINT, SKILL, MESSAGE = "AGENTS-MARKER-71", "HINT-MARKER-72", "PROJECT-SKILL-73", "PROJECT-MESSAGE-74"
MCP_TOOL = "mcp__docs__echo"
TRUST_TITLE = "Trust the folder"
# Forms (elicitation) are an unstable part of ACP: the wire of a run with forms is checked against the unstable schema.
FORMS_SCHEMA = UNSTABLE_SCHEMA_PATH if UNSTABLE_SCHEMA_PATH.exists() else RELEASE_UNSTABLE_SCHEMA_PATH
SANDBOX = detect()


def system_text(request: dict[str, Any]) -> str:
    return "".join(block["text"] for block in request["system"])


def tool_names(request: dict[str, Any]) -> list[str]:
    return [tool["name"] for tool in request.get("tools", [])]


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def mcp_json(repo: Path, pid_file: Path, *extra: str) -> None:
    server = {"command": sys.executable, "args": [str(SERVER), "--pid-file", str(pid_file), *extra]}
    write(repo / ".mcp.json", json.dumps({"mcpServers": {"docs": server}}))


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A git repository carrying one of everything trust gates."""
    root = tmp_path / "repo"
    root.mkdir()
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    write(root / "AGENTS.md", f"{CONTEXT}: run the tests with make check.\n")
    write(root / "sub" / "AGENTS.md", f"{HINT}: files here are generated.\n")
    write(root / "sub" / "notes.txt", "plain notes\n")
    write(root / ".hermes" / "skills" / "deploy" / "SKILL.md",
          f"---\nname: deploy\ndescription: {SKILL} how this project is deployed\n---\nRun make deploy.\n")
    write(root / ".hermes" / "config.yaml", f"system_message: '{MESSAGE}: answer in English.'\n")
    mcp_json(root, tmp_path / "docs.pid")
    return root


class Recorder:
    """Answers the trust question (and any MCP server's) by kind, noting how many model requests had
    been made when each question came."""

    def __init__(self, fake: FakeAnthropic, trust: str, server: str = "allow_once") -> None:
        self.fake, self.trust, self.server = fake, trust, server
        self.requests_before: list[int] = []

    def __call__(self, tool_call: dict[str, Any], options: list[dict[str, Any]]) -> str | None:
        self.requests_before.append(len(self.fake.stream_requests))
        kind = self.trust if tool_call.get("title", "").startswith(TRUST_TITLE) else self.server
        return next(option["optionId"] for option in options if option["kind"] == kind)


def menu(agent: AgentProcess, sid: str) -> set[str]:
    """The names in the last ``/`` menu the session was sent."""
    return {command["name"] for command in agent.updates(sid, "available_commands_update")[-1]["availableCommands"]}


def question_text(request: dict[str, Any]) -> str:
    return json.dumps(request["toolCall"].get("content", []))


async def first_exchange(agent: AgentProcess, fake: FakeAnthropic, cwd: Path) -> str:
    """A session whose first prompt reads a file in ``sub/`` (a subdirectory hint's occasion)."""
    fake.script(tool_reply("read_file", {"path": str(cwd / "sub" / "notes.txt")}, id="toolu_read"),
                text_reply("done"))
    fake.script_auxiliary(text_reply("A title"))
    sid = await agent.new_session(cwd=cwd)
    assert await agent.prompt(sid, "look at sub/notes.txt") == "end_turn"
    return sid


def assert_nothing_of_the_repository(fake: FakeAnthropic) -> None:
    for request in fake.stream_requests:
        system = system_text(request)
        assert CONTEXT not in system and SKILL not in system and MESSAGE not in system
        assert not [name for name in tool_names(request) if name.startswith("mcp__")]
    assert HINT not in tool_result(fake, "toolu_read")[0]


def assert_everything_of_the_repository(fake: FakeAnthropic, request: dict[str, Any]) -> None:
    system = system_text(request)
    assert CONTEXT in system and SKILL in system and MESSAGE in system
    assert MCP_TOOL in tool_names(request)


async def test_declined_the_repository_says_nothing_and_runs_nothing(
        tmp_path: Path, repo: Path, fake_anthropic: FakeAnthropic) -> None:
    fake = fake_anthropic
    recorder = Recorder(fake, "reject_once")
    async with running_agent(tmp_path, fake, client=EditorClient(policy=recorder)) as agent:
        sid = await first_exchange(agent, fake, repo)
        asked = agent.client.permission_requests
        assert len(asked) == 1 and recorder.requests_before == [0]  # one question, before any model request
        question = asked[0]
        assert question["toolCall"]["title"] == f"{TRUST_TITLE} {repo}?"
        assert sorted(option["kind"] for option in question["options"]) == [
            "allow_always", "allow_once", "reject_always", "reject_once"]
        text = question_text(question)
        for item in ("AGENTS.md", "sub/AGENTS.md", ".hermes/skills/deploy", ".hermes/config.yaml",
                     f"{sys.executable} {SERVER}"):
            assert item in text, item
        # Shown on a card of its own, which ends like a tool call.
        card = agent.tool_updates(sid, question["toolCall"]["toolCallId"])
        assert card[0]["sessionUpdate"] == "tool_call" and card[-1]["status"] == "completed"
        assert_nothing_of_the_repository(fake)
        assert "deploy" not in menu(agent, sid)
        # Not now: this session asks no more.
        fake.script(text_reply("again"))
        assert await agent.prompt(sid, "and now?") == "end_turn"
        assert len(agent.client.permission_requests) == 1
        assert_nothing_of_the_repository(fake)
    assert not (tmp_path / "docs.pid").exists()  # the server's process never started


async def test_trusted_everything_is_live_at_once_and_remembered(
        tmp_path: Path, repo: Path, fake_anthropic: FakeAnthropic) -> None:
    fake = fake_anthropic
    recorder = Recorder(fake, "allow_always")
    home = tmp_path / "home"
    async with running_agent(tmp_path, fake, home=home, client=EditorClient(policy=recorder)) as agent:
        sid = await first_exchange(agent, fake, repo)
        assert recorder.requests_before == [0] and len(agent.client.permission_requests) == 1
        first = fake.stream_requests[0]
        assert_everything_of_the_repository(fake, first)
        assert HINT in tool_result(fake, "toolu_read")[0]
        await agent.wait_for(lambda: "deploy" in menu(agent, sid))
        assert (tmp_path / "docs.pid").exists()
        # The rebuilt prompt is the session's: stored, and the same for every later request.
        assert system_text(fake.stream_requests[1]) == system_text(first)
    db = SessionDB(home / "acp-hermes" / "state.db")
    try:
        record = db.get_session(sid)
        assert record is not None and record.system_prompt is not None and CONTEXT in record.system_prompt
    finally:
        db.close()
    stored = json.loads((home / "acp-hermes" / "trust.json").read_text(encoding="utf-8"))
    assert stored["repositories"][str(repo)]["trusted"] is True
    assert (home / "acp-hermes" / "trust.json").stat().st_mode & 0o777 == 0o600
    # A new agent process: no question, all of it there.
    (tmp_path / "docs.pid").unlink()
    async with running_agent(tmp_path, fake, home=home, client=EditorClient(policy=recorder)) as again:
        await first_exchange(again, fake, repo)
        assert again.client.permission_requests == []
        assert_everything_of_the_repository(fake, fake.stream_requests[-1])
        assert (tmp_path / "docs.pid").exists()


async def test_trust_given_later_rebuilds_the_prompt_once(
        tmp_path: Path, repo: Path, fake_anthropic: FakeAnthropic) -> None:
    """"Not now", then /trust: the same session gets everything from its next request; its system prompt
    changed once, and stays as rebuilt."""
    fake = fake_anthropic
    async with running_agent(tmp_path, fake, client=EditorClient(policy=Recorder(fake, "reject_once"))) as agent:
        sid = await first_exchange(agent, fake, repo)
        before = system_text(fake.stream_requests[-1])
        assert await agent.prompt(sid, "/trust") == "end_turn"
        assert "Now in this session" in agent.agent_text(sid)
        fake.script(text_reply("one"), text_reply("two"))
        assert await agent.prompt(sid, "first after trust") == "end_turn"
        assert await agent.prompt(sid, "second after trust") == "end_turn"
        after = [system_text(request) for request in fake.stream_requests[-2:]]
        assert after[0] == after[1] != before
        assert_everything_of_the_repository(fake, fake.stream_requests[-1])
        assert len(agent.client.permission_requests) == 1  # /trust itself asks nothing
        # /untrust: the same session loses it all again, and the server stops.
        assert await agent.prompt(sid, "/untrust") == "end_turn"
        fake.script(text_reply("three"))
        assert await agent.prompt(sid, "after untrust") == "end_turn"
        last = fake.stream_requests[-1]
        assert CONTEXT not in system_text(last) and MCP_TOOL not in tool_names(last)


async def test_a_changed_server_asks_again_on_its_own(
        tmp_path: Path, repo: Path, fake_anthropic: FakeAnthropic) -> None:
    fake = fake_anthropic
    home = tmp_path / "home"
    async with running_agent(tmp_path, fake, home=home, client=EditorClient(policy=Recorder(fake, "allow_always"))):
        pass
    async with running_agent(tmp_path, fake, home=home,
                             client=EditorClient(policy=Recorder(fake, "allow_always"))) as agent:
        fake.script(text_reply("ok"))
        sid = await agent.new_session(cwd=repo)
        assert await agent.prompt(sid, "hi") == "end_turn"
    assert len(agent.client.permission_requests) == 1  # the trust question of the first run only
    mcp_json(repo, tmp_path / "changed.pid", "--name", "changed")  # the same name, another command line
    recorder = Recorder(fake, "allow_always", server="allow_once")
    async with running_agent(tmp_path, fake, home=home, client=EditorClient(policy=recorder)) as agent:
        fake.script(text_reply("ok"))
        sid = await agent.new_session(cwd=repo)
        assert await agent.prompt(sid, "hi") == "end_turn"
        asked = agent.client.permission_requests
        assert len(asked) == 1 and recorder.requests_before == [len(fake.stream_requests) - 1]
        assert asked[0]["toolCall"]["title"].startswith("Start the MCP server docs")
        assert "--name changed" in question_text(asked[0])
        assert MCP_TOOL in tool_names(fake.stream_requests[-1])
        assert CONTEXT in system_text(fake.stream_requests[-1])
    assert (tmp_path / "changed.pid").exists()


async def test_a_workspace_that_carries_nothing_is_never_asked(
        tmp_path: Path, fake_anthropic: FakeAnthropic) -> None:
    fake = fake_anthropic
    plain = tmp_path / "plain"
    plain.mkdir()
    subprocess.run(["git", "init", "-q", str(plain)], check=True)
    write(plain / "main.py", "print('hello')\n")
    async with running_agent(tmp_path, fake, forms=True, client=EditorClient(form_answers=[])) as agent:
        fake.script(text_reply("ok"))
        sid = await agent.new_session(cwd=plain)
        assert await agent.prompt(sid, "hi") == "end_turn"
        assert agent.client.permission_requests == [] and agent.client.forms == []


@pytest.mark.parametrize("answer", ["allow_once", "reject_once", "decline"])
async def test_through_a_form(tmp_path: Path, repo: Path, fake_anthropic: FakeAnthropic, answer: str) -> None:
    fake = fake_anthropic
    reply = ("decline", None) if answer == "decline" else ("accept", {"decision": answer})
    client = EditorClient(form_answers=[reply])
    async with running_agent(tmp_path, fake, forms=True, client=client, schema_path=FORMS_SCHEMA) as agent:
        sid = await first_exchange(agent, fake, repo)
        assert agent.client.permission_requests == [] and len(agent.client.forms) == 1
        form = agent.client.forms[0]
        assert form["message"].startswith(f"**{TRUST_TITLE} {repo}?**") and "sub/AGENTS.md" in form["message"]
        choices = form["requestedSchema"]["properties"]["decision"]["oneOf"]
        assert sorted(choice["const"] for choice in choices) == [
            "allow_always", "allow_once", "reject_always", "reject_once"]
        if answer == "allow_once":
            assert_everything_of_the_repository(fake, fake.stream_requests[0])
            assert HINT in tool_result(fake, "toolu_read")[0]
            await agent.wait_for(lambda: "deploy" in menu(agent, sid))
        else:  # "not now", or the form declined: nothing of the repository's
            assert_nothing_of_the_repository(fake)
            assert "deploy" not in menu(agent, sid)
    # For this session only: nothing remembered.
    assert not (tmp_path / "hermes-home" / "acp-hermes" / "trust.json").exists()
    assert (tmp_path / "docs.pid").exists() is (answer == "allow_once")


async def test_through_the_clients_own_trust_dialog(
        tmp_path: Path, repo: Path, fake_anthropic: FakeAnthropic) -> None:
    fake = fake_anthropic
    async with running_agent(tmp_path, fake, forms=True, workspace_trust=True,
                             client=EditorClient(form_answers=[])) as agent:
        response = await agent.conn.new_session(cwd=str(repo), mcp_servers=[])
        sid = response.session_id
        trust = (response.field_meta or {})["workspace_trust"]
        assert trust["status"] == "untrusted"
        details = trust["details"]
        assert details["cwd"] == str(repo) and details["repoRoot"] == str(repo)
        assert {"AGENTS.md", "sub/AGENTS.md", ".mcp.json", ".hermes/config.yaml"} <= set(details["ignoredFiles"])
        assert details["availableDecisions"] == ["trust_cwd", "trust_session", "decline"]
        fake.script(text_reply("ok"))
        fake.script_auxiliary(text_reply("A title"))
        assert await agent.prompt(sid, "hi") == "end_turn"  # no question of ours: the client decides
        assert agent.client.permission_requests == [] and agent.client.forms == []
        assert CONTEXT not in system_text(fake.stream_requests[-1])
        status = await agent.conn.ext_method("trust/status", {"sessionId": sid})
        assert status["trust_status"] == "untrusted" and status["details"]["ignoredFiles"] == details["ignoredFiles"]
        decided = await agent.conn.ext_method("trust/decision", {"sessionId": sid, "decision": "trust_cwd"})
        assert decided == {"trust_status": "trusted", "details": None}
        await agent.wait_for(lambda: "deploy" in menu(agent, sid))
        fake.script(text_reply("ok"))
        assert await agent.prompt(sid, "again") == "end_turn"
        assert_everything_of_the_repository(fake, fake.stream_requests[-1])
        assert agent.client.permission_requests == []
        loaded = await agent.conn.resume_session(cwd=str(repo), session_id=sid, mcp_servers=[])
        assert (loaded.field_meta or {})["workspace_trust"] == {"status": "trusted", "details": None}
    # Remembered: a new agent process finds the repository trusted, and asks nothing.
    async with running_agent(tmp_path, fake, forms=True, workspace_trust=True,
                             client=EditorClient(form_answers=[])) as again:
        response = await again.conn.new_session(cwd=str(repo), mcp_servers=[])
        assert (response.field_meta or {})["workspace_trust"] == {"status": "trusted", "details": None}
        fake.script(text_reply("ok"))
        assert await again.prompt(response.session_id, "hi") == "end_turn"
        assert again.client.permission_requests == [] and again.client.forms == []
        assert_everything_of_the_repository(fake, fake.stream_requests[-1])


async def test_a_declined_decision_from_the_clients_dialog_is_remembered(
        tmp_path: Path, repo: Path, fake_anthropic: FakeAnthropic) -> None:
    fake = fake_anthropic
    async with running_agent(tmp_path, fake, workspace_trust=True) as agent:
        # vibe's spelling without the extension's "_" is served alike
        decided = await agent.conn._conn.send_request("trust/decision", {"cwd": str(repo), "decision": "decline"})
        assert decided["trust_status"] == "untrusted"
        status = await agent.conn.ext_method("trust/status", {"cwd": str(repo)})
        assert status == await agent.conn._conn.send_request("trust/status", {"cwd": str(repo)})
        assert status["trust_status"] == "untrusted"
        await first_exchange(agent, fake, repo)
        assert agent.client.permission_requests == []
        assert_nothing_of_the_repository(fake)
    assert not (tmp_path / "docs.pid").exists()


@pytest.mark.parametrize("how", ["flag", "environment"])
async def test_headless_trust(tmp_path: Path, repo: Path, fake_anthropic: FakeAnthropic, how: str) -> None:
    fake = fake_anthropic
    command = (sys.executable, "-m", "acp_hermes", "--trust") if how == "flag" else (sys.executable, "-m", "acp_hermes")
    env = {"ACP_HERMES_TRUST": "1"} if how == "environment" else {}
    async with running_agent(tmp_path, fake, command=command, env=env) as agent:
        await first_exchange(agent, fake, repo)
        assert agent.client.permission_requests == []
        assert_everything_of_the_repository(fake, fake.stream_requests[0])
        assert HINT in tool_result(fake, "toolu_read")[0]
    assert not (tmp_path / "hermes-home" / "acp-hermes" / "trust.json").exists()  # nothing remembered


async def test_project_settings_cannot_widen_what_runs(
        tmp_path: Path, repo: Path, fake_anthropic: FakeAnthropic) -> None:
    fake = fake_anthropic
    write(repo / ".hermes" / "config.yaml", "\n".join([
        "model: claude-project-model", f"system_message: '{MESSAGE}'", "api_key: sk-ant-project-key-000000",
        "base_url: http://127.0.0.1:9/", "sandbox: off", "default_mode: bypass", "budget: {session_usd: 100}",
        "allow_unsandboxed_bypass: true", "checkpoints: {enabled: true, keep: 1}", ""]))
    (repo / ".mcp.json").unlink()
    async with running_agent(tmp_path, fake, env={"ACP_HERMES_TRUST": "1"}) as agent:
        fake.script(text_reply("one"), text_reply("two"))
        fake.script_auxiliary(text_reply("A title"))
        response = await agent.conn.new_session(cwd=str(repo), mcp_servers=[])
        sid = response.session_id
        assert response.modes.current_mode_id == "default"
        model = next(option for option in response.config_options or [] if option.id == "model")
        assert model.current_value == "claude-project-model"
        assert await agent.prompt(sid, "hi") == "end_turn"
        assert await agent.prompt(sid, "again") == "end_turn"
        assert fake.stream_requests[-1]["model"] == "claude-project-model"  # reached through the user's endpoint
        text = agent.agent_text(sid)
        assert text.count("This workspace's settings") == 1
        for key in ("api_key", "base_url", "sandbox", "default_mode", "budget", "allow_unsandboxed_bypass",
                    "checkpoints.keep"):
            assert f"`{key}`" in text, key
        assert MESSAGE in system_text(fake.stream_requests[-1])


async def test_a_linked_worktree_is_decided_with_its_main_repository(
        tmp_path: Path, repo: Path, fake_anthropic: FakeAnthropic) -> None:
    fake = fake_anthropic
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*git, "add", "-A"], cwd=repo, check=True)
    subprocess.run([*git, "commit", "-qm", "first"], cwd=repo, check=True)
    linked = tmp_path / "linked"
    subprocess.run([*git, "worktree", "add", "-q", str(linked)], cwd=repo, check=True)
    home = tmp_path / "home"
    async with running_agent(tmp_path, fake, home=home, client=EditorClient(policy=Recorder(fake, "allow_always"))):
        pass
    recorder = Recorder(fake, "allow_always")
    async with running_agent(tmp_path, fake, home=home, client=EditorClient(policy=recorder)) as agent:
        fake.script(text_reply("ok"))
        fake.script_auxiliary(text_reply("A title"))
        sid = await agent.new_session(cwd=linked)
        assert await agent.prompt(sid, "hi") == "end_turn"
        (question,) = agent.client.permission_requests  # asked in the worktree, about the main repository
        assert question["toolCall"]["title"] == f"{TRUST_TITLE} {repo}?"
    stored = json.loads((home / "acp-hermes" / "trust.json").read_text(encoding="utf-8"))
    assert list(stored["repositories"]) == [str(repo)]
    async with running_agent(tmp_path, fake, home=home, client=EditorClient(policy=recorder)) as agent:
        fake.script(text_reply("ok"))
        sid = await agent.new_session(cwd=repo / "sub")  # the main repository, from a folder of it: decided
        assert await agent.prompt(sid, "hi") == "end_turn"
        assert agent.client.permission_requests == []


@pytest.mark.skipif(not SANDBOX.available, reason=f"no OS sandbox here: {SANDBOX.detail}")
@pytest.mark.parametrize("case", ["untrusted", "trusted", "users-reject"])
async def test_shared_command_grants_hold_only_after_trust_and_the_users_rejects_win(
        tmp_path: Path, repo: Path, fake_anthropic: FakeAnthropic, case: str) -> None:
    fake = fake_anthropic
    (repo / ".mcp.json").unlink()
    write(repo / ".hermes" / "permissions.yaml", "allow_commands: [touch]\n")
    home = tmp_path / "hermes-home"
    if case == "users-reject":
        write(home / "acp-hermes" / "permissions.yaml",
              f"projects:\n  {json.dumps(str(repo))}:\n    reject_commands: [touch]\n")
    env = {} if case == "untrusted" else {"ACP_HERMES_TRUST": "1"}
    recorder = Recorder(fake, "reject_once", server="reject_once")
    fake.script(tool_reply("terminal", {"command": "touch made-by-the-team"}, id="toolu_touch"), text_reply("done"))
    fake.script_auxiliary(text_reply("A title"))
    async with running_agent(tmp_path, fake, home=home, env=env, client=EditorClient(policy=recorder)) as agent:
        sid = await agent.new_session(cwd=repo)
        assert await agent.prompt(sid, "make the file") == "end_turn"
        command_asked = "toolu_touch" in asked_ids(agent.client)
    made = (repo / "made-by-the-team").exists()
    if case == "trusted":  # the team's grant: in the sandbox, no question
        assert made and not command_asked
    elif case == "untrusted":  # declined: the grant does not apply; the command is asked about (and refused)
        assert not made and command_asked
    else:  # the user's own "always reject" wins over the team's grant
        assert not made and not command_asked
        assert "toolu_touch" in json.dumps(fake.stream_requests[-1]["messages"][-1])


async def test_a_session_loaded_where_trust_was_withdrawn_loses_what_its_stored_prompt_had(
        tmp_path: Path, repo: Path, fake_anthropic: FakeAnthropic) -> None:
    from tests.integration.test_cli import run_cli

    fake = fake_anthropic
    home = tmp_path / "home"
    async with running_agent(tmp_path, fake, home=home,
                             client=EditorClient(policy=Recorder(fake, "allow_always"))) as agent:
        sid = await first_exchange(agent, fake, repo)
        assert CONTEXT in system_text(fake.stream_requests[-1])
    forgot = run_cli("trust", "remove", str(repo), home=home)
    assert forgot.returncode == 0, forgot.stderr
    recorder = Recorder(fake, "reject_once")
    async with running_agent(tmp_path, fake, home=home, client=EditorClient(policy=recorder)) as agent:
        await agent.conn.load_session(cwd=str(repo), session_id=sid, mcp_servers=[])
        fake.script(text_reply("after"))
        assert await agent.prompt(sid, "go on") == "end_turn"
        assert len(agent.client.permission_requests) == 1  # asked again: the decision was forgotten
        last = fake.stream_requests[-1]
        assert CONTEXT not in system_text(last) and SKILL not in system_text(last) and MCP_TOOL not in tool_names(last)
