"""A session's MCP servers: started together without delaying the session, stopped with it.

Their tools join the session's registry as each server becomes ready (``tools()`` changes and
``version`` counts the changes), so a slow or broken server never holds up the others or the
session; a turn that starts while servers still connect waits a short while for them first.

**Tool names are unique in the session, and never change meaning in it.** Names are given when a
server becomes ready, first come, first served: a tool gets ``tool_name()``; when an earlier tool
already has that name (``a.b`` and ``a_b`` of one server, or the same tool of servers ``x.y`` and
``x_y``) it gets ``suffixed_name()``, the same with a stable hash suffix; when that is taken too (a
name made to collide) the tool is left out, with one warning in the log and a line in ``/mcp``, as
is a tool its server lists twice. A name once given stays taken for the session, even after its
server fails, so a name in the conversation always means the same tool. Two tools with one name
would make every request to the model fail.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Coroutine, Sequence
from pathlib import Path
from typing import Any

import anyio

from acp_hermes_tools.mcp.connection import McpConnection
from acp_hermes_tools.mcp.specs import McpServerSpec, suffixed_name, tool_name
from acp_hermes_tools.mcp.tools import registry_tool
from acp_hermes_tools.registry import Tool

log = logging.getLogger(__name__)

Spawn = Callable[[Coroutine[Any, Any, None]], None]


class McpServers:
    def __init__(self, specs: Sequence[McpServerSpec], cwd: Path,
                 on_change: Callable[[McpConnection], None] | None = None) -> None:
        self._on_change = on_change
        self._cwd = cwd
        self.connections = [McpConnection(spec, cwd, self._changed) for spec in specs]
        self.version = 0  # counts changes to the set of ready servers (and so to tools())
        self._tools: list[Tool] | None = None
        # per server: the model's name of each of its tools, in its listing's order (None: left out)
        self._names: dict[str, list[str | None]] = {}
        self._notes: dict[tuple[str, int], str] = {}  # (server, index in its listing) → renamed or left out, why
        self._taken: set[str] = set()

    def start(self, spawn: Spawn) -> None:
        for connection in self.connections:
            spawn(connection.run())

    def add(self, specs: Sequence[McpServerSpec], spawn: Spawn) -> None:
        """Start more servers beside the running ones (a project's, once its workspace is trusted); a
        name already in the session keeps its server."""
        names = {connection.name for connection in self.connections}
        added = [McpConnection(spec, self._cwd, self._changed) for spec in specs if spec.name not in names]
        self.connections += added
        for connection in added:
            spawn(connection.run())

    def drop(self, source: str) -> None:
        """Stop and forget the servers that came from ``source`` (a project's, once its workspace is no
        longer trusted); their tools' names stay taken for the session."""
        for connection in self.connections:
            if connection.spec.source == source:
                connection.stop()
        self.connections = [connection for connection in self.connections if connection.spec.source != source]
        self._tools = None
        self.version += 1

    def tools(self) -> list[Tool]:
        """The registry tools of every ready server, in the servers' order (stable for the prompt cache)."""
        if self._tools is None:
            self._tools = [
                registry_tool(connection, remote, name)
                for connection in self.connections if connection.status == "ready"
                for remote, name in zip(connection.tools, self._names.get(connection.name, ()), strict=False)
                if name is not None
            ]
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
            for index, remote in enumerate(connection.tools if connection.status == "ready" else ()):
                marker = " (read-only)" if remote.read_only else ""
                summary = remote.description.splitlines()[0] if remote.description else ""
                note = self._notes.get((spec.name, index))
                lines.append(f"  - `{remote.name}`{marker}" + (f" — {note}" if note else "")
                             + (f": {summary}" if summary else ""))
        return lines

    def _changed(self, connection: McpConnection) -> None:
        if connection.status == "ready" and connection.name not in self._names:
            self._name_tools(connection)
        self._tools = None
        self.version += 1
        if self._on_change is not None:
            self._on_change(connection)

    def _name_tools(self, connection: McpConnection) -> None:
        server = connection.name
        names: list[str | None] = []
        listed: set[str] = set()
        for index, remote in enumerate(connection.tools):
            if remote.name in listed:  # a call names the tool: one of them is all the server can run
                names.append(None)
                log.warning("MCP server %s lists tool %r twice; the second is left out", server, remote.name)
                self._notes[(server, index)] = "left out: its server lists it twice"
                continue
            listed.add(remote.name)
            first, second = tool_name(server, remote.name), suffixed_name(server, remote.name)
            name = next((candidate for candidate in (first, second) if candidate not in self._taken), None)
            names.append(name)
            if name is None:
                log.warning("MCP server %s: tool %r left out: the names %s and %s are taken by other tools",
                            server, remote.name, first, second)
                self._notes[(server, index)] = f"left out: its name `{first}` is taken by another tool"
                continue
            self._taken.add(name)
            if name != first:
                log.info("MCP server %s: tool %r is %s (%s is taken)", server, remote.name, name, first)
                self._notes[(server, index)] = f"offered as `{name}` (`{first}` is taken by another tool)"
        self._names[server] = names
