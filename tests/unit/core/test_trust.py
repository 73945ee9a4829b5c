"""Workspace trust in-process: what decides a session's standing, the one question and what it remembers,
a project's settings merged over the user's, and the command grants a project shares."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import pytest

from acp_hermes.config import PROJECT_KEYS, Settings, merge_project_settings
from acp_hermes.core.commands import handle
from acp_hermes.core.sessions import SessionManager, SessionWiring
from acp_hermes.core.trust import CONFIG, HEADLESS, REMEMBERED, open_trust
from acp_hermes.core.user_prompt import TextPart
from acp_hermes.permissions.gate import PermissionGate, PermissionQuestion
from acp_hermes.permissions.modes import Mode
from acp_hermes.permissions.policy import decide
from acp_hermes.permissions.shell.analysis import Where, analyse
from acp_hermes_memory.grants import GrantStore
from acp_hermes_tools.contracts import Command, Surroundings
from acp_hermes_tools.local_io import LocalEditor
from acp_hermes_tools.mcp.specs import McpServerSpec, fingerprint
from tests.support.fake_provider import FakeProvider, text
from tests.support.sessions import Env, no_background_work

pytestmark = pytest.mark.anyio


@dataclass
class Asker:
    """Answers every question with ``answer``, noting how many model requests had been made by then."""

    provider: FakeProvider
    answer: str
    questions: list[PermissionQuestion] = field(default_factory=list)
    requests_before: list[int] = field(default_factory=list)

    async def ask(self, question: PermissionQuestion) -> str:
        self.questions.append(question)
        self.requests_before.append(len(self.provider.requests))
        return self.answer


def manager(env: Env, asker: Asker) -> SessionManager:
    return SessionManager(env.runtime, SessionWiring(
        sink_for=lambda sid: env.log,  # type: ignore[arg-type,return-value]
        asker_for=lambda sid: asker, editor_for=lambda sid: LocalEditor()), no_background_work)


@pytest.fixture
def asking(env: Env) -> Env:
    """The in-process env with the default: a workspace's files are asked about (trust.ask: true)."""
    env.runtime.settings = Settings(sandbox="off")
    (env.cwd / "AGENTS.md").write_text("PROJECT-RULES-5", encoding="utf-8")
    return env


async def test_a_decline_is_asked_once_before_any_request_and_remembered(asking: Env) -> None:
    asker = Asker(asking.provider, "reject_always")
    session = await manager(asking, asker).create(asking.cwd)
    asking.provider.script(text("one"), text("two"))
    await handle(session, [TextPart("hi")])
    await handle(session, [TextPart("again")])
    assert asker.requests_before == [0]
    (question,) = asker.questions
    assert sorted(option.option_id for option in question.options) == [
        "allow_always", "allow_once", "reject_always", "reject_once"]
    assert all("PROJECT-RULES-5" not in request.system for request in asking.provider.requests)
    later = open_trust(asking.runtime, asking.cwd)
    assert (later.standing, later.source) == ("untrusted", REMEMBERED)
    asking.provider.script(text("three"))
    await handle(await manager(asking, asker).create(asking.cwd), [TextPart("new session")])
    assert len(asker.questions) == 1  # never asked again


async def test_trust_for_the_session_rebuilds_the_prompt_once_and_remembers_nothing(asking: Env) -> None:
    asker = Asker(asking.provider, "allow_once")
    session = await manager(asking, asker).create(asking.cwd)
    before = session.state.system_prompt
    asking.provider.script(text("one"), text("two"))
    await handle(session, [TextPart("hi")])
    await handle(session, [TextPart("again")])
    first, second = (request.system for request in asking.provider.requests)
    assert "PROJECT-RULES-5" not in before and "PROJECT-RULES-5" in first and first == second
    assert open_trust(asking.runtime, asking.cwd).standing == "undecided"


