"""Tools the agent can call: the registry and one module per tool family."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from acp_hermes_tools.registry import Tool


# The names of core_tools(), in order, without importing the tool modules (~40 ms): a new
# session's system prompt needs only the names, and session/new must answer fast.
CORE_TOOL_NAMES: tuple[str, ...] = (
    "read_file",
    "write_file",
    "patch",
    "search_files",
    "terminal",
    "process",
    "todo",
    "memory",
    "session_search",
    "skills_list",
    "skill_view",
    "skill_manage",
    "clarify",
)


def core_tools() -> list[Tool]:
    """Every tool an ACP session offers, in the stable order the model sees them.

    Imported here rather than at module level so start-up does not pay for them.
    """
    from acp_hermes_tools.clarify import CLARIFY_TOOL
    from acp_hermes_tools.files import FILE_TOOLS
    from acp_hermes_tools.memory import MEMORY_TOOL
    from acp_hermes_tools.process import PROCESS_TOOL
    from acp_hermes_tools.session_search import SESSION_SEARCH_TOOL
    from acp_hermes_tools.skills import SKILL_TOOLS
    from acp_hermes_tools.terminal import TERMINAL_TOOL
    from acp_hermes_tools.todo import TODO_TOOL

    tools = [*FILE_TOOLS, TERMINAL_TOOL, PROCESS_TOOL, TODO_TOOL, MEMORY_TOOL, SESSION_SEARCH_TOOL, *SKILL_TOOLS,
             CLARIFY_TOOL]
    names = tuple(tool.name for tool in tools)
    if names != CORE_TOOL_NAMES:
        raise RuntimeError(f"CORE_TOOL_NAMES {CORE_TOOL_NAMES} is out of step with core_tools() {names}")
    return tools
