"""What makes a session a delegated task's child (``core.delegation``), as the session itself knows it."""

from __future__ import annotations

from acp_hermes.permissions.gate import SessionGrants
from acp_hermes_memory.values import value

DELEGATE_TOOL_NAME = "delegate_task"  # the tool core.delegation declares


@value
class SubagentSpec:
    """A child's depth below the top-level session (its children are one deeper), its task (its
    title), its tools, its model calls per turn and the session grants it shares with its parent."""

    depth: int
    title: str
    tool_names: frozenset[str]
    max_iterations: int
    grants: SessionGrants

    @property
    def may_delegate(self) -> bool:
        """Whether it gets a ``delegate_task`` of its own (it is above the depth limit)."""
        return DELEGATE_TOOL_NAME in self.tool_names
