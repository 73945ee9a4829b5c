"""A real MCP server for the tests, built with the official ``mcp`` SDK; run it as a program.

    python -m tests.support.mcp_server [--transport stdio|http|sse] [--start crash|hang]

Tools: ``echo`` (annotated read-only), ``write_note`` (writes a file: not read-only), ``slow``
(waits until cancelled, for cancel and timeout tests) and ``crash`` (the process exits mid-call).
``--start crash`` exits before answering anything; ``--start hang`` never answers. Over http/sse it
listens on 127.0.0.1 on a port the OS picks and prints ``PORT <n>`` on stdout once it accepts
connections, so a test waits for that line instead of sleeping.
"""

from __future__ import annotations

import argparse
import os
import socket
import sys
import threading
import time
from pathlib import Path


def build_server(name: str):
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

    return server


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
    parser.add_argument("--start", choices=("crash", "hang"))
    parser.add_argument("--name", default="testsrv")
    parser.add_argument("--pid-file", help="write this process's pid here (orphan checks)")
    args = parser.parse_args()
    if args.pid_file:
        Path(args.pid_file).write_text(str(os.getpid()), encoding="utf-8")
    if args.start == "crash":
        sys.stderr.write("test server: crashing at start as asked\n")
        sys.exit(2)
    if args.start == "hang":
        threading.Event().wait()  # never answers; ends when killed or when stdin closes? no: only when killed
        time.sleep(0)
    server = build_server(args.name)
    if args.transport == "stdio":
        server.run("stdio")
    else:
        _serve_http(server, args.transport)


if __name__ == "__main__":
    main()
