"""An MCP server's tools as registry tools: named under the server, asked for like commands.

Each call goes through the permission gate (``ToolContext.authorize_external``): a tool its
server annotates read-only runs without a question; any other asks in ``default`` mode, where
"always" is remembered for that server and tool in this project. Its arguments are checked against
the server's schema by ``tools.mcp.schema`` (bounded: a server's regex cannot freeze the agent).
Results come back as text for the model; images and binary resources are named rather than inlined.
The model's name for each tool is chosen by ``tools.mcp.servers`` (unique in the session).
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from acp_hermes_tools.contracts import TextDisplay
from acp_hermes_tools.mcp.connection import McpConnection, RemoteTool, ServerGone
from acp_hermes_tools.mcp.schema import SchemaCheck
from acp_hermes_tools.registry import Access, Presentation, Tool, ToolError, ToolResult

if TYPE_CHECKING:
    from mcp_types import CallToolResult

    from acp_hermes_tools.context import ToolContext, ToolScope

DESCRIPTION_LIMIT = 2_000


def registry_tool(connection: McpConnection, remote: RemoteTool, name: str) -> Tool:
    """``remote`` of ``connection`` as a registry tool the model knows as ``name``."""
    server = connection.name
    shown = remote.title or remote.name

    async def handler(arguments: dict[str, Any], ctx: ToolContext) -> ToolResult:
        await ctx.authorize_external(server, remote.name, arguments, read_only=remote.read_only)
        try:
            result = await ctx.call_external(server, remote.name, lambda: connection.call(remote.name, arguments))
        except TimeoutError:
            raise ToolError(f"{remote.name} on MCP server {server} did not answer within "
                            f"{connection.spec.call_timeout:g} s; the call was abandoned.") from None
        except ServerGone as gone:
            raise ToolError(f"{gone}. Its tools are unavailable; carry on without them.") from None
        return _result(result)

    def present(arguments: dict[str, Any], scope: ToolScope) -> Presentation:
        return Presentation(f"{shown} ({server})")

    description = f"[MCP server {server}] {remote.description}".strip()
    return Tool(
        name=name,
        description=description[:DESCRIPTION_LIMIT],
        schema=remote.input_schema,
        handler=handler,
        kind="read" if remote.read_only else "other",
        access=Access.READ if remote.read_only else Access.EXECUTE,
        parallel_safe=remote.read_only,
        present=present,
        validate=SchemaCheck(remote.input_schema).problem,
    )


def _result(result: CallToolResult) -> ToolResult:
    parts = [_content_text(block) for block in result.content]
    text = "\n".join(part for part in parts if part)
    if not text and result.structured_content is not None:
        text = json.dumps(result.structured_content, ensure_ascii=False, indent=2)
    text = text or "(the tool returned nothing)"
    return ToolResult(text, ok=not result.is_error, display=(TextDisplay(text),))


def _content_text(block: Any) -> str:
    kind = getattr(block, "type", "")
    if kind == "text":
        return str(block.text)
    if kind == "resource":
        resource = block.resource
        text = getattr(resource, "text", None)
        if text is not None:
            return str(text)
        return f"[binary resource {resource.uri} ({resource.mime_type or 'unknown type'})]"
    if kind == "resource_link":
        return f"[resource {block.uri}" + (f": {block.description}]" if block.description else "]")
    if kind in ("image", "audio"):
        return f"[{kind} ({block.mime_type}) returned by the tool; not shown to the model]"
    return f"[{kind or 'unknown'} content]"
