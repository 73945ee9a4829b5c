"""A session's MCP servers: started together without delaying the session, stopped with it.

Their tools join the session's registry as each server becomes ready (``tools()`` changes and
``version`` counts the changes), so a slow or broken server never holds up the others or the
session; a turn that starts while servers still connect waits a short while for them first.
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine, Sequence
from pathlib import Path
from typing import Any

import anyio

from tools.mcp.connection import McpConnection
from tools.mcp.specs import McpServerSpec
from tools.mcp.tools import registry_tools
from tools.registry import Tool

Spawn = Callable[[Coroutine[Any, Any, None]], None]


class McpServers:
    def __init__(self, specs: Sequence[McpServerSpec], cwd: Path,
                 on_change: Callable[[McpConnection], None] | None = None) -> None:
        self._on_change = on_change
        self.connections = [McpConnection(spec, cwd, self._changed) for spec in specs]
        self.version = 0  # counts changes to the set of ready servers (and so to tools())
        self._tools: list[Tool] | None = None

    def start(self, spawn: Spawn) -> None:
        for connection in self.connections:
            spawn(connection.run())

    def tools(self) -> list[Tool]:
        """The registry tools of every ready server, in the servers' order (stable for the prompt cache)."""
        if self._tools is None:
            self._tools = [tool for connection in self.connections for tool in registry_tools(connection)]
        return self._tools

    @property
    def connecting(self) -> bool:
        return any(connection.status == "connecting" for connection in self.connections)

    async def wait_connecting(self, limit: float) -> None:
        """Until every server is ready or failed, or ``limit`` seconds have passed."""
        with anyio.move_on_after(limit):
            for connection in self.connections:
                await connection.wait_settled()

    def stop(self) -> None:
        for connection in self.connections:
            connection.stop()

    def describe(self) -> list[str]:
        """One block per server for people (``/mcp``): status, where it runs, its tools."""
        lines: list[str] = []
        for connection in self.connections:
            spec = connection.spec
            status = connection.status + (f" — {connection.detail}" if connection.detail else "")
            lines.append(f"**{spec.name}** ({spec.transport}, from the {spec.source}): {status}")
            lines.append(f"  `{spec.target}`")
            for remote in connection.tools if connection.status == "ready" else ():
                marker = " (read-only)" if remote.read_only else ""
                summary = remote.description.splitlines()[0] if remote.description else ""
                lines.append(f"  - `{remote.name}`{marker}" + (f": {summary}" if summary else ""))
        return lines

    def _changed(self, connection: McpConnection) -> None:
        self._tools = None
        self.version += 1
        if self._on_change is not None:
            self._on_change(connection)
