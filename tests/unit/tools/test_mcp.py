"""MCP servers as tool sources, with a real MCP server process (tests/support/mcp_server.py).

Specs from the config are parsed with a clear line per unusable entry; a connection lists the
server's tools, calls them, and reports a server that fails to start, hangs or dies; the
registry tools it yields carry the server's schema, kind and read-only annotation.
"""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
import pytest

from tests.support.tools import RecordingGate, make_context
from tools.mcp.connection import McpConnection, ServerGone
from tools.mcp.servers import McpServers
from tools.mcp.specs import McpServerSpec, merged, parse_configured, tool_name
from tools.registry import Access, ToolCall, ToolRegistry

pytestmark = pytest.mark.anyio

SERVER = str(Path(__file__).resolve().parents[2] / "support" / "mcp_server.py")


def spec(name: str = "docs", *args: str, **kwargs: float) -> McpServerSpec:
    return McpServerSpec(name, "stdio", command=sys.executable, args=(SERVER, *args), **kwargs)  # type: ignore[arg-type]


# --- specs --------------------------------------------------------------------------------------

def test_config_entries_become_specs_and_bad_ones_a_line_each() -> None:
    specs, problems = parse_configured({
        "local": {"command": "npx", "args": ["-y", "srv"], "env": {"TOKEN": "x"}, "timeout": 5},
        "remote": {"url": "https://example.com/mcp", "headers": {"Authorization": "Bearer t"}, "transport": "sse"},
        "off": {"command": "x", "enabled": False},
        "nothing": {},
        "badurl": {"url": "ftp://example.com"},
        "badtransport": {"url": "https://example.com", "transport": "websocket"},
        "badtimeout": {"command": "x", "timeout": -1},
        "badargs": {"command": "x", "args": "not a list"},
        "---": {"command": "x"},
        "scalar": "npx srv",
    })
    assert [(s.name, s.transport, s.target) for s in specs] == [
        ("local", "stdio", "npx -y srv"), ("remote", "sse", "https://example.com/mcp")]
    assert specs[0].env == {"TOKEN": "x"} and specs[0].call_timeout == 5.0 and specs[0].connect_timeout == 30.0
    assert specs[1].headers == {"Authorization": "Bearer t"}
    assert [p.split(":")[0] for p in problems] == [
        "mcp_servers.nothing", "mcp_servers.badurl", "mcp_servers.badtransport", "mcp_servers.badtimeout",
        "mcp_servers.badargs", "mcp_servers.---", "mcp_servers.scalar"]
    assert "positive number of seconds" in problems[3]


def test_tool_names_are_prefixed_safe_and_within_the_api_limit() -> None:
    assert tool_name("git hub", "create.issue") == "mcp__git_hub__create_issue"
    assert len(tool_name("s" * 40, "t" * 40)) == 64


def test_the_editor_wins_a_name_the_config_also_uses() -> None:
    configured = [McpServerSpec("a", "stdio", command="x"), McpServerSpec("b", "stdio", command="y")]
    editor = [McpServerSpec("b", "http", url="http://h/mcp", source="editor")]
    assert [(s.name, s.transport) for s in merged(configured, editor)] == [("a", "stdio"), ("b", "http")]


# --- a real server ------------------------------------------------------------------------------

@asynccontextmanager
async def connected(*specs: McpServerSpec) -> AsyncIterator[McpServers]:
    changes: list[tuple[str, str]] = []
    servers = McpServers(specs, Path.cwd(), on_change=lambda c: changes.append((c.name, c.status)))
    async with anyio.create_task_group() as group:
        servers.start(lambda coroutine: group.start_soon(lambda: coroutine))
        with anyio.fail_after(30):
            await servers.wait_connecting(30)
        yield servers
        servers.stop()


async def test_a_connection_lists_and_calls_the_tools() -> None:
    async with connected(spec()) as servers:
        connection = servers.connections[0]
        assert connection.status == "ready"
        assert [t.name for t in connection.tools] == ["echo", "write_note", "slow", "crash"]
        assert [t.read_only for t in connection.tools] == [True, False, False, False]
        result = await connection.call("echo", {"text": "hi"})
        assert result.content[0].text == "echo: hi" and not result.is_error
    assert connection.status == "stopped"


async def test_registry_tools_carry_schema_kind_and_access_and_run_through_the_gate(tmp_path: Path) -> None:
    async with connected(spec()) as servers:
        registry = ToolRegistry().extended(servers.tools())
        echo, write = registry.get("mcp__docs__echo"), registry.get("mcp__docs__write_note")
        assert echo is not None and write is not None
        assert (echo.kind, echo.access, echo.parallel_safe) == ("read", Access.READ, True)
        assert (write.kind, write.access) == ("other", Access.EXECUTE)
        assert write.schema["required"] == ["path", "text"]

        gate = RecordingGate()
        target = tmp_path / "n.txt"
        ctx = make_context(tmp_path, gate=gate)
        result = await registry.dispatch(ToolCall("c1", write.name, {"path": str(target), "text": "x"}), ctx)
        assert result.ok and target.read_text() == "x"
        assert gate.external == [("docs", "write_note", {"path": str(target), "text": "x"}, False)]

        invalid = await registry.dispatch(ToolCall("c2", echo.name, {}), ctx)  # the server's schema applies
        assert not invalid.ok and "'text' is a required property" in invalid.text

        refused = RecordingGate(allow=False)
        result = await registry.dispatch(ToolCall("c3", write.name, {"path": str(tmp_path / "no"), "text": "x"}),
                                         make_context(tmp_path, gate=refused))
        assert not result.ok and not (tmp_path / "no").exists()


async def test_a_server_that_exits_at_start_fails_with_a_reason() -> None:
    async with connected(spec("bad", "--start", "crash")) as servers:
        connection = servers.connections[0]
        assert connection.status == "failed" and "before it was ready" in connection.detail
        assert servers.tools() == []
        with pytest.raises(ServerGone, match="MCP server bad is failed"):
            await connection.call("echo", {"text": "x"})


async def test_a_server_that_hangs_fails_after_its_connect_timeout() -> None:
    async with connected(spec("stuck", "--start", "hang", connect_timeout=0.5)) as servers:
        connection = servers.connections[0]
    assert connection.status == "failed" and connection.detail == "did not answer within 0.5 s"


async def test_a_server_that_dies_is_noticed_and_its_tools_leave() -> None:
    async with connected(spec()) as servers:
        connection = servers.connections[0]
        version = servers.version
        with pytest.raises(ServerGone, match="went away"):
            await connection.call("crash", {})
        await connection.wait_settled()
        assert connection.status == "failed" and "closed the connection" in connection.detail
        assert servers.tools() == [] and servers.version > version


async def test_a_slow_call_times_out() -> None:
    async with connected(spec(call_timeout=0.3)) as servers:
        with pytest.raises(TimeoutError):
            await servers.connections[0].call("slow", {})
        assert servers.connections[0].status == "ready"  # the server itself is fine


async def test_stop_before_the_connection_starts_ends_it_quietly() -> None:
    connection = McpConnection(spec(), Path.cwd(), lambda c: None)
    connection.stop()
    await connection.run()
    assert connection.status == "stopped"


def test_describe_names_status_target_and_tools() -> None:
    servers = McpServers([McpServerSpec("gh", "http", url="https://x/mcp", source="editor")], Path.cwd())
    assert servers.describe() == ["**gh** (http, from the editor): connecting", "  `https://x/mcp`"]
