"""What makes a session a delegated task's child (``core.delegation``), as the session itself knows it."""

from __future__ import annotations

from acp_hermes.permissions.gate import SessionGrants
from acp_hermes_memory.values import value

DELEGATE_TOOL_NAME = "delegate_task"


@value
class SubagentSpec:
    """A child's depth below the top-level session (its children are one deeper), its task (its
    title), its tools, its model calls per turn and the session grants it shares with its parent."""

    depth: int
    title: str
    tool_names: frozenset[str]
    max_iterations: int
    grants: SessionGrants
