"""Everything that reaches into the ACP SDK's private parts, in one place.

The SDK (agent-client-protocol 0.12.1, pinned) lacks a route for ``session/delete`` although the
protocol defines it, and offers no public handle on its JSON-RPC engine, whose raw requests and
batched writes the adapter needs. ``tests/unit/adapter/test_sdk_contract.py`` checks each
attribute used here against the installed SDK, so an SDK change fails there first.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from acp.router import MessageRouter, Route
from acp.schema import DeleteSessionRequest

if TYPE_CHECKING:
    from acp.agent.connection import AgentSideConnection
    from acp.connection import Connection

    from acp_hermes.adapter.wire import StdioTransport


def json_rpc_engine(conn: AgentSideConnection) -> Connection:
    """The connection's JSON-RPC engine: raw requests and notifications as plain dicts."""
    engine: Connection = conn._conn
    return engine


def transport_of(engine: Connection) -> StdioTransport:
    """The transport the engine writes to: ours (``wire.StdioTransport``), which batches writes."""
    from acp_hermes.adapter.wire import StdioTransport

    transport = engine._transport
    if not isinstance(transport, StdioTransport):  # an SDK change we must notice, not paper over
        raise TypeError(f"unexpected ACP transport type {type(transport).__name__}")
    return transport


def route_session_delete(engine: Connection, delete: Callable[[str], Awaitable[Any]]) -> None:
    """Serve ``session/delete``, which the SDK does not route (reference/acp.md B.15 #9)."""
    router = engine._handler
    if not isinstance(router, MessageRouter):  # an SDK change we must notice, not paper over
        raise TypeError(f"unexpected ACP router type {type(router).__name__}")

    async def handle(params: Any) -> Any:
        request = DeleteSessionRequest.model_validate(params)  # ValidationError → -32602
        return await delete(request.session_id)

    router.add_route(Route(method="session/delete", func=handle, kind="request"))


def observe_request(engine: Connection, method: str, observe: Callable[[Any], None]) -> None:
    """Hand ``method``'s raw params to ``observe`` before the handler runs, in the handler's own task
    (a context variable ``observe`` sets is seen by it): the SDK's models drop the fields they do not
    know, such as the unstable ``clientCapabilities.subagents`` or a prompt's ``messageId``."""
    router = engine._handler
    if not isinstance(router, MessageRouter):  # an SDK change we must notice, not paper over
        raise TypeError(f"unexpected ACP router type {type(router).__name__}")
    route = router._requests[method]
    handle = route.func
    if handle is None:
        raise TypeError(f"the SDK routes {method} to nothing")

    async def observed(params: Any) -> Any:
        observe(params if isinstance(params, dict) else {})
        return await handle(params)

    router.add_route(dataclasses.replace(route, func=observed))
