"""MCP servers through the real stdio server, with real MCP servers built on the official SDK.

Servers come from the editor (session/new, load, resume, fork: stdio, http, sse) and from
acp-hermes's config; their tools reach the model as ``mcp__<server>__<tool>``, read-only ones run
without a question, the others ask in default mode (and "always" is remembered for the project).
A server that crashes at start, hangs, or dies mid-session is reported and the session goes on;
servers stop when the session closes or the agent exits.
"""

from __future__ import annotations

import os
import select
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

async def test_editor_stdio_server_tools_reach_the_model_and_read_only_ones_run_unasked(
        tmp_path: Path, fake_anthropic: FakeAnthropic) -> None:
    fake_anthropic.script(tool_reply(ECHO, {"text": "hello"}, id="toolu_echo"), text_reply("done"))
    client = EditorClient(policy=choose("reject_once"))
    async with running_agent(tmp_path, fake_anthropic, client=client) as agent:
        sid = await new_session(agent, stdio_server())
        assert await agent.prompt(sid, "echo hello") == "end_turn"
        calls = check_tool_calls(agent, sid)

    first = fake_anthropic.stream_requests[0]
    assert [n for n in tool_names(first) if n.startswith("mcp__")] == [ECHO, WRITE, SLOW, CRASH]
    echo = next(tool for tool in first["tools"] if tool["name"] == ECHO)
    assert echo["description"].startswith("[MCP server docs] Repeat the text back.")
    assert echo["input_schema"]["required"] == ["text"]
    assert asked_ids(client) == []  # annotated read-only: no question
    assert tool_result(fake_anthropic, "toolu_echo") == ("echo: hello", False)
    echoed = calls["toolu_echo"]
    assert echoed.announced["kind"] == "read" and echoed.announced["title"] == "Echo (docs)"
    assert echoed.status == "completed" and echoed.text() == "echo: hello"


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