async def test_what_decides_a_standing(asking: Env) -> None:
    runtime = asking.runtime
    assert open_trust(runtime, asking.cwd).standing == "undecided"
    runtime.settings = Settings(sandbox="off", trust={"ask": False})
    assert (open_trust(runtime, asking.cwd).standing, open_trust(runtime, asking.cwd).source) == ("trusted", CONFIG)
    runtime.trust_store.decide(asking.cwd, trusted=False)  # a remembered "no" is more specific than ask: false
    assert open_trust(runtime, asking.cwd).standing == "untrusted"
    runtime.trust_everything = True  # --trust wins for this process
    assert (open_trust(runtime, asking.cwd).standing, open_trust(runtime, asking.cwd).source) == ("trusted", HEADLESS)


def test_a_project_may_set_only_what_does_not_widen_what_runs() -> None:
    user = Settings(api_key="sk-ant-user-key-0000", models=["a"], web={"search": True, "max_uses": 3})
    merged = merge_project_settings(user, {
        "model": "project-model", "models": ["b"], "thought_level": "high", "web": {"fetch": True},
        "compression_threshold": 0.7, "delegation": {"max_concurrent": 2},
        "checkpoints": {"enabled": False, "keep": 1, "max_files": 10**9},
        "api_key": "sk-ant-project", "base_url": "http://evil.test", "sandbox": "off", "default_mode": "bypass",
        "budget": {"session_usd": 1000}, "allow_unsandboxed_bypass": True, "sandbox_env": ["AWS_SECRET"],
        "trust": {"ask": False}, "compression": "sometimes"})
    settings = merged.settings
    assert (settings.model, settings.models, settings.thought_level) == ("project-model", ["a", "b"], "high")
    assert settings.web.fetch and settings.web.max_uses == 3  # a section's keys over the user's section
    assert settings.compression_threshold == 0.7 and settings.delegation.max_concurrent == 2
    assert not settings.checkpoints.enabled and settings.checkpoints.keep == user.checkpoints.keep
    assert settings.checkpoints.max_files == user.checkpoints.max_files
    assert settings.api_key == user.api_key and settings.base_url is None and settings.sandbox == "auto"
    assert settings.default_mode is Mode.DEFAULT and settings.budget == user.budget
    assert not settings.allow_unsandboxed_bypass and settings.sandbox_env == [] and settings.trust.ask
    assert set(merged.ignored) == {"api_key", "base_url", "sandbox", "default_mode", "budget",
                                   "allow_unsandboxed_bypass", "sandbox_env", "trust", "checkpoints.keep",
                                   "checkpoints.max_files"}
    assert settings.compression is True and len(merged.problems) == 1 and "compression" in merged.problems[0]
    assert not set(merged.ignored) & set(PROJECT_KEYS)


def test_a_server_is_approved_by_what_it_runs_not_by_its_name() -> None:
    spec = McpServerSpec("docs", "stdio", command="docs-server", args=("-v",), env={"TOKEN": "a"})
    assert fingerprint(spec) == fingerprint(McpServerSpec("renamed", "stdio", command="docs-server", args=("-v",),
                                                          env={"TOKEN": "a"}))
    for changed in (McpServerSpec("docs", "stdio", command="docs-server", args=("-vv",), env={"TOKEN": "a"}),
                    McpServerSpec("docs", "stdio", command="docs-server", args=("-v",), env={"TOKEN": "b"}),
                    McpServerSpec("docs", "http", url="https://x.test/mcp")):
        assert fingerprint(changed) != fingerprint(spec)


