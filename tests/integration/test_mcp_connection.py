"""MCP servers as tool sources, with a real MCP server process (tests/support/mcp_server.py).

Specs from the config are parsed with a clear line per unusable entry; a connection lists the
server's tools, calls them, and reports a server that fails to start, hangs or dies; the
registry tools it yields carry the server's schema, kind and read-only annotation. Tool names are
valid for the API and unique in a session, and keep their meaning in it; on Linux a stdio server
runs under the launcher, with default signal handling, and dies with it.
"""

from __future__ import annotations

import hashlib
import os
import random
import re
import select
import signal
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
import pytest

from acp_hermes_tools.mcp.connection import McpConnection, ServerGone
from acp_hermes_tools.mcp.servers import McpServers
from acp_hermes_tools.mcp.specs import McpServerSpec, merged, parse_configured, suffixed_name, tool_name
from acp_hermes_tools.mcp.stdio import LAUNCHER, server_command
from acp_hermes_tools.registry import Access, ToolCall, ToolRegistry
from tests.support.tools import RecordingGate, make_context

pytestmark = pytest.mark.anyio

SERVER = str(Path(__file__).resolve().parents[1] / "support" / "mcp_server.py")


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


API_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")  # the Messages API's rule for a tool name
LINUX = sys.platform.startswith("linux")


def test_tool_names_are_prefixed_safe_and_within_the_api_limit() -> None:
    assert tool_name("git hub", "create.issue") == "mcp__git_hub__create_issue"
    digest = hashlib.sha256(b"x.y\0whoami").hexdigest()[:8]
    assert suffixed_name("x.y", "whoami") == f"mcp__x_y__whoami_{digest}"  # stable: the same in every session
    long_one, long_other = tool_name("s" * 40, "t" * 40), tool_name("s" * 40, "t" * 39 + "u")
    assert len(long_one) == 64 and long_one != long_other  # cut names keep apart
    assert long_one == suffixed_name("s" * 40, "t" * 40)
    rng = random.Random(7)
    alphabet = "aZ09_-. /:é\u200b\ud800💥"
    for _ in range(500):
        server, tool = ("".join(rng.choices(alphabet, k=rng.randrange(0, 80))) for _ in range(2))
        assert API_NAME.match(tool_name(server, tool)) and API_NAME.match(suffixed_name(server, tool))


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


async def test_colliding_names_become_unique_and_a_tool_listed_twice_is_left_out(tmp_path: Path) -> None:
    async with connected(spec("docs", "--tools", "collide")) as servers:
        names = [tool.name for tool in servers.tools()]
        described = servers.describe()
        registry = ToolRegistry().extended(servers.tools())
        result = await registry.dispatch(ToolCall("c1", suffixed_name("docs", "a_b"), {}), make_context(tmp_path))
    assert names == ["mcp__docs__echo", "mcp__docs__write_note", "mcp__docs__slow", "mcp__docs__crash",
                     "mcp__docs__a_b", suffixed_name("docs", "a_b"), "mcp__docs__whoami"]
    assert result.text == "underscored"  # a_b, not a.b
    assert f"  - `a_b` (read-only) — offered as `{suffixed_name('docs', 'a_b')}` (`mcp__docs__a_b` is taken by " \
           "another tool): The tool named a_b." in described
    assert "  - `echo` (read-only) — left out: its server lists it twice: Repeat the text back." in described


async def test_a_tool_whose_names_are_both_taken_is_left_out_with_a_warning(caplog: pytest.LogCaptureFixture) -> None:
    async with connected(spec("docs", "--tools", "crafted", "--name", "docs")) as servers:
        names = [tool.name for tool in servers.tools()]
        described = servers.describe()
    crafted = suffixed_name("docs", "a.b")
    assert names[4:] == ["mcp__docs__a_b", crafted]  # a_b, then the tool named to take a.b's suffixed name
    assert "  - `a.b` (read-only) — left out: its name `mcp__docs__a_b` is taken by another tool: The tool named a.b." \
        in described
    assert [r.getMessage() for r in caplog.records if r.levelname == "WARNING" and "left out" in r.getMessage()] == [
        f"MCP server docs: tool 'a.b' left out: the names mcp__docs__a_b and {crafted} are taken by other tools"]


