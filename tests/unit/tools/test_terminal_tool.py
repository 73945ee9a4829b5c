"""The terminal tool, driven through the registry against real subprocesses."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import anyio
import pytest

from acp_hermes_tools.context import ToolContext
from acp_hermes_tools.contracts import TextDisplay, ToolCallUpdated
from acp_hermes_tools.registry import ToolCall, ToolRegistry, ToolResult
from acp_hermes_tools.terminal import BACKGROUND_JOBS, TERMINAL_TOOL, clamp_timeout
from tests.support.tools import RecordingGate, events_of, make_context

pytestmark = pytest.mark.anyio

REGISTRY = ToolRegistry([TERMINAL_TOOL])
WAIT_LIMIT = 20.0  # seconds a condition may take before the test fails


async def run(ctx: ToolContext, **args: object) -> ToolResult:
    return await REGISTRY.dispatch(ToolCall("toolu_test", "terminal", dict(args)), ctx)


async def wait_until(condition: Callable[[], bool]) -> None:
    """Poll ``condition`` until it holds; fail after WAIT_LIMIT."""
    with anyio.fail_after(WAIT_LIMIT):
        while not condition():
            await anyio.sleep(0.02)


def process_gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    with contextlib.suppress(OSError):  # a zombie is dead too; only its exit status is left
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    return False


def live_outputs(ctx: ToolContext) -> list[str]:
    return [
        item.text
        for event in events_of(ctx)
        if isinstance(event, ToolCallUpdated) and event.display
        for item in event.display
        if isinstance(item, TextDisplay) and item.fence == ""
    ]


@contextlib.asynccontextmanager
async def background_cleanup(ctx: ToolContext) -> AsyncIterator[None]:
    """Stop whatever background jobs a test started and remove their logs, whatever happened."""
    try:
        yield
    finally:
        for job in ctx.state.get(BACKGROUND_JOBS).jobs if BACKGROUND_JOBS in ctx.state else ():
            if job.exit_code is None:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(job.pid, signal.SIGKILL)
            shutil.rmtree(job.log_path.parent, ignore_errors=True)


async def test_output_and_exit_code(tmp_path: Path) -> None:
    ctx = make_context(tmp_path)
    result = await run(ctx, command="echo hello; echo oops >&2; exit 3")
    assert not result.ok
    assert "hello\n" in result.text
    assert "oops\n" in result.text
    assert result.text.endswith("[exit code: 3]")
    assert result.raw_output == {"exit_code": 3, "timed_out": False, "truncated": False}


async def test_success_is_ok_and_the_display_is_a_fenced_transcript(tmp_path: Path) -> None:
    ctx = make_context(tmp_path)
    result = await run(ctx, command="printf 'a\\nb\\n'")
    assert result.ok
    assert result.text == "a\nb\n[exit code: 0]"
    assert result.display == (TextDisplay("$ printf 'a\\nb\\n'\na\nb\n[exit code: 0]", fence=""),)


async def test_silent_command_says_so(tmp_path: Path) -> None:
    result = await run(make_context(tmp_path), command="true")
    assert result.text == "(no output)\n[exit code: 0]"


async def test_runs_in_the_session_cwd_by_default(tmp_path: Path) -> None:
    result = await run(make_context(tmp_path), command="pwd")
    assert result.text.splitlines()[0] == str(tmp_path.resolve())


async def test_workdir_is_relative_to_the_session_cwd(tmp_path: Path) -> None:
    (tmp_path / "sub" / "deeper").mkdir(parents=True)
    gate = RecordingGate()
    ctx = make_context(tmp_path, gate=gate)
    result = await run(ctx, command="pwd", workdir="sub/deeper")
    expected = (tmp_path / "sub" / "deeper").resolve()
    assert result.text.splitlines()[0] == str(expected)
    assert gate.commands == [("pwd", expected)]


async def test_workdir_must_be_an_existing_directory(tmp_path: Path) -> None:
    (tmp_path / "file.txt").write_text("x")
    gate = RecordingGate()
    ctx = make_context(tmp_path, gate=gate)
    for workdir in ("missing", "file.txt"):
        result = await run(ctx, command="touch ran", workdir=workdir)
        assert not result.ok
        assert "not an existing directory" in result.text
    assert gate.commands == []
    assert not (tmp_path / "ran").exists()


async def test_a_refused_command_never_runs(tmp_path: Path) -> None:
    gate = RecordingGate(allow=False)
    ctx = make_context(tmp_path, gate=gate)
    result = await run(ctx, command="touch marker")
    assert not result.ok
    assert "declined" in result.text
    assert gate.commands == [("touch marker", tmp_path.resolve())]
    assert not (tmp_path / "marker").exists()


async def test_a_refused_background_command_never_starts(tmp_path: Path) -> None:
    ctx = make_context(tmp_path, gate=RecordingGate(allow=False))
    result = await run(ctx, command="touch marker", background=True)
    assert not result.ok
    assert BACKGROUND_JOBS not in ctx.state
    assert not (tmp_path / "marker").exists()


async def test_blank_command_is_an_error(tmp_path: Path) -> None:
    gate = RecordingGate()
    result = await run(make_context(tmp_path, gate=gate), command="   ")
    assert not result.ok
    assert "empty" in result.text
    assert gate.commands == []


async def test_timeout_kills_the_whole_process_tree(tmp_path: Path) -> None:
    ctx = make_context(tmp_path)
    command = "sleep 300 & echo $! > child.pid; echo started; wait"
    result = await run(ctx, command=command, timeout=1)
    assert not result.ok
    assert "started" in result.text
    assert result.text.endswith("[timed out after 1s; the command was killed]")
    assert result.raw_output == {"exit_code": None, "timed_out": True, "truncated": False}
    child = int((tmp_path / "child.pid").read_text())
    await wait_until(lambda: process_gone(child))


async def test_cancelling_the_call_kills_the_command(tmp_path: Path) -> None:
    ctx = make_context(tmp_path)
    pid_file = tmp_path / "child.pid"
    finished = False

    async def call() -> None:
        nonlocal finished
        await run(ctx, command="sleep 300 & echo $! > child.pid; wait")
        finished = True

    async with anyio.create_task_group() as group:
        group.start_soon(call)
        await wait_until(lambda: pid_file.exists() and pid_file.read_text().strip() != "")
        group.cancel_scope.cancel()
    assert not finished
    child = int(pid_file.read_text())
    await wait_until(lambda: process_gone(child))


async def test_a_process_killed_by_a_signal_says_so(tmp_path: Path) -> None:
    result = await run(make_context(tmp_path), command="kill -TERM $$")
    assert not result.ok
    assert result.text.endswith("[killed by signal SIGTERM]")


async def test_output_is_shown_live_while_the_command_runs(tmp_path: Path) -> None:
    ctx = make_context(tmp_path)
    command = "echo first; while [ ! -f go ]; do sleep 0.02; done; echo second"
    result: ToolResult | None = None

    async def call() -> None:
        nonlocal result
        result = await run(ctx, command=command)

    async with anyio.create_task_group() as group:
        group.start_soon(call)
        await wait_until(lambda: any(text == f"$ {command}\nfirst\n" for text in live_outputs(ctx)))
        assert result is None  # still running: "second" has not been printed yet
        (tmp_path / "go").touch()
    assert result is not None and result.ok
    assert live_outputs(ctx)[-1] == f"$ {command}\nfirst\nsecond\n"
    assert result.display == (TextDisplay(f"$ {command}\nfirst\nsecond\n[exit code: 0]", fence=""),)


async def test_background_returns_at_once_and_keeps_running(tmp_path: Path) -> None:
    ctx = make_context(tmp_path)
    command = "echo started; while [ ! -f go ]; do sleep 0.02; done; echo finishing; touch finished"
    async with background_cleanup(ctx):
        result = await run(ctx, command=command, background=True)
        assert result.ok
        [job] = ctx.state.get(BACKGROUND_JOBS).jobs
        assert result.raw_output == {"pid": job.pid, "log": str(job.log_path), "background": True,
                                     "job_id": "job-1", "stdin": False}
        assert job.job_id == "job-1" and job.log_path.name == "job-1.log" and 'job_id "job-1"' in result.text
        assert str(job.log_path) in result.text and str(job.pid) in result.text
        assert job.cwd == tmp_path.resolve()
        assert job.exit_code is None  # returned while the command waits for "go"
        assert not (tmp_path / "finished").exists()
        (tmp_path / "go").touch()
        await wait_until(lambda: job.exit_code is not None)
        assert job.exit_code == 0
        assert (tmp_path / "finished").exists()
        assert job.log_path.read_text() == "started\nfinishing\n"


async def test_background_jobs_survive_a_cancelled_turn(tmp_path: Path) -> None:
    ctx = make_context(tmp_path)
    background = "echo $$ > bg.pid; while [ ! -f go ]; do sleep 0.02; done"
    async with background_cleanup(ctx):
        async with anyio.create_task_group() as group:

            async def turn() -> None:
                await run(ctx, command=background, background=True)
                await run(ctx, command="sleep 300 & echo $! > fg.pid; wait")

            group.start_soon(turn)
            await wait_until(lambda: (tmp_path / "fg.pid").exists() and (tmp_path / "fg.pid").read_text() != "")
            group.cancel_scope.cancel()
        foreground_child = int((tmp_path / "fg.pid").read_text())
        await wait_until(lambda: process_gone(foreground_child))
        [job] = ctx.state.get(BACKGROUND_JOBS).jobs
        assert job.exit_code is None
        assert not process_gone(job.pid)
        (tmp_path / "go").touch()
        await wait_until(lambda: job.exit_code is not None)
        assert job.exit_code == 0


async def test_background_logs_go_to_one_private_directory_per_session(tmp_path: Path) -> None:
    ctx = make_context(tmp_path)
    async with background_cleanup(ctx):
        await run(ctx, command="echo one", background=True)
        await run(ctx, command="echo two >&2", background=True)
        first, second = ctx.state.get(BACKGROUND_JOBS).jobs
        assert first.log_path.parent == second.log_path.parent
        assert first.log_path != second.log_path
        assert first.log_path.parent != tmp_path
        await wait_until(lambda: first.exit_code is not None and second.exit_code is not None)
        assert first.log_path.read_text() == "one\n"
        assert second.log_path.read_text() == "two\n"
    other = make_context(tmp_path)
    async with background_cleanup(other):
        await run(other, command="true", background=True)
        assert other.state.get(BACKGROUND_JOBS).jobs[0].log_path.parent != first.log_path.parent


async def test_a_zero_timeout_is_raised_to_one_second(tmp_path: Path) -> None:
    result = await run(make_context(tmp_path), command="echo done", timeout=0)
    assert result.ok
    assert "done" in result.text


def test_timeout_is_clamped_to_a_sane_range() -> None:
    assert clamp_timeout(None) == 180
    assert clamp_timeout(0) == 1
    assert clamp_timeout(-5) == 1
    assert clamp_timeout(30) == 30
    assert clamp_timeout(10**9) == 3600
    assert clamp_timeout(float("inf")) == 180


@pytest.mark.parametrize(
    ("command", "title"),
    [
        ("pytest -q", "Run pytest -q"),
        ("  git   status  ", "Run git status"),
        ("make build\nmake test", "Run make build …"),
        ("echo " + "x" * 200, "Run echo " + "x" * 74 + "…"),
    ],
)
def test_title_is_the_command(tmp_path: Path, command: str, title: str) -> None:
    presentation, kind = REGISTRY.presentation(ToolCall("t", "terminal", {"command": command}), tmp_path)
    assert presentation.title == title
    assert len(presentation.title) <= len("Run ") + 80
    assert presentation.locations == ()
    assert kind == "execute"


def test_declaration() -> None:
    assert TERMINAL_TOOL.access.value == "execute"
    assert not TERMINAL_TOOL.parallel_safe
    assert REGISTRY.validation_error(TERMINAL_TOOL, {"command": "ls", "cwd": "x"}) is not None
    assert REGISTRY.validation_error(TERMINAL_TOOL, {"command": "ls", "workdir": "x", "timeout": 5}) is None
