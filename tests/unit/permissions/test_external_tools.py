"""MCP tools through the policy and the gate: a server's annotations are believed only once the user
trusts the server; the others ask as the mode says, "always" is remembered per project for that server
and tool, trust for the server (and read back by a new gate)."""

from __future__ import annotations

from pathlib import Path

import pytest

from acp_hermes.permissions.gate import PermissionGate, PermissionQuestion
from acp_hermes.permissions.modes import Mode
from acp_hermes.permissions.policy import Grants, decide
from acp_hermes_memory.grants import GrantStore
from acp_hermes_tools.contracts import External, PermissionDenied, Surroundings, TextDisplay
from tests.support.tools import make_context

pytestmark = pytest.mark.anyio

WHERE = Surroundings(Path("/home/u"), Path("/home/u/.hermes"), (Path("/ws"),))
WRITE = External("docs", "write_note", {})
READ = External("docs", "echo", {}, read_only=True)
TRUSTED = Grants(allowed_commands=frozenset({"mcp-server:docs"}))


@pytest.mark.parametrize(
    ("request_", "mode", "grants", "outcome"),
    [
        (READ, Mode.DEFAULT, Grants(), "ask"),  # a claim of an untrusted server
        (READ, Mode.ACCEPT_EDITS, Grants(), "ask"),
        (READ, Mode.PLAN, Grants(), "refuse"),
        (READ, Mode.BYPASS, Grants(), "allow"),
        (READ, Mode.DEFAULT, TRUSTED, "allow"),
        (READ, Mode.PLAN, TRUSTED, "allow"),
        (WRITE, Mode.DEFAULT, TRUSTED, "ask"),  # trust covers read-only tools only
        (WRITE, Mode.PLAN, TRUSTED, "refuse"),
        (READ, Mode.DEFAULT, Grants(allowed_commands=frozenset({"mcp-server:other"})), "ask"),
        (WRITE, Mode.DEFAULT, Grants(), "ask"),
        (WRITE, Mode.ACCEPT_EDITS, Grants(), "ask"),  # not an edit the editor could show
        (WRITE, Mode.BYPASS, Grants(), "allow"),
        (WRITE, Mode.PLAN, Grants(), "refuse"),
        (WRITE, Mode.DEFAULT, Grants(allowed_commands=frozenset({"mcp:docs/write_note"})), "allow"),
        (WRITE, Mode.BYPASS, Grants(rejected_commands=frozenset({"mcp:docs/write_note"})), "refuse"),
        (WRITE, Mode.DEFAULT, Grants(allowed_commands=frozenset({"mcp:other/write_note"})), "ask"),
    ],
)
def test_the_policy(request_: External, mode: Mode, grants: Grants, outcome: str) -> None:
    assert decide(request_, mode, grants, WHERE).outcome == outcome


def test_asking_offers_to_remember_that_server_tool_only() -> None:
    offer = decide(WRITE, Mode.DEFAULT, Grants(), WHERE).offer
    assert offer is not None and offer.scope == "tools" and offer.keys == ("mcp:docs/write_note",)
    assert offer.allow_label == "Always allow write_note of docs in this project"


def test_a_read_only_tool_of_an_untrusted_server_offers_to_trust_the_server() -> None:
    verdict = decide(READ, Mode.DEFAULT, Grants(), WHERE)
    assert verdict.reasons == ("docs says it only reads; it is not trusted yet",)
    offer = verdict.offer
    assert offer is not None and offer.keys == ("mcp-server:docs",) and offer.rejected_keys == ("mcp:docs/echo",)
    assert offer.allow_label.startswith("Trust docs")


class Answers:
    def __init__(self, *answers: str) -> None:
        self.answers = list(answers)
        self.questions: list[PermissionQuestion] = []

    async def ask(self, question: PermissionQuestion) -> str:
        self.questions.append(question)
        return self.answers.pop(0)


def gate(tmp_path: Path, asker: Answers, mode: Mode = Mode.DEFAULT) -> PermissionGate:
    return PermissionGate(asker=asker, mode=mode, home=tmp_path / "home", hermes_home=tmp_path / "hermes",
                          project=tmp_path, store=GrantStore(tmp_path / "permissions.yaml"))


async def test_the_question_shows_the_arguments_and_always_sticks_across_gates(tmp_path: Path) -> None:
    answers = Answers("allow_always")
    first = gate(tmp_path, answers)
    ctx = make_context(tmp_path, gate=first, call_id="toolu_1")
    await ctx.authorize_external("docs", "write_note", {"path": "a.txt"}, read_only=False)
    question = answers.questions[0]
    assert question.title == "Run write_note (docs)" and question.kind == "execute"
    assert question.display == (TextDisplay('{\n  "path": "a.txt"\n}', fence="json"),)
    assert await first.describe() == ["mode: default", "allow MCP tool: docs/write_note"]

    later = gate(tmp_path, Answers())  # a new process: reads the grant back, asks nothing
    await make_context(tmp_path, gate=later).authorize_external("docs", "write_note", {}, read_only=False)


async def test_a_call_runs_only_after_its_own_authorization(tmp_path: Path) -> None:
    ctx = make_context(tmp_path, gate=gate(tmp_path, Answers("reject_once", "allow_once")))
    ran: list[str] = []

    async def call() -> str:
        ran.append("ran")
        return "result"

    with pytest.raises(PermissionDenied):
        await ctx.call_external("docs", "write_note", call)
    with pytest.raises(PermissionDenied):
        await ctx.authorize_external("docs", "write_note", {}, read_only=False)
    with pytest.raises(PermissionDenied):
        await ctx.call_external("docs", "write_note", call)
    await ctx.authorize_external("docs", "echo", {}, read_only=True)  # an untrusted server's claim: asked
    assert await ctx.call_external("docs", "echo", call) == "result"
    assert ran == ["ran"]


async def test_trusting_a_server_is_remembered_and_rejecting_its_tool_stays_narrow(tmp_path: Path) -> None:
    answers = Answers("allow_always", "reject_always")
    first = gate(tmp_path, answers)
    await make_context(tmp_path, gate=first).authorize_external("docs", "echo", {}, read_only=True)
    assert "trusted MCP server (its read-only tools run unasked): docs" in await first.describe()
    later = gate(tmp_path, Answers(), Mode.PLAN)  # a new process, in plan mode: trusted read-only runs, asks nothing
    await make_context(tmp_path, gate=later).authorize_external("docs", "echo", {}, read_only=True)
    other = gate(tmp_path, answers)
    with pytest.raises(PermissionDenied):
        await make_context(tmp_path, gate=other).authorize_external("wiki", "lookup", {}, read_only=True)
    assert "reject MCP tool: wiki/lookup" in await other.describe()
    assert not any("trusted MCP server" in line and "wiki" in line for line in await other.describe())
