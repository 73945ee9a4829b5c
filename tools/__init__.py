"""Tools the agent can call: the registry, one module per tool family, and here the manifest: every
tool of the agent's own, each listed once, in the order the model sees them.

A tool declares itself in its own module: its schema, its handler and its traits (``registry.Tool``:
its guidance in the system prompt, the arguments that name paths, its toolsets, whether a delegated
child may have it, whether the learning loop's review and the memory flush before compaction may use
it). Nothing else in the code names it: the system prompt, the hints, a child's toolsets, the review
and the compactor read its traits, from here or from the session's registry, which is built from
here. Adding a tool is its module, its line below, its test and its line in the docs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from acp_hermes_tools.registry import Tool


def core_tools() -> tuple[Tool, ...]:
    """Every tool an ACP session offers, in the stable order the model sees them.

    The tool modules are imported here, when first asked for (~40 ms), never on the way to answering
    ``initialize`` or ``session/new``.
    """
    from acp_hermes_tools.clarify import CLARIFY_TOOL
    from acp_hermes_tools.files import FILE_TOOLS
    from acp_hermes_tools.memory import MEMORY_TOOL
    from acp_hermes_tools.process import PROCESS_TOOL
    from acp_hermes_tools.session_search import SESSION_SEARCH_TOOL
    from acp_hermes_tools.skills import SKILL_TOOLS
    from acp_hermes_tools.terminal import TERMINAL_TOOL
    from acp_hermes_tools.todo import TODO_TOOL

    return (*FILE_TOOLS, TERMINAL_TOOL, PROCESS_TOOL, TODO_TOOL, MEMORY_TOOL, SESSION_SEARCH_TOOL, *SKILL_TOOLS,
            CLARIFY_TOOL)


def declared(name: str) -> Tool | None:
    """The tool of the manifest called ``name``, or None (a tool from outside: an MCP server's, a memory
    provider's, or ``delegate_task``, which the core declares)."""
    return next((tool for tool in core_tools() if tool.name == name), None)
