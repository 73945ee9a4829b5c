"""The tool context's doors: every mutation is refused unless the gate authorised it for this very call.

Files go to the real disk (``LocalEditor``); commands are recorded by a subclass instead of spawned,
except one that really runs, so what reaches the editor (and with which confinement) is visible.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from acp_hermes_tools.context import Permit, StateKey, ToolContext, ToolState
from acp_hermes_tools.contracts import (
    Command,
    CommandOutcome,
    CommandRequest,
    FileChange,
    PermissionDenied,
    Request,
    TextDisplay,
    ToolCallUpdated,
)
from acp_hermes_tools.local_io import LocalEditor
from acp_hermes_tools.sandbox import SessionSandbox
from tests.support.tools import RecordingGate, events_of, make_context, make_scope


class RecordingEditor(LocalEditor):
    """Real files; commands recorded, not run."""

    def __init__(self) -> None:
        super().__init__()
        self.runs: list[CommandRequest] = []
        self.detached: list[tuple[str, Any]] = []

    async def run_command(self, request: CommandRequest, observer: Any) -> CommandOutcome:
        self.runs.append(request)
        return CommandOutcome("ran", 0, sandboxed=request.confinement is not None)

    def start_detached(self, command: str, cwd: Path, log_path: Path, confinement: Any = None, *,
                       stdin: bool = False) -> Any:
        self.detached.append((command, confinement))
        return None


@dataclass
class FakeSandbox:
    """Stands in for an available SessionSandbox: hands out a recognisable confinement."""

    available: bool = True
    asked: list[bool] = field(default_factory=list)
    audited: list[Any] = field(default_factory=list)

    def confinement(self, network: bool) -> Any:
        self.asked.append(network)
        return ("confined", network)

    def audit(self, confinement: Any) -> list[Any]:
        self.audited.append(confinement)
        return []

    def audit_when_done(self, process: Any, confinement: Any) -> None:
        self.audited.append(("when done", confinement))

    def take_pending(self) -> list[Any]:
        return []


@dataclass
class PermitGate(RecordingGate):
    permit: Permit = field(default_factory=Permit)

    async def authorize(self, ctx: ToolContext, request: Request) -> Permit:
        permit = await super().authorize(ctx, request)
        return self.permit if isinstance(request, Command) else permit


class Quiet:
    async def on_terminal(self, terminal_id: str) -> None: ...

    async def on_output(self, output: str) -> None: ...


def context(tmp_path: Path, gate: RecordingGate | None = None, sandbox: Any = None,
            call_id: str = "toolu_test") -> tuple[ToolContext, RecordingEditor]:
    ctx = make_context(tmp_path, gate=gate, sandbox=sandbox, call_id=call_id)
    editor = RecordingEditor()
    ctx.editor = editor
    return ctx, editor


def change(path: Path, new_text: str | None = "new") -> FileChange:
    return FileChange(path, None, new_text)


# -- files --------------------------------------------------------------------------------------------


@pytest.mark.anyio
async def test_an_unauthorised_write_or_delete_is_refused_and_the_disk_untouched(tmp_path: Path) -> None:
    ctx, _ = context(tmp_path)
    kept = ctx.cwd / "kept.txt"
    kept.write_text("old")
    with pytest.raises(PermissionDenied, match="was not authorized"):
        await ctx.write_text(ctx.cwd / "new.txt", "x")
    with pytest.raises(PermissionDenied, match="was not authorized"):
        await ctx.delete_file(kept)
    with pytest.raises(PermissionDenied):
        await ctx.write_text(kept, "overwritten")
    assert not (ctx.cwd / "new.txt").exists() and kept.read_text() == "old"


@pytest.mark.anyio
async def test_only_the_authorised_paths_may_be_written_or_deleted(tmp_path: Path) -> None:
    gate = RecordingGate()
    ctx, _ = context(tmp_path, gate)
    allowed, other = ctx.cwd / "a.txt", ctx.cwd / "b.txt"
    other.write_text("b")
    await ctx.authorize_edits([change(allowed)])
    assert gate.edits == [[change(allowed)]]
    await ctx.write_text(allowed, "written")
    assert allowed.read_text() == "written"
    with pytest.raises(PermissionDenied):
        await ctx.delete_file(other)
    await ctx.delete_file(allowed)
    assert not allowed.exists() and other.read_text() == "b"


@pytest.mark.anyio
async def test_a_refused_authorisation_grants_nothing(tmp_path: Path) -> None:
    gate = RecordingGate(allow=False)
    ctx, editor = context(tmp_path, gate)
    path = ctx.cwd / "a.txt"
    with pytest.raises(PermissionDenied, match="declined"):
        await ctx.authorize_edits([change(path)])
    with pytest.raises(PermissionDenied, match="declined"):
        await ctx.authorize_command("true", ctx.cwd)
    with pytest.raises(PermissionDenied, match="declined"):
        await ctx.authorize_state([change(path)])
    with pytest.raises(PermissionDenied, match="was not authorized"):
        await ctx.write_text(path, "x")
    with pytest.raises(PermissionDenied, match="was not authorized"):
        await ctx.run_command(CommandRequest("true", ctx.cwd, 5), Quiet())
    assert not path.exists() and editor.runs == []


@pytest.mark.anyio
async def test_authorisation_does_not_carry_over_to_another_call_of_the_session(tmp_path: Path) -> None:
    first, _ = context(tmp_path, call_id="toolu_1")
    path = first.cwd / "a.txt"
    await first.authorize_edits([change(path)])
    await first.authorize_command("true", first.cwd)
    editor = RecordingEditor()
    second = ToolContext("toolu_2", first.scope, editor, first.gate, first.sink)  # same session, new call
    with pytest.raises(PermissionDenied):
        await second.write_text(path, "x")
    with pytest.raises(PermissionDenied):
        await second.run_command(CommandRequest("true", second.cwd, 5), Quiet())
    assert editor.runs == [] and not path.exists()


# -- commands -----------------------------------------------------------------------------------------


@pytest.mark.parametrize("run", ["echo hi; touch pwned", "echo hi ", "ECHO HI", "echo"])
@pytest.mark.anyio
async def test_only_the_exact_authorised_command_may_run(tmp_path: Path, run: str) -> None:
    ctx, editor = context(tmp_path)
    await ctx.authorize_command("echo hi", ctx.cwd)
    with pytest.raises(PermissionDenied, match="was not authorized"):
        await ctx.run_command(CommandRequest(run, ctx.cwd, 5), Quiet())
    with pytest.raises(PermissionDenied, match="was not authorized"):
        ctx.start_detached(run, ctx.cwd, tmp_path / "log")
    assert editor.runs == [] and editor.detached == []


@pytest.mark.anyio
async def test_an_unsandboxed_permit_runs_unconfined_whatever_the_tool_asked(tmp_path: Path) -> None:
    ctx, editor = context(tmp_path)
    await ctx.authorize_command("make", ctx.cwd)
    sneaked: Any = ("confined", True)  # a tool cannot choose its own confinement
    await ctx.run_command(CommandRequest("make", ctx.cwd, 5, confinement=sneaked), Quiet())
    ctx.start_detached("make", ctx.cwd, tmp_path / "log")
    assert [r.confinement for r in editor.runs] == [None]
    assert editor.detached == [("make", None)]


@pytest.mark.parametrize("network", [False, True])
@pytest.mark.anyio
async def test_a_sandboxed_permit_runs_in_the_sessions_sandbox(tmp_path: Path, network: bool) -> None:
    sandbox = FakeSandbox()
    ctx, editor = context(tmp_path, PermitGate(permit=Permit(sandboxed=True, network=network)), sandbox)
    await ctx.authorize_command("pytest", ctx.cwd)
    outcome = await ctx.run_command(CommandRequest("pytest", ctx.cwd, 5), Quiet())
    ctx.start_detached("pytest", ctx.cwd, tmp_path / "log")
    assert outcome.sandboxed and editor.runs[0].confinement == ("confined", network)
    assert editor.detached == [("pytest", ("confined", network))]
    assert sandbox.asked == [network, network]
    assert sandbox.audited == [("confined", network), ("when done", ("confined", network))]


@pytest.mark.parametrize("sandbox", [None, FakeSandbox(available=False),
                                     SessionSandbox(enabled=False, writable=(), hidden=(), network_allowed=False,
                                                    session_id="off")])
@pytest.mark.anyio
async def test_a_sandboxed_permit_without_a_usable_sandbox_does_not_run(tmp_path: Path, sandbox: Any) -> None:
    ctx, editor = context(tmp_path, RecordingGate(sandboxed=True), sandbox)
    await ctx.authorize_command("pytest", ctx.cwd)
    with pytest.raises(PermissionDenied, match="may only run sandboxed"):
        await ctx.run_command(CommandRequest("pytest", ctx.cwd, 5), Quiet())
    with pytest.raises(PermissionDenied, match="may only run sandboxed"):
        ctx.start_detached("pytest", ctx.cwd, tmp_path / "log")
    assert editor.runs == [] and editor.detached == []


@pytest.mark.anyio
async def test_an_authorised_command_really_runs_on_the_local_editor(tmp_path: Path) -> None:
    ctx = make_context(tmp_path)
    command = "echo ran > marker.txt"
    with pytest.raises(PermissionDenied):
        await ctx.run_command(CommandRequest(command, ctx.cwd, 30), Quiet())
    assert not (ctx.cwd / "marker.txt").exists()
    await ctx.authorize_command(command, ctx.cwd)
    outcome = await ctx.run_command(CommandRequest(command, ctx.cwd, 30), Quiet())
    assert outcome.exit_code == 0 and not outcome.sandboxed
    assert (ctx.cwd / "marker.txt").read_text() == "ran\n"
    assert isinstance(ctx.gate, RecordingGate) and ctx.gate.commands == [(command, ctx.cwd)]


# -- the agent's own stores ------------------------------------------------------------------------------


@pytest.mark.anyio
async def test_state_writes_need_their_own_authorisation(tmp_path: Path) -> None:
    ctx, _ = context(tmp_path)
    store = tmp_path / "MEMORY.md"
    calls: list[tuple[str, ...]] = []

    def write(*args: str) -> int:
        calls.append(args)
        return len(calls)

    await ctx.authorize_edits([change(store)])  # an edit grant is not a state grant
    with pytest.raises(PermissionDenied, match=f"change to {store} was not authorized"):
        await ctx.write_state(store, write, "a")
    await ctx.authorize_state([change(store)])
    assert await ctx.write_state(store, write, "b", "c") == 1
    with pytest.raises(PermissionDenied):
        await ctx.write_state(tmp_path / "USER.md", write, "d")
    assert calls == [("b", "c")]


@pytest.mark.anyio
async def test_a_state_grant_is_not_an_edit_grant(tmp_path: Path) -> None:
    ctx, _ = context(tmp_path)
    path = ctx.cwd / "notes.md"
    await ctx.authorize_state([change(path)])
    with pytest.raises(PermissionDenied):
        await ctx.write_text(path, "x")
    assert not path.exists()


# -- background jobs: judged where they run ---------------------------------------------------------------


@dataclass
class FakeJob:
    job_id: str
    sandboxed: bool
    command: str = "sh"
    session_id: str = "session-test"
    cwd: Path = Path("/w")
    process: Any = field(default_factory=lambda: SimpleNamespace(pid=4242))


@pytest.mark.anyio
async def test_a_job_remembers_whether_its_command_was_permitted_into_the_sandbox(tmp_path: Path) -> None:
    ctx, _ = context(tmp_path, PermitGate(permit=Permit(sandboxed=True)), FakeSandbox())
    await ctx.authorize_command("make watch", ctx.cwd)
    assert ctx.runs_sandboxed("make watch")
    outside, _ = context(tmp_path)
    await outside.authorize_command("make watch", outside.cwd)
    assert not outside.runs_sandboxed("make watch")
    with pytest.raises(PermissionDenied, match="was not authorized"):
        outside.runs_sandboxed("make other")


@pytest.mark.anyio
async def test_a_write_to_a_job_is_asked_where_the_job_runs(tmp_path: Path) -> None:
    gate = RecordingGate()
    ctx, _ = context(tmp_path, gate)
    await ctx.authorize_job(FakeJob("job-1", sandboxed=True), "write", "ls\n")  # as its command fed the input
    assert gate.commands == [("sh <<'EOF'\nls\nEOF", Path("/w"))] and gate.job_inputs == []
    await ctx.authorize_job(FakeJob("job-2", sandboxed=False), "write", "ls\n", eof=True)  # as input outside
    assert gate.job_inputs == [("job-2", "ls\n", True)] and len(gate.commands) == 1
    await ctx.authorize_job(FakeJob("job-2", sandboxed=False), "kill")  # stopping is asked as kill either way
    assert gate.commands[-1][0] == "kill -TERM -- -4242"


@pytest.mark.anyio
async def test_a_write_allowed_without_its_end_of_input_may_not_close_the_jobs_stdin(tmp_path: Path) -> None:
    ctx, _ = context(tmp_path)
    job = FakeJob("job-1", sandboxed=False)
    await ctx.authorize_job(job, "write", "ls\n")
    with pytest.raises(PermissionDenied, match="writing to job-1 was not authorized"):
        await ctx.write_job(job, "ls\n", eof=True)


# -- what the call shares with its session ---------------------------------------------------------------


@pytest.mark.anyio
async def test_show_replaces_the_calls_live_content(tmp_path: Path) -> None:
    ctx, _ = context(tmp_path, call_id="toolu_9")
    await ctx.show([TextDisplay("working")])
    assert events_of(ctx) == [ToolCallUpdated("toolu_9", display=(TextDisplay("working"),), locations=None)]


def test_state_slots_start_from_their_factory_and_are_per_session(tmp_path: Path) -> None:
    key: StateKey[list[str]] = StateKey("todo", list)
    state = ToolState()
    assert key not in state
    state.get(key).append("one")
    assert key in state and state.get(key) == ["one"]
    state.set(key, ["two"])
    assert state.get(key) == ["two"]
    assert ToolState().get(key) == []
    assert repr(key) == "StateKey('todo')"


@pytest.mark.parametrize(("raw", "inside"), [("src/a.py", True), ("../elsewhere/a.py", False), ("/etc/passwd", False)])
def test_the_scope_resolves_against_its_cwd_and_knows_its_roots(tmp_path: Path, raw: str, inside: bool) -> None:
    (tmp_path / "work").mkdir()
    scope = make_scope(tmp_path / "work")
    resolved = scope.resolve(raw)
    assert resolved.is_absolute() and scope.in_workspace(resolved) is inside

