"""MCP servers through the real stdio server, with real MCP servers built on the official SDK.

Servers come from the editor (session/new, load, resume, fork: stdio, http, sse) and from
acp-hermes's config; their tools reach the model as ``mcp__<server>__<tool>``; every call asks until
the user trusts the server, whose read-only tools then run without a question; the others ask in
default mode (and "always" is remembered for the project).
A server that crashes at start, hangs, or dies mid-session is reported and the session goes on;
servers stop when the session closes or the agent exits.

Hostile servers: tool names that collide once sanitised never break a prompt (every tool is offered
under a unique, valid name); a catastrophically backtracking ``pattern`` in a tool's schema cannot
freeze the agent; a server that ignores SIGTERM and its stdin closing is killed, and no server (nor
what it started in its process group) outlives the agent, even ``kill -9`` of it.
"""

from __future__ import annotations

import os
import re
import select
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
import yaml
from acp import text_block
from acp.schema import EnvVariable, HttpHeader, HttpMcpServer, McpServerStdio, SseMcpServer

from acp_hermes_tools.mcp.specs import suffixed_name
from tests.support.acp_harness import (
    AgentProcess,
    EditorClient,
    PromptTask,
    cancel_and_wait,
    choose,
    running_agent,
    write_config,
)
from tests.support.fake_anthropic import FakeAnthropic, text_reply, tool_reply
from tests.support.tool_checks import asked_ids, check_tool_calls, tool_result

pytestmark = pytest.mark.anyio

SERVER = Path(__file__).resolve().parents[1] / "support" / "mcp_server.py"
ECHO, WRITE, SLOW, CRASH = "mcp__docs__echo", "mcp__docs__write_note", "mcp__docs__slow", "mcp__docs__crash"


def stdio_server(name: str = "docs", *args: str, env: dict[str, str] | None = None) -> McpServerStdio:
    return McpServerStdio(name=name, command=sys.executable, args=[str(SERVER), *args],
                          env=[EnvVariable(name=k, value=v) for k, v in (env or {}).items()])


def tool_names(request: dict[str, Any]) -> list[str]:
    return [tool["name"] for tool in request.get("tools", [])]


async def new_session(agent: AgentProcess, *servers: Any) -> str:
    response = await agent.conn.new_session(cwd=str(agent.workspace), mcp_servers=list(servers))
    return str(response.session_id)


def wait_exited(pid: int, timeout: float = 15.0) -> bool:
    """Whether process ``pid`` has ended within ``timeout`` (a pidfd turns readable when it exits)."""
    try:
        fd = os.pidfd_open(pid)
    except ProcessLookupError:
        return True
    try:
        readable, _, _ = select.select([fd], [], [], timeout)
        return bool(readable)
    finally:
        os.close(fd)


def ignores_sigterm(pid: int) -> bool:
    """Whether process ``pid`` ignores SIGTERM (its ``SigIgn`` mask in /proc)."""
    status = Path(f"/proc/{pid}/status").read_text()
    mask = int(re.search(r"^SigIgn:\s*([0-9a-f]+)$", status, re.MULTILINE).group(1), 16)  # type: ignore[union-attr]
    return bool(mask & (1 << (signal.SIGTERM - 1)))


@contextmanager
def killed_if_left(paths: list[Path]) -> Iterator[None]:
    """Whatever happens in the block, no test server whose pid is in ``paths`` is left running after it."""
    try:
        yield
    finally:
        for path in paths:
            pid = int(path.read_text()) if path.exists() else 0
            try:
                cmdline = Path(f"/proc/{pid}/cmdline").read_bytes() if pid else b""
            except OSError:
                continue
            if b"mcp_server.py" in cmdline or b"SIG_IGN" in cmdline:  # still ours, not a reused pid
                os.kill(pid, signal.SIGKILL)


def read_pid(path: Path) -> int:
    """The pid a test server wrote (it writes it before it answers, so a ready server has written it)."""
    return int(path.read_text())


