"""Background commands end with their session, through the real stdio server: ``session/close``,
``session/delete`` and the editor closing stdin each end the session's detached process groups
(SIGTERM, then SIGKILL) and remove their log directory; and ``kill -9`` of the agent ends them too
(each runs under ``tools/launcher.py``, which kills its group when the agent is gone).
"""

from __future__ import annotations

import itertools
import os
import re
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import pytest

from acp_hermes_tools.sandbox import detect
from tests.integration.test_sandbox import running_with
from tests.support.acp_harness import AgentProcess, running_agent, write_config
from tests.support.fake_anthropic import FakeAnthropic, text_reply, tool_reply
from tests.support.tool_checks import check_tool_calls, tool_result

pytestmark = pytest.mark.anyio
GONE_WITHIN = 10.0  # seconds: SIGTERM at once, SIGKILL after a 2 s grace
_tokens = itertools.count(1)
SANDBOXES = [
    pytest.param("off", id="unsandboxed"),
    pytest.param("auto", id="sandboxed",
                 marks=pytest.mark.skipif(not detect().available, reason=f"no OS sandbox: {detect().detail}")),
]


def sleep_token() -> str:
    """A sleep length no other process uses, so /proc tells this test's processes apart."""
    return f"71.{os.getpid()}{next(_tokens):03d}"


async def gone(condition: Callable[[], bool]) -> None:
    """Poll (bounded) until ``condition()`` holds: processes end on their own schedule, nothing to wait on."""
    with anyio.fail_after(GONE_WITHIN):
        while not condition():
            await anyio.sleep(0.05)


async def start_background_sleep(agent: AgentProcess, fake: FakeAnthropic, token: str,
                                 command: str = "sleep {token}") -> tuple[str, Path]:
    """A session whose turn starts ``sleep <token>`` (or ``command``) in the background; its id and the job's log."""
    fake.script(tool_reply("terminal", {"command": command.format(token=token), "background": True}, id="toolu_bg"),
                text_reply("Started."))
    sid = await agent.new_session()
    await agent.conn.set_session_mode(session_id=sid, mode_id="bypass")
    assert await agent.prompt(sid, "start the server") == "end_turn"
    assert check_tool_calls(agent, sid)["toolu_bg"].status == "completed"
    started, _ = tool_result(fake, "toolu_bg")
    found = re.search(r"goes to (\S+\.log)", started)
    assert found is not None, started
    log = Path(found.group(1))
    assert log.exists() and running_with(token)  # it runs after the turn, as it should
    return sid, log


def close(agent: AgentProcess, sid: str) -> Awaitable[Any]:
    return agent.conn.close_session(session_id=sid)


def delete(agent: AgentProcess, sid: str) -> Awaitable[Any]:
    return agent.conn._conn.send_request("session/delete", {"sessionId": sid})


@pytest.mark.parametrize("sandbox", SANDBOXES)
@pytest.mark.parametrize("end", [close, delete], ids=["close", "delete"])
async def test_ending_a_session_ends_its_background_commands(
    tmp_path: Path, fake_anthropic: FakeAnthropic, sandbox: str, end: Callable[[AgentProcess, str], Awaitable[Any]]
) -> None:
    write_config(tmp_path / "hermes-home", f"sandbox: {sandbox}\nallow_unsandboxed_bypass: true\n")
    token, other_token = sleep_token(), sleep_token()
    async with running_agent(tmp_path, fake_anthropic) as agent:
        sid, log = await start_background_sleep(agent, fake_anthropic, token)
        _, other_log = await start_background_sleep(agent, fake_anthropic, other_token)
        await end(agent, sid)
        await gone(lambda: not running_with(token) and not log.parent.exists())
        assert running_with(other_token) and other_log.exists()  # another session's command runs on
    await gone(lambda: not running_with(other_token))  # ... until the agent exits


@pytest.mark.parametrize("sandbox", SANDBOXES)
async def test_the_agent_exiting_on_stdin_eof_ends_every_background_command(
    tmp_path: Path, fake_anthropic: FakeAnthropic, sandbox: str
) -> None:
    write_config(tmp_path / "hermes-home", f"sandbox: {sandbox}\nallow_unsandboxed_bypass: true\n")
    token = sleep_token()
    async with running_agent(tmp_path, fake_anthropic) as agent:
        _, log = await start_background_sleep(agent, fake_anthropic, token)
    # The block closed stdin and waited for the agent to exit.
    assert agent.process.returncode == 0
    await gone(lambda: not running_with(token) and not log.parent.exists())


@pytest.mark.parametrize("sandbox", SANDBOXES)
async def test_the_agent_killed_with_sigkill_leaves_no_background_command_behind(
    tmp_path: Path, fake_anthropic: FakeAnthropic, sandbox: str
) -> None:
    """Nothing of the agent runs after ``kill -9``, so nothing could stop its jobs: each runs under a
    launcher the kernel tells when the agent is gone, which kills the job's whole process group."""
    write_config(tmp_path / "hermes-home", f"sandbox: {sandbox}\nallow_unsandboxed_bypass: true\n")
    token = sleep_token()
    async with running_agent(tmp_path, fake_anthropic) as agent:
        # A job with a process of its own in its group: the shell, and a sleep it started beside the other.
        await start_background_sleep(agent, fake_anthropic, token, "sleep {token} & sleep {token}; wait")
        await gone(lambda: len(running_with(token)) >= 3)  # the launcher, the shell (in bubblewrap) and its sleeps
        agent.process.kill()
        await agent.process.wait()
        await gone(lambda: not running_with(token))
