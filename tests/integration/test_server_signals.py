"""SIGTERM and SIGHUP to the real stdio server, and the temp directories of servers that were killed.

The server runs with a temp directory of its own (``TMPDIR``) so everything it leaves there can be
seen: after a sandboxed command and a background job, a signal ends it quietly (the shell's status
128 + the signal, no traceback) with nothing of it left in the temp directory. A start removes the
folders of processes that are gone (named ``acp-hermes-<kind>-<pid>-…``) and keeps a live one's and
anything else.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
from pathlib import Path

import anyio
import pytest

from acp_hermes_tools.sandbox import detect
from tests.support.acp_harness import running_agent
from tests.support.fake_anthropic import FakeAnthropic, text_reply, tool_reply
from tests.support.tool_checks import check_tool_calls

pytestmark = pytest.mark.anyio
STATUS = detect()


def ours(folder: Path) -> list[str]:
    return sorted(entry.name for entry in folder.iterdir() if entry.name.startswith("acp-hermes-"))


def agent_stderr(tmp_path: Path) -> str:
    return "".join(path.read_text(errors="replace") for path in tmp_path.glob("agent-stderr-*.log"))


@pytest.mark.skipif(not STATUS.available, reason=f"no OS sandbox here: {STATUS.detail}")
@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP], ids=["SIGTERM", "SIGHUP"])
async def test_a_signal_ends_the_server_quietly_and_leaves_nothing_in_the_temp_directory(
    tmp_path: Path, fake_anthropic: FakeAnthropic, signum: signal.Signals
) -> None:
    temp = tmp_path / "tmp"
    temp.mkdir()
    fake_anthropic.script(
        tool_reply("terminal", {"command": "echo scratch > \"$TMPDIR/note\" && cat \"$TMPDIR/note\""}, id="toolu_fg"),
        tool_reply("terminal", {"command": "sleep 600", "background": True}, id="toolu_bg"),
        text_reply("started"),
    )
    fake_anthropic.script_auxiliary(text_reply("Signals"))
    async with running_agent(tmp_path, fake_anthropic, env={"TMPDIR": str(temp)}) as agent:
        sid = await agent.new_session()
        await agent.conn.set_session_mode(session_id=sid, mode_id="bypass")
        assert await agent.prompt(sid, "run things") == "end_turn"
        calls = check_tool_calls(agent, sid)
        assert calls["toolu_fg"].status == "completed" and calls["toolu_bg"].status == "completed"
        made = ours(temp)  # the sandbox's $TMPDIR, the seccomp filter's folder, the job's logs
        assert {name.split("-")[2] for name in made} == {"sandbox", "seccomp", "jobs"}, made
        assert all(f"-{agent.process.pid}-" in name for name in made), made
        agent.process.send_signal(signum)
        with anyio.fail_after(30):
            status = await agent.process.wait()
    assert ours(temp) == []
    assert status == 128 + signum
    stderr = agent_stderr(tmp_path)
    assert f"{signum.name} received; exiting" in stderr
    for noise in ("Traceback", "Exception ignored", "Task was destroyed", "never retrieved"):
        assert noise not in stderr, stderr


def running(marker: str) -> list[int]:
    """The processes whose command line holds ``marker``."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and marker.encode() in (entry / "cmdline").read_bytes():
                found.append(int(entry.name))
        except OSError:
            continue
    return found


@pytest.mark.skipif(not STATUS.available, reason=f"no OS sandbox here: {STATUS.detail}")
async def test_sigterm_during_a_running_command_stops_it_and_leaves_nothing(
    tmp_path: Path, fake_anthropic: FakeAnthropic
) -> None:
    temp = tmp_path / "tmp"
    temp.mkdir()
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    started = workspace / "started"
    os.mkfifo(started)  # the command writes to it once it runs: the test waits on it, not on a clock
    marker = "612.25"
    fake_anthropic.script(tool_reply("terminal", {"command": f"echo yes > started && sleep {marker}"}, id="toolu_run"),
                          text_reply("never reached"))
    fake_anthropic.script_auxiliary(text_reply("Signals"))
    async with running_agent(tmp_path, fake_anthropic, workspace=workspace, env={"TMPDIR": str(temp)}) as agent:
        sid = await agent.new_session()
        await agent.conn.set_session_mode(session_id=sid, mode_id="bypass")
        async with anyio.create_task_group() as group:
            async def prompt() -> None:
                with contextlib.suppress(Exception):  # answered "cancelled", or the connection closed first
                    await agent.prompt(sid, "run it")

            group.start_soon(prompt)
            with anyio.fail_after(30):
                assert await anyio.to_thread.run_sync(started.read_text) == "yes\n"
            assert running(marker) and any(name.startswith("acp-hermes-sandbox-") for name in ours(temp))
            agent.process.send_signal(signal.SIGTERM)
            with anyio.fail_after(30):
                status = await agent.process.wait()
    assert ours(temp) == [] and running(marker) == []
    assert status == 128 + signal.SIGTERM
    stderr = agent_stderr(tmp_path)
    for noise in ("Traceback", "Exception ignored", "Task was destroyed", "never retrieved"):
        assert noise not in stderr, stderr


async def test_a_start_removes_the_folders_of_processes_that_are_gone(
    tmp_path: Path, fake_anthropic: FakeAnthropic
) -> None:
    temp = tmp_path / "tmp"
    temp.mkdir()
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True,
                          text=True, check=True)
    dead, live = int(gone.stdout), os.getpid()
    stale = [temp / f"acp-hermes-sandbox-{dead}-sess-abc123", temp / f"acp-hermes-seccomp-{dead}-x1y2z3",
             temp / f"acp-hermes-jobs-{dead}-sess-q9w8e7"]
    kept = [temp / f"acp-hermes-sandbox-{live}-sess-def456", temp / "acp-hermes-notes",
            temp / f"acp-hermes-sandbox-{dead}"]  # not a name we make: not ours to remove
    for folder in (*stale, *kept):
        folder.mkdir()
        (folder / "file.txt").write_text("x")
    locked = stale[0] / "locked" / "deeper"  # what a command left without permissions goes too
    locked.mkdir(parents=True)
    (locked / "file.txt").write_text("x")
    locked.chmod(0)
    locked.parent.chmod(0)
    (temp / f"acp-hermes-sandbox-{dead}-file").write_text("a file, not a folder: not ours")
    async with running_agent(tmp_path, fake_anthropic, env={"TMPDIR": str(temp)}) as agent:
        await agent.conn.list_sessions()  # answered from state.db, opened after the clean-up
    assert not any(folder.exists() for folder in stale)
    assert all((folder / "file.txt").exists() for folder in kept)
    assert (temp / f"acp-hermes-sandbox-{dead}-file").is_file()
    assert "Traceback" not in agent_stderr(tmp_path)
