"""Tools the agent can call: the registry and one module per tool family."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tools.registry import Tool


def core_tools() -> list[Tool]:
    """Every tool an ACP session offers, in the stable order the model sees them.

    Imported here rather than at module level so start-up does not pay for them.
    """
    from tools.files import FILE_TOOLS
    from tools.memory import MEMORY_TOOL
    from tools.terminal import TERMINAL_TOOL
    from tools.todo import TODO_TOOL

    return [*FILE_TOOLS, TERMINAL_TOOL, TODO_TOOL, MEMORY_TOOL]
