"""The toolsets: the names by which a delegated child is given tools (``delegation.toolsets`` in the
config and a ``delegate_task`` call), in the order they are listed to the model and the user.

Which tools a toolset holds, each tool says itself (``Tool.toolsets``); this module only names the
sets, so the config can be checked without importing a single tool.
"""

from __future__ import annotations

TOOLSETS: tuple[str, ...] = ("file", "search", "terminal", "todo", "skills", "session_search")
DEFAULT_CHILD_TOOLSETS: tuple[str, ...] = ("file", "terminal", "search", "todo", "skills")  # a child's by default