async def test_a_name_keeps_its_meaning_for_the_session_after_its_server_fails() -> None:
    servers = McpServers([spec("x.y", "--tools", "collide", "--name", "dotted"),
                          spec("x_y", "--tools", "collide", "--name", "underscored")], Path.cwd())
    async with anyio.create_task_group() as group:
        for connection in servers.connections:  # one after the other: "x.y" is ready first
            group.start_soon(connection.run)
            with anyio.fail_after(30):
                await connection.wait_settled()
        first, second = servers.connections
        whoami = suffixed_name("x_y", "whoami")
        assert {"mcp__x_y__whoami", whoami} <= {tool.name for tool in servers.tools()}
        with pytest.raises(ServerGone):
            await first.call("crash", {})
        await first.wait_settled()
        names = [tool.name for tool in servers.tools()]
        assert first.status == "failed" and second.status == "ready"
        assert whoami in names and "mcp__x_y__whoami" not in names  # never handed to the other server's tool
        assert len(names) == 7
        servers.stop()


def test_the_program_is_found_as_the_spawn_would_find_it(tmp_path: Path) -> None:
    bin_dir, work = tmp_path / "bin", tmp_path / "work"
    for directory in (bin_dir, work / "tools"):
        directory.mkdir(parents=True)
    for program in (bin_dir / "srv", work / "tools" / "local"):
        program.write_text("#!/bin/sh\n")
        program.chmod(0o755)
    command, args = server_command("srv", ["--flag"], {"PATH": str(bin_dir)}, work)
    local = server_command("tools/local", [], {"PATH": str(bin_dir)}, work)
    if not LINUX:
        assert (command, args) == ("srv", ["--flag"])
        return
    assert (command, args) == (sys.executable, ["-I", "-S", str(LAUNCHER), str(os.getpid()), str(bin_dir / "srv"),
                                                "srv", "--flag"])
    assert local[1][4:] == [str(work / "tools" / "local"), "tools/local"]
    with pytest.raises(FileNotFoundError):
        server_command("srv", [], {"PATH": str(work)}, work)


async def test_a_program_that_is_not_there_fails_with_a_reason() -> None:
    async with connected(McpServerSpec("gone", "stdio", command="/nowhere/mcp-server")) as servers:
        connection = servers.connections[0]
    assert connection.status == "failed"
    assert connection.detail == "could not start it: No such file or directory: /nowhere/mcp-server"


def _status(pid: int) -> dict[str, str]:
    lines = Path(f"/proc/{pid}/status").read_text().splitlines()
    return dict(line.split(":\t", 1) for line in lines if ":\t" in line)


def _exited(pid: int, timeout: float = 15.0) -> bool:
    try:
        fd = os.pidfd_open(pid)
    except ProcessLookupError:
        return True
    try:
        return bool(select.select([fd], [], [], timeout)[0])
    finally:
        os.close(fd)


@pytest.mark.skipif(not LINUX, reason="the launcher is Linux's")
async def test_a_stdio_server_runs_under_the_launcher_with_default_signals_and_dies_with_it(tmp_path: Path) -> None:
    pid_file = tmp_path / "server.pid"
    async with connected(spec("docs", "--pid-file", str(pid_file))) as servers:
        server = int(pid_file.read_text())
        launcher = int(_status(server)["PPid"])
        assert str(LAUNCHER).encode() in Path(f"/proc/{launcher}/cmdline").read_bytes()
        assert os.getpgid(server) == launcher  # one process group: the launcher's, the SDK's kill reaches both
        ignored = int(_status(server)["SigIgn"], 16)
        for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            assert not ignored & (1 << (signum - 1)), f"the server inherited an ignored {signum!r}"
        assert servers.connections[0].status == "ready"
        os.kill(launcher, signal.SIGKILL)
        assert await anyio.to_thread.run_sync(_exited, server)


@pytest.mark.skipif(not LINUX, reason="the launcher is Linux's")
def test_the_launcher_hands_the_server_the_signal_handling_a_plain_spawn_would() -> None:
    show = ["/bin/sh", "sh", "-c", "grep -E '^Sig(Ign|Cgt)' /proc/$$/status"]
    plain = subprocess.run(show[1:], executable=show[0], capture_output=True, text=True, check=True).stdout
    launched = subprocess.run([sys.executable, "-I", "-S", str(LAUNCHER), str(os.getpid()), *show],
                              capture_output=True, text=True, check=True).stdout
    assert launched == plain and "SigIgn:\t0000000000000000" in plain


def test_describe_names_status_target_and_tools() -> None:
    servers = McpServers([McpServerSpec("gh", "http", url="https://x/mcp", source="editor")], Path.cwd())
    assert servers.describe() == ["**gh** (http, from the editor): connecting", "  `https://x/mcp`"]
