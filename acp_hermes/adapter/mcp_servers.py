"""ACP's ``mcpServers`` (session/new, load, resume, fork) as the tools layer's server specs."""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from acp_hermes_tools.mcp.specs import McpServerSpec, Transport

log = logging.getLogger(__name__)

# What initialize advertises: stdio is every agent's duty; both remote transports are tested.
MCP_CAPABILITIES = {"http": True, "sse": True}


def specs_from_acp(servers: Iterable[Any] | None) -> list[McpServerSpec]:
    """The servers an editor passed, as specs; a kind acp-hermes cannot connect is logged and left out."""
    from acp_hermes_tools.mcp.specs import McpServerSpec  # a session's business: kept off initialize

    specs: list[McpServerSpec] = []
    for server in servers or ():
        name = str(getattr(server, "name", "") or "").strip()
        kind = getattr(server, "type", None) or ("stdio" if getattr(server, "command", None) else None)
        if not name or (kind != "stdio" and kind != "http" and kind != "sse"):
            log.warning("MCP server %r of type %r from the editor is not supported; skipped", name, kind)
            continue
        if kind == "stdio":
            env = {str(item.name): str(item.value) for item in getattr(server, "env", None) or ()}
            specs.append(McpServerSpec(name, "stdio", command=str(server.command),
                                       args=tuple(str(arg) for arg in server.args or ()), env=env, source="editor"))
        else:
            headers = {str(item.name): str(item.value) for item in getattr(server, "headers", None) or ()}
            transport: Transport = "sse" if kind == "sse" else "http"
            specs.append(McpServerSpec(name, transport, url=str(server.url), headers=headers, source="editor"))
    return specs
