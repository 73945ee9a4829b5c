"""A real MCP server for the tests, built with the official ``mcp`` SDK; run it as a program.

    python -m tests.support.mcp_server [--transport stdio|http|sse] [--start crash|hang|ignore-term]
                                       [--tools collide|crafted|regex] [--pid-file PATH] [--child-pid-file PATH]

Tools: ``echo`` (annotated read-only), ``write_note`` (writes a file: not read-only), ``slow``
(waits until cancelled, for cancel and timeout tests) and ``crash`` (the process exits mid-call).
``--start crash`` exits before answering anything; ``--start hang`` never answers;
``--start ignore-term`` serves normally but ignores SIGTERM and does not exit when its stdin closes
(only SIGKILL ends it); ``--child-pid-file PATH`` starts a child process of the same kind (in the
server's process group) and writes its pid there. ``--tools collide`` adds two tools whose names
only differ in a character that is not allowed in a model's tool name (``a.b`` and ``a_b``),
``whoami`` (answers the ``--name``), and lists ``echo`` twice; ``--tools crafted`` adds ``a_b``, a tool
named to take the suffixed name of ``a.b``, then ``a.b``; ``--tools regex`` adds read-only
tools whose input schemas carry a catastrophically backtracking ``pattern``: ``match`` (also in
``patternProperties``) and ``lookahead`` (a lookahead, which RE2 cannot compile). Over http/sse it
listens on 127.0.0.1 on a port the OS picks and prints ``PORT <n>`` on stdout once it accepts
connections, so a test waits for that line instead of sleeping.
"""

from __future__ import annotations

import argparse
import os
import signal
import socket
import subprocess
import sys
import threading
from pathlib import Path

HOSTILE_PATTERN = "^(a+)+$"  # exponential backtracking on "aaaa…a!" in a backtracking engine
LOOKAHEAD_PATTERN = "^(?=a)(a+)+$"  # the same, with a lookahead RE2 refuses
IGNORING_CHILD = "import signal, threading; signal.signal(signal.SIGTERM, signal.SIG_IGN); threading.Event().wait()"


def build_server(name: str, tools: str | None = None):
    import anyio
    from mcp.server.mcpserver import MCPServer
    from mcp_types import ToolAnnotations

    server = MCPServer(name)

    @server.tool(annotations=ToolAnnotations(read_only_hint=True, title="Echo"))
    def echo(text: str) -> str:
        """Repeat the text back."""
        return f"echo: {text}"

    @server.tool()
    def write_note(path: str, text: str) -> str:
        """Write text to a file (a side effect: asks for permission)."""
        Path(path).write_text(text, encoding="utf-8")
        return f"wrote {len(text)} characters to {path}"

    @server.tool()
    async def slow(seconds: float = 3600) -> str:
        """Wait (for cancel and timeout tests)."""
        await anyio.sleep(seconds)
        return "done waiting"

    @server.tool()
    def crash() -> str:
        """Exit the server process in the middle of the call."""
        os._exit(3)

    if tools == "collide":
        _add_colliding_tools(server, name)
    if tools == "crafted":
        _add_crafted_tools(server, name)
    if tools == "regex":
        _add_regex_tools(server)
    return server


def _add_colliding_tools(server, name: str) -> None:
    """``a.b`` and ``a_b``, ``whoami`` (answers the server's ``--name``), and ``echo`` listed twice."""
    from mcp_types import ToolAnnotations

    read_only = ToolAnnotations(read_only_hint=True)
    server.add_tool(lambda: "dotted", name="a.b", description="The tool named a.b.", annotations=read_only)
    server.add_tool(lambda: "underscored", name="a_b", description="The tool named a_b.", annotations=read_only)
    server.add_tool(lambda: name, name="whoami", description="Say which server this is.", annotations=read_only)
    listed = server.list_tools

    async def list_tools_with_echo_twice():
        tools = await listed()
        return [*tools, next(tool for tool in tools if tool.name == "echo")]

    server.list_tools = list_tools_with_echo_twice


def _add_crafted_tools(server, name: str) -> None:
    """``a_b``, then a tool named to take the suffixed name ``a.b`` would get, then ``a.b`` (``name`` must be
    the server's name in the agent: the suffix hashes it)."""
    import hashlib

    from mcp_types import ToolAnnotations

    read_only = ToolAnnotations(read_only_hint=True)
    digest = hashlib.sha256(f"{name}\0a.b".encode()).hexdigest()[:8]
    for tool in ("a_b", f"a.b_{digest}", "a.b"):
        server.add_tool(lambda tool=tool: tool, name=tool, description=f"The tool named {tool}.", annotations=read_only)


def _add_regex_tools(server) -> None:
    """Tools whose declared schemas would freeze a backtracking validator (the server itself never checks)."""
    from mcp_types import ToolAnnotations

    read_only = ToolAnnotations(read_only_hint=True)

    def match(text: str, tags: dict[str, str] | None = None) -> str:
        return f"matched: {text}"

    def lookahead(text: str) -> str:
        return f"looked ahead: {text}"

    server.add_tool(match, name="match", description="Match a hostile pattern.", annotations=read_only)
    server.add_tool(lookahead, name="lookahead", description="Match with a lookahead.", annotations=read_only)
    manager = server._tool_manager  # the declared schemas, as tools/list sends them
    schema = manager.get_tool("match").parameters
    schema["properties"]["text"]["pattern"] = HOSTILE_PATTERN
    schema["properties"]["tags"] = {"type": "object", "patternProperties": {HOSTILE_PATTERN: {"type": "string"}},
                                    "additionalProperties": False}
    manager.get_tool("lookahead").parameters["properties"]["text"]["pattern"] = LOOKAHEAD_PATTERN


def _serve_http(server, transport: str) -> None:
    import uvicorn

    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", 0))
    listener.listen(64)
    app = server.sse_app() if transport == "sse" else server.streamable_http_app()
    config = uvicorn.Config(app, log_level="warning")
    print(f"PORT {listener.getsockname()[1]}", flush=True)  # connections queue on the listening socket
    uvicorn.Server(config).run(sockets=[listener])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--transport", choices=("stdio", "http", "sse"), default="stdio")
    parser.add_argument("--start", choices=("crash", "hang", "ignore-term"))
    parser.add_argument("--tools", choices=("collide", "crafted", "regex"))
    parser.add_argument("--name", default="testsrv")
    parser.add_argument("--pid-file", help="write this process's pid here (orphan checks)")
    parser.add_argument("--child-pid-file", help="start a child that ignores SIGTERM; write its pid here")
    args = parser.parse_args()
    if args.start == "ignore-term":
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    if args.child_pid_file:
        child = subprocess.Popen([sys.executable, "-c", IGNORING_CHILD], stdin=subprocess.DEVNULL,
                                 stdout=subprocess.DEVNULL)
        Path(args.child_pid_file).write_text(str(child.pid), encoding="utf-8")
    if args.pid_file:  # written after the set-up: a test that reads it sees the server as it will behave
        Path(args.pid_file).write_text(str(os.getpid()), encoding="utf-8")
    if args.start == "crash":
        sys.stderr.write("test server: crashing at start as asked\n")
        sys.exit(2)
    if args.start == "hang":
        threading.Event().wait()  # never answers; only a signal ends it
    server = build_server(args.name, args.tools)
    if args.transport == "stdio":
        server.run("stdio")
    else:
        _serve_http(server, args.transport)
    if args.start == "ignore-term":
        sys.stderr.write("test server: stdin closed; staying alive as asked\n")
        threading.Event().wait()  # SIGTERM is ignored: only SIGKILL ends it


if __name__ == "__main__":
    main()
