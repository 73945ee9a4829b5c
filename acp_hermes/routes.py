"""Routes the ACP SDK 0.12.1 lacks although the protocol defines them (``session/delete``).

Added to the SDK's router through its private handler attribute; the SDK version is pinned
so this stays valid (reference/acp.md B.15 #9).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from acp.router import MessageRouter, Route
from acp.schema import DeleteSessionRequest

if TYPE_CHECKING:
    from acp.connection import Connection

    from acp_hermes.server import HermesAgent


def install_extra_routes(connection: Connection, agent: HermesAgent) -> None:
    router = connection._handler
    if not isinstance(router, MessageRouter):  # an SDK change we must notice, not paper over
        raise TypeError(f"unexpected ACP router type {type(router).__name__}")

    async def delete(params: Any) -> Any:
        request = DeleteSessionRequest.model_validate(params)  # ValidationError → -32602
        return await agent.delete_session(request.session_id)

    router.add_route(Route(method="session/delete", func=delete, kind="request"))