@contextmanager
def http_server(transport: str) -> Iterator[str]:
    """A real MCP server over ``transport`` (http or sse) on 127.0.0.1; yields its URL."""
    process = subprocess.Popen([sys.executable, str(SERVER), "--transport", transport, "--name", "remote"],
                               stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        assert process.stdout is not None
        line = process.stdout.readline()  # printed once the socket listens
        assert line.startswith("PORT "), line
        port = int(line.split()[1])
        yield f"http://127.0.0.1:{port}/mcp" if transport == "http" else f"http://127.0.0.1:{port}/sse"
    finally:
        process.kill()
        process.wait()


# --- tools reach the model and run -----------------------------------------------------------------

async def test_editor_stdio_server_tools_reach_the_model_and_read_only_claims_count_once_trusted(
        tmp_path: Path, fake_anthropic: FakeAnthropic) -> None:
    target = tmp_path / "note.txt"
    fake_anthropic.script(
        tool_reply(ECHO, {"text": "hello"}, id="toolu_echo"), text_reply("done"),
        tool_reply(ECHO, {"text": "again"}, id="toolu_trusted"), text_reply("done"),
        tool_reply(ECHO, {"text": "plan"}, id="toolu_plan_echo"),
        tool_reply(WRITE, {"path": str(target), "text": "x"}, id="toolu_plan_write"), text_reply("planned"),
    )
    client = EditorClient(policy=choose("allow_always"))
    async with running_agent(tmp_path, fake_anthropic, client=client) as agent:
        sid = await new_session(agent, stdio_server())
        assert await agent.prompt(sid, "echo hello") == "end_turn"
        assert await agent.prompt(sid, "echo again") == "end_turn"
        await agent.conn.set_session_mode(session_id=sid, mode_id="plan")
        assert await agent.prompt(sid, "plan it") == "end_turn"
        calls = check_tool_calls(agent, sid)

    first = fake_anthropic.stream_requests[0]
    assert [n for n in tool_names(first) if n.startswith("mcp__")] == [ECHO, WRITE, SLOW, CRASH]
    echo = next(tool for tool in first["tools"] if tool["name"] == ECHO)
    assert echo["description"].startswith("[MCP server docs] Repeat the text back.")
    assert echo["input_schema"]["required"] == ["text"]
    assert asked_ids(client) == ["toolu_echo"]  # the server says read-only, but it is not trusted yet
    question = client.permission_requests[0]
    assert "it is not trusted yet" in question["toolCall"]["title"]
    trust = next(o["name"] for o in question["options"] if o["kind"] == "allow_always")
    assert trust.startswith("Trust docs")
    assert tool_result(fake_anthropic, "toolu_echo") == ("echo: hello", False)
    echoed = calls["toolu_echo"]
    assert echoed.announced["kind"] == "read" and echoed.announced["title"] == "Echo (docs)"
    assert echoed.status == "completed" and echoed.text() == "echo: hello"
    assert calls["toolu_trusted"].status == "completed"  # trusted: its read-only tools run unasked
    assert calls["toolu_plan_echo"].status == "completed"  # ... even in plan mode
    assert calls["toolu_plan_write"].status == "failed" and not target.exists()  # what may write never does
    assert "plan mode" in tool_result(fake_anthropic, "toolu_plan_write")[0]


async def test_a_tool_that_is_not_read_only_asks_and_a_rejection_stops_it(
        tmp_path: Path, fake_anthropic: FakeAnthropic) -> None:
    target = tmp_path / "note.txt"
    fake_anthropic.script(tool_reply(WRITE, {"path": str(target), "text": "hi"}, id="toolu_w"), text_reply("ok"))
    client = EditorClient(policy=choose("reject_once"))
    async with running_agent(tmp_path, fake_anthropic, client=client) as agent:
        sid = await new_session(agent, stdio_server())
        assert await agent.prompt(sid, "write") == "end_turn"
        calls = check_tool_calls(agent, sid)

    assert asked_ids(client) == ["toolu_w"]
    question = client.permission_requests[0]
    assert question["toolCall"]["title"] == "write_note (docs)"
    options = [o["optionId"] for o in question["options"]]
    assert options == ["allow_once", "allow_always", "reject_once", "reject_always"]
    assert str(target) in question["toolCall"]["content"][0]["content"]["text"]  # the arguments are shown
    assert "declined" in tool_result(fake_anthropic, "toolu_w")[0]
    assert calls["toolu_w"].status == "failed"
    assert not target.exists()


async def test_always_allow_is_remembered_for_that_server_tool_in_the_project(
        tmp_path: Path, fake_anthropic: FakeAnthropic) -> None:
    first, second = tmp_path / "one.txt", tmp_path / "two.txt"
    fake_anthropic.script(
        tool_reply(WRITE, {"path": str(first), "text": "1"}, id="toolu_1"), text_reply("one"),
        tool_reply(WRITE, {"path": str(second), "text": "2"}, id="toolu_2"), text_reply("two"),
    )
    client = EditorClient(policy=choose("allow_always"))
    async with running_agent(tmp_path, fake_anthropic, client=client) as agent:
        sid = await new_session(agent, stdio_server())
        assert await agent.prompt(sid, "first") == "end_turn"
        sid2 = await new_session(agent, stdio_server())  # another session of the same project
        assert await agent.prompt(sid2, "second") == "end_turn"

    assert asked_ids(client) == ["toolu_1"]
    assert first.read_text() == "1" and second.read_text() == "2"
    grants = yaml.safe_load((agent.home / "acp-hermes" / "permissions.yaml").read_text())
    assert grants["projects"][str(agent.workspace)]["allow_commands"] == ["mcp:docs/write_note"]


@pytest.mark.parametrize("transport", ["http", "sse"])
async def test_remote_servers_over_http_and_sse(tmp_path: Path, fake_anthropic: FakeAnthropic, transport: str) -> None:
    name = "mcp__remote__echo"
    fake_anthropic.script(tool_reply(name, {"text": "far"}, id="toolu_r"), text_reply("done"))
    with http_server(transport) as url:
        async with running_agent(tmp_path, fake_anthropic) as agent:
            init = next(m for m in agent.sent() if "result" in m and "agentCapabilities" in m["result"])
            assert init["result"]["agentCapabilities"]["mcpCapabilities"] == {"http": True, "sse": True}
            kind = HttpMcpServer if transport == "http" else SseMcpServer
            server = kind(type=transport, name="remote", url=url, headers=[HttpHeader(name="X-Test", value="1")])
            sid = await new_session(agent, server)
            assert await agent.prompt(sid, "echo far") == "end_turn"

    assert name in tool_names(fake_anthropic.stream_requests[0])
    assert tool_result(fake_anthropic, "toolu_r") == ("echo: far", False)


async def test_servers_from_the_config_join_every_session(tmp_path: Path, fake_anthropic: FakeAnthropic) -> None:
    home = tmp_path / "hermes-home"
    write_config(home, yaml.safe_dump({"mcp_servers": {
        "docs": {"command": sys.executable, "args": [str(SERVER)]},
        "off": {"command": sys.executable, "args": [str(SERVER)], "enabled": False},
    }}))
    fake_anthropic.script(tool_reply(ECHO, {"text": "cfg"}, id="toolu_c"), text_reply("done"))
    async with running_agent(tmp_path, fake_anthropic, home=home) as agent:
        sid = await agent.new_session()
        assert await agent.prompt(sid, "echo") == "end_turn"
        await agent.prompt(sid, "/mcp")
        text = agent.agent_text(sid)

    assert [n for n in tool_names(fake_anthropic.stream_requests[0]) if n.startswith("mcp__")] == [
        ECHO, WRITE, SLOW, CRASH]
    assert tool_result(fake_anthropic, "toolu_c") == ("echo: cfg", False)
    assert "**docs** (stdio, from the config): ready" in text
    assert "- `echo` (read-only): Repeat the text back." in text
    assert "off" not in text.split("MCP servers:")[1]


# --- servers that fail ---------------------------------------------------------------------------

async def test_a_server_that_crashes_at_start_is_reported_and_the_session_goes_on(
        tmp_path: Path, fake_anthropic: FakeAnthropic) -> None:
    fake_anthropic.script(text_reply("still here"))
    async with running_agent(tmp_path, fake_anthropic) as agent:
        sid = await new_session(agent, stdio_server("broken", "--start", "crash"), stdio_server())
        await agent.wait_for(lambda: "could not be connected" in agent.agent_text(sid))
        assert await agent.prompt(sid, "hello") == "end_turn"
        await agent.prompt(sid, "/mcp")
        text = agent.agent_text(sid)

    assert "⚠️ MCP server `broken` could not be connected" in text
    assert "**broken** (stdio, from the editor): failed" in text
    names = tool_names(fake_anthropic.stream_requests[0])
    assert ECHO in names and not any(n.startswith("mcp__broken__") for n in names)


async def test_a_server_that_hangs_times_out_without_holding_the_session(
        tmp_path: Path, fake_anthropic: FakeAnthropic) -> None:
    home = tmp_path / "hermes-home"
    write_config(home, yaml.safe_dump({"mcp_servers": {
        "stuck": {"command": sys.executable, "args": [str(SERVER), "--start", "hang"], "connect_timeout": 1},
    }}))
    fake_anthropic.script(text_reply("answered"))
    async with running_agent(tmp_path, fake_anthropic, home=home) as agent:
        response = await agent.conn.new_session(cwd=str(agent.workspace), mcp_servers=[])
        sid = response.session_id  # answered although the server never will
        await agent.wait_for(lambda: "did not answer within 1 s" in agent.agent_text(sid), timeout=20)
        assert await agent.prompt(sid, "hi") == "end_turn"

    assert not any(n.startswith("mcp__") for n in tool_names(fake_anthropic.stream_requests[0]))


async def test_a_server_that_dies_mid_session_fails_the_call_and_is_reported(
        tmp_path: Path, fake_anthropic: FakeAnthropic) -> None:
    fake_anthropic.script(tool_reply(CRASH, {}, id="toolu_x"), text_reply("it died"), text_reply("next turn"))
    async with running_agent(tmp_path, fake_anthropic, client=EditorClient(policy=choose("allow_once"))) as agent:
        sid = await new_session(agent, stdio_server())
        assert await agent.prompt(sid, "crash it") == "end_turn"
        calls = check_tool_calls(agent, sid)
        await agent.wait_for(lambda: "stopped working" in agent.agent_text(sid))
        assert await agent.prompt(sid, "go on") == "end_turn"

    assert calls["toolu_x"].status == "failed"
    assert "went away" in tool_result(fake_anthropic, "toolu_x")[0]
    assert not any(n.startswith("mcp__docs__") for n in tool_names(fake_anthropic.stream_requests[2]))


async def test_cancel_stops_a_running_mcp_call(tmp_path: Path, fake_anthropic: FakeAnthropic) -> None:
    fake_anthropic.script(tool_reply(SLOW, {}, id="toolu_s"), text_reply("after"))
    client = EditorClient(policy=choose("allow_once"))
    async with running_agent(tmp_path, fake_anthropic, client=client) as agent:
        sid = await new_session(agent, stdio_server())
        task = PromptTask(agent, sid)
        async with anyio.create_task_group() as group:
            group.start_soon(task.run, "wait")
            await agent.wait_for(
                lambda: any(u.get("status") == "in_progress" for u in agent.tool_updates(sid, "toolu_s")))
            assert await cancel_and_wait(agent, task) == "cancelled"
        calls = check_tool_calls(agent, sid)

    assert calls["toolu_s"].status == "failed"


async def test_a_call_that_takes_too_long_times_out(tmp_path: Path, fake_anthropic: FakeAnthropic) -> None:
    home = tmp_path / "hermes-home"
    write_config(home, yaml.safe_dump({"mcp_servers": {
        "docs": {"command": sys.executable, "args": [str(SERVER)], "timeout": 1},
    }}))
    fake_anthropic.script(tool_reply(SLOW, {}, id="toolu_t"), text_reply("moved on"))
    async with running_agent(tmp_path, fake_anthropic, home=home,
                             client=EditorClient(policy=choose("allow_once"))) as agent:
        sid = await agent.new_session()
        assert await agent.prompt(sid, "wait") == "end_turn"

    assert "did not answer within 1 s" in tool_result(fake_anthropic, "toolu_t")[0]


# --- other session methods, and no orphans --------------------------------------------------------

async def test_load_resume_and_fork_connect_the_servers_they_are_given(
        tmp_path: Path, fake_anthropic: FakeAnthropic) -> None:
    fake_anthropic.script(text_reply("one"), text_reply("loaded"), text_reply("resumed"), text_reply("forked"))
    async with running_agent(tmp_path, fake_anthropic) as agent:
        sid = await agent.new_session()
        assert await agent.prompt(sid, "first") == "end_turn"
        cwd = str(agent.workspace)
        for method, kwargs in (("load_session", {"session_id": sid}), ("resume_session", {"session_id": sid}),
                               ("fork_session", {"session_id": sid})):
            response = await getattr(agent.conn, method)(cwd=cwd, mcp_servers=[stdio_server()], **kwargs)
            target = getattr(response, "session_id", None) or sid
            await agent.conn.prompt(session_id=target, prompt=[text_block(method)])

    requests = fake_anthropic.stream_requests
    assert not any(n.startswith("mcp__") for n in tool_names(requests[0]))
    for request in requests[1:]:
        assert ECHO in tool_names(request)


async def test_servers_stop_with_their_session_and_with_the_agent(
        tmp_path: Path, fake_anthropic: FakeAnthropic) -> None:
    fake_anthropic.script(text_reply("a"), text_reply("b"))
    pids = [tmp_path / "closed.pid", tmp_path / "left.pid"]
    async with running_agent(tmp_path, fake_anthropic) as agent:
        closed = await new_session(agent, stdio_server("docs", "--pid-file", str(pids[0])))
        left = await new_session(agent, stdio_server("docs", "--pid-file", str(pids[1])))
        assert await agent.prompt(closed, "x") == "end_turn"  # the turn waited for the server: it runs
        assert await agent.prompt(left, "y") == "end_turn"
        closed_pid, left_pid = (int(path.read_text()) for path in pids)
        await agent.conn.close_session(session_id=closed)
        assert await anyio.to_thread.run_sync(wait_exited, closed_pid)
        assert os.path.exists(f"/proc/{left_pid}")
    # the editor went away: stdin closed, the agent shut down
    assert await anyio.to_thread.run_sync(wait_exited, left_pid)


# --- hostile servers --------------------------------------------------------------------------------

API_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")  # the Messages API's rule for a tool name


async def test_tools_whose_names_collide_are_all_offered_under_unique_names(
        tmp_path: Path, fake_anthropic: FakeAnthropic) -> None:
    # Servers "x.y" and "x_y" both become mcp__x_y__…, and each offers a.b and a_b (both …__a_b) and
    # lists echo twice. The server ready first keeps the plain names: which one that is, is not fixed.
    fake_anthropic.script(
        tool_reply("mcp__x_y__whoami", {}, id="toolu_plain"),
        tool_reply(suffixed_name("x.y", "whoami"), {}, id="toolu_dotted"),
        tool_reply(suffixed_name("x_y", "whoami"), {}, id="toolu_underscored"),
        tool_reply(suffixed_name("x.y", "a_b"), {}, id="toolu_ab"),
        text_reply("done"), text_reply("again"))
    async with running_agent(tmp_path, fake_anthropic) as agent:
        sid = await new_session(agent, stdio_server("x.y", "--tools", "collide", "--name", "dotted"),
                                stdio_server("x_y", "--tools", "collide", "--name", "underscored"))
        assert await agent.prompt(sid, "who are you") == "end_turn"
        assert await agent.prompt(sid, "again") == "end_turn"
        await agent.prompt(sid, "/mcp")
        text = agent.agent_text(sid)

    for request in fake_anthropic.stream_requests:
        names = tool_names(request)
        assert len(names) == len(set(names)) and all(API_NAME.match(name) for name in names)
    names = [n for n in tool_names(fake_anthropic.stream_requests[0]) if n.startswith("mcp__")]
    assert len(names) == 2 * 7  # echo, write_note, slow, crash, a.b, a_b, whoami of each (echo once)
    plain = tool_result(fake_anthropic, "toolu_plain")[0]
    suffixed = {"dotted": "toolu_dotted", "underscored": "toolu_underscored"}
    other = "underscored" if plain == "dotted" else "dotted"
    assert tool_result(fake_anthropic, suffixed[other]) == (other, False)  # each name reaches its own server
    assert "unknown tool" in tool_result(fake_anthropic, suffixed[plain])[0]
    assert tool_result(fake_anthropic, "toolu_ab") == ("underscored", False)  # a_b of x.y, not a.b
    assert f"- `a_b` (read-only) — offered as `{suffixed_name('x.y', 'a_b')}` (`mcp__x_y__a_b` is taken" in text
    assert text.count("- `echo` (read-only) — left out: its server lists it twice") == 2


async def test_a_catastrophic_pattern_in_a_schema_cannot_freeze_the_agent(
        tmp_path: Path, fake_anthropic: FakeAnthropic) -> None:
    match, lookahead = "mcp__docs__match", "mcp__docs__lookahead"
    fake_anthropic.script(
        tool_reply(match, {"text": "a" * 40 + "!"}, id="toolu_re2"),
        tool_reply(match, {"text": "aaa", "tags": {"a" * 40 + "!": "x"}}, id="toolu_keys"),
        tool_reply(lookahead, {"text": "a" * 30 + "!"}, id="toolu_slow"),  # RE2 cannot compile it: time limit
        tool_reply(lookahead, {"text": "aaaa"}, id="toolu_fine"),
        text_reply("checked"), text_reply("still here"))
    async with running_agent(tmp_path, fake_anthropic) as agent:
        sid = await new_session(agent, stdio_server("docs", "--tools", "regex"))
        with anyio.fail_after(120):  # not a measure of speed: a frozen agent would never answer
            assert await agent.prompt(sid, "match them") == "end_turn"
            assert await agent.prompt(sid, "are you there") == "end_turn"
        calls = check_tool_calls(agent, sid)

    text, error = tool_result(fake_anthropic, "toolu_re2")
    assert error and text.startswith(f"Error: invalid arguments for {match}: ") and "does not match '^(a+)+$'" in text
    text, error = tool_result(fake_anthropic, "toolu_keys")
    assert error and "match none of the allowed property patterns" in text
    text, error = tool_result(fake_anthropic, "toolu_slow")
    assert error and "took longer than 0.5 s" in text and "the call was refused" in text
    assert tool_result(fake_anthropic, "toolu_fine") == ("looked ahead: aaaa", False)
    assert [calls[i].status for i in ("toolu_re2", "toolu_keys", "toolu_slow", "toolu_fine")] == [
        "failed", "failed", "failed", "completed"]
    assert fake_anthropic.stream_requests[-1]["messages"][-1]["content"][0]["text"] == "are you there"


async def test_a_server_that_ignores_sigterm_and_eof_is_killed(tmp_path: Path, fake_anthropic: FakeAnthropic) -> None:
    fake_anthropic.script(text_reply("a"), text_reply("b"))
    pids = [tmp_path / "closed.pid", tmp_path / "left.pid"]
    with killed_if_left(pids):
        async with running_agent(tmp_path, fake_anthropic) as agent:
            ignoring = [stdio_server("docs", "--start", "ignore-term", "--pid-file", str(path)) for path in pids]
            closed, left = [await new_session(agent, server) for server in ignoring]
            assert await agent.prompt(closed, "x") == "end_turn"  # both servers are ready: they run
            assert await agent.prompt(left, "y") == "end_turn"
            closed_pid, left_pid = (read_pid(path) for path in pids)
            assert ignores_sigterm(closed_pid) and ignores_sigterm(left_pid)
            await agent.conn.close_session(session_id=closed)
            assert await anyio.to_thread.run_sync(wait_exited, closed_pid, 30.0)
            assert os.path.exists(f"/proc/{left_pid}")
        # the editor went away: stdin closed, the agent shut down
        assert await anyio.to_thread.run_sync(wait_exited, left_pid, 30.0)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the parent-death signal is Linux's")
async def test_no_server_outlives_the_agent_even_after_kill_9(tmp_path: Path, fake_anthropic: FakeAnthropic) -> None:
    home = tmp_path / "hermes-home"
    files = [tmp_path / "server.pid", tmp_path / "child.pid"]  # the server, and a child it started
    write_config(home, yaml.safe_dump({"mcp_servers": {"docs": {"command": sys.executable, "args": [
        str(SERVER), "--start", "ignore-term", "--pid-file", str(files[0]), "--child-pid-file", str(files[1])]}}}))
    fake_anthropic.script(text_reply("ready"))
    with killed_if_left(files):
        async with running_agent(tmp_path, fake_anthropic, home=home) as agent:
            sid = await agent.new_session()
            assert await agent.prompt(sid, "hi") == "end_turn"  # the turn waited for the server: it runs
            pids = [read_pid(path) for path in files]
            assert all(ignores_sigterm(pid) for pid in pids)
            agent.process.kill()
            await agent.process.wait()
            for pid in pids:
                assert await anyio.to_thread.run_sync(wait_exited, pid, 30.0), f"process {pid} outlived the agent"