async def test_shared_commands_hold_only_in_the_sandbox_and_the_users_rejects_win(tmp_path: Path) -> None:
    project = tmp_path / "project"
    store = GrantStore(tmp_path / "permissions.yaml")
    gate = PermissionGate(asker=Asker(FakeProvider(), "reject_once"), mode=Mode.DEFAULT, home=tmp_path,
                          hermes_home=tmp_path / ".hermes", project=project, store=store)
    gate.shared_commands = frozenset({"pytest", "make"})

    def outcome(line: str, *, sandbox: bool, grants: object) -> str:
        where = Surroundings(tmp_path, tmp_path / ".hermes", (project,), project, sandbox=sandbox)
        analysis = analyse(line, Where(tmp_path, (project,), project, tmp_path / ".hermes"))
        return decide(Command(line, project, False, analysis), Mode.DEFAULT, grants, where).outcome  # type: ignore[arg-type]

    grants = await gate.grants()
    assert outcome("pytest -q", sandbox=True, grants=grants) == "allow"
    assert outcome("pytest -q", sandbox=False, grants=grants) == "ask"
    assert "allow command in the sandbox, shared by the workspace: pytest" in await gate.describe()
    store.remember(project, ["make"], allow=False)  # the user's own "always reject"
    gate._project_grants = None  # read again, as a new session would
    assert outcome("make", sandbox=True, grants=await gate.grants()) == "refuse"


async def test_the_home_folder_is_trusted_for_a_session_at_most(asking: Env, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(asking.cwd))  # the workspace is the user's home folder
    asker = Asker(asking.provider, "allow_once")
    session = await manager(asking, asker).create(asking.cwd)
    asking.provider.script(text("one"))
    await handle(session, [TextPart("hi")])
    (question,) = asker.questions
    assert sorted(option.option_id for option in question.options) == ["allow_once", "reject_once"]
    assert "PROJECT-RULES-5" in asking.provider.requests[0].system  # trusted, for this session
    assert not asking.runtime.paths.trust_file.exists()  # and nothing remembered
    asking.runtime.trust_store.decide(asking.cwd, trusted=True)  # even a hand-written entry is not read for home
    assert open_trust(asking.runtime, asking.cwd).standing == "undecided"


async def test_a_server_the_users_config_names_keeps_its_name(asking: Env, monkeypatch: pytest.MonkeyPatch) -> None:
    # The servers are never started here (no background work): the turn need not wait for them.
    monkeypatch.setattr("acp_hermes.core.turn.MCP_TURN_WAIT_SECONDS", 0.0)
    (asking.cwd / ".mcp.json").write_text('{"mcpServers": {"docs": {"command": "project-docs"}, '
                                          '"extra": {"command": "project-extra"}}}', encoding="utf-8")
    asking.runtime.settings = Settings(sandbox="off", mcp_servers={"docs": {"command": "my-docs"}})
    asker = Asker(asking.provider, "allow_once")
    session = await manager(asking, asker).create(asking.cwd)
    asking.provider.script(text("one"))
    await handle(session, [TextPart("hi")])
    servers = session.services.mcp
    assert servers is not None
    assert sorted((c.name, c.spec.command, c.spec.source) for c in servers.connections) == [
        ("docs", "my-docs", "config"), ("extra", "project-extra", "project")]
    session.close()


async def test_with_ask_off_a_projects_server_is_still_asked_about_by_its_command(asking: Env) -> None:
    (asking.cwd / ".mcp.json").write_text('{"mcpServers": {"docs": {"command": "project-docs", "args": ["-v"]}}}',
                                          encoding="utf-8")
    asking.runtime.settings = Settings(sandbox="off", trust={"ask": False})
    asker = Asker(asking.provider, "reject_once")
    session = await manager(asking, asker).create(asking.cwd)
    assert "PROJECT-RULES-5" in session.state.system_prompt  # trusted by the config: no trust question
    asking.provider.script(text("one"), text("two"))
    await handle(session, [TextPart("hi")])
    await handle(session, [TextPart("again")])
    (question,) = asker.questions  # the server's, once: "don't start it" holds for the session
    assert question.title == f"Start the MCP server docs of {asking.cwd.name}?"
    assert "`project-docs -v`" in question.display[0].text  # type: ignore[attr-defined]
    assert [option.option_id for option in question.options] == ["allow_once", "reject_once"]  # no "always"
    assert session.services.mcp is None
