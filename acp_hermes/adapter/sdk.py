"""Everything that reaches into the ACP SDK's private parts, in one place.

The SDK (agent-client-protocol 0.12.1, pinned) lacks a route for ``session/delete`` although the
protocol defines it, and offers no public handle on its JSON-RPC engine, whose raw requests and
batched writes the adapter needs, nor a way to run one request through its router without writing
the answer (``handle_quietly``: what ``adapter.reception`` answered before the SDK was loaded). Its
schema module is imported lean (``import_schema_lean``). ``tests/unit/adapter/test_sdk_contract.py``
checks each attribute used here against the installed SDK, so an SDK change fails there first.

Nothing here imports the SDK at module level: ``import_schema_lean`` must run before it is loaded.
"""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from acp.connection import Connection
    from acp.interfaces import Client
    from acp.router import MessageRouter

    from acp_hermes.adapter.wire import StdioTransport

SCHEMA_MODULE = "acp.schema"
# What the SDK's models are built with when it is imported lean: what every model of its schema would
# otherwise pay for at import, yet nothing validation uses (see import_schema_lean).
LEAN_SCHEMA_CONFIG = {"use_attribute_docstrings": False, "defer_build": True}


def import_schema_lean() -> None:
    """Import the SDK (``acp``) with its ~280 schema models built lazily, each on its first use.

    The SDK's ``BaseModel`` sets ``use_attribute_docstrings``: pydantic then reads each model's
    source to turn the docstrings under its fields into descriptions, which only a JSON Schema
    export shows (~⅓ of the import). And pydantic builds every model's validator as the class is
    made, though the agent validates a few dozen of them (~¼). ``defer_build`` builds each on first
    use instead; what it validates and the errors it reports are the same
    (``tests/unit/adapter/test_sdk_contract.py`` compares them). The SDK's schema module reads
    ``pydantic.ConfigDict`` once per model while it is imported; for that while, a call made from
    that module, and from no other, gets these two settings added.

    Its ``RootModel[...]`` bases (``AgentResponse``'s union of every response, say) are made by
    pydantic, not by that module, with ``RootModel``'s own configuration: for that while it defers
    building too (~30 ms of a first prompt's wait, mostly unions the agent never validates).
    Deferring changes when a model is built, never what it accepts, so a ``RootModel`` another thread
    parametrizes meanwhile loses nothing either.
    """
    if SCHEMA_MODULE in sys.modules:
        return
    import pydantic

    original = pydantic.ConfigDict
    root_config = pydantic.RootModel.model_config

    def lean(**settings: Any) -> Any:
        if sys._getframe(1).f_globals.get("__name__") == SCHEMA_MODULE:
            settings.update(LEAN_SCHEMA_CONFIG)
        return original(**settings)

    pydantic.ConfigDict = lean  # type: ignore[assignment,misc]
    deferred = root_config.copy()
    deferred["defer_build"] = True
    pydantic.RootModel.model_config = deferred
    try:
        import acp.schema  # noqa: F401
    finally:
        pydantic.ConfigDict = original  # type: ignore[misc]
        pydantic.RootModel.model_config = root_config


def json_rpc_engine(conn: Client) -> Connection:
    """The connection's JSON-RPC engine: raw requests and notifications as plain dicts. ``conn`` is
    what the SDK hands the agent (``Agent.on_connect``): its ``AgentSideConnection``."""
    from acp.agent.connection import AgentSideConnection

    if not isinstance(conn, AgentSideConnection):  # an SDK change we must notice, not paper over
        raise TypeError(f"unexpected ACP connection type {type(conn).__name__}")
    engine: Connection = conn._conn
    return engine


def transport_of(engine: Connection) -> StdioTransport:
    """The transport the engine writes to: ours (``wire.StdioTransport``), which batches writes."""
    from acp_hermes.adapter.wire import StdioTransport

    transport = engine._transport
    if not isinstance(transport, StdioTransport):  # an SDK change we must notice, not paper over
        raise TypeError(f"unexpected ACP transport type {type(transport).__name__}")
    return transport


def _router(engine: Connection) -> MessageRouter:
    from acp.router import MessageRouter

    router = engine._handler
    if not isinstance(router, MessageRouter):  # an SDK change we must notice, not paper over
        raise TypeError(f"unexpected ACP router type {type(router).__name__}")
    return router


def route_session_delete(engine: Connection, delete: Callable[[str], Awaitable[Any]]) -> None:
    """Serve ``session/delete``, which the SDK does not route (reference/acp.md B.15 #9)."""
    from acp.router import Route
    from acp.schema import DeleteSessionRequest

    async def handle(params: Any) -> Any:
        request = DeleteSessionRequest.model_validate(params)  # ValidationError → -32602
        return await delete(request.session_id)

    _router(engine).add_route(Route(method="session/delete", func=handle, kind="request"))


def route_request(engine: Connection, method: str, handle: Callable[[dict[str, Any]], Awaitable[Any]]) -> None:
    """Serve ``method``, a draft's request the SDK does not route (``session/rewind``,
    ``session/edit_prompt``): ``handle`` gets its raw params (``{}`` for params that are no object:
    its own checks refuse them)."""
    from acp.router import Route

    async def raw(params: Any) -> Any:
        return await handle(params if isinstance(params, dict) else {})

    _router(engine).add_route(Route(method=method, func=raw, kind="request"))


def observe_request(engine: Connection, method: str, observe: Callable[[Any], None]) -> None:
    """Hand ``method``'s raw params to ``observe`` before the handler runs, in the handler's own task
    (a context variable ``observe`` sets is seen by it): the SDK's models drop the fields they do not
    know, such as the unstable ``clientCapabilities.subagents`` or a prompt's ``messageId``."""
    router = _router(engine)
    route = router._requests[method]
    handle = route.func
    if handle is None:
        raise TypeError(f"the SDK routes {method} to nothing")

    async def observed(params: Any) -> Any:
        observe(params if isinstance(params, dict) else {})
        return await handle(params)

    router.add_route(dataclasses.replace(route, func=observed))


async def handle_quietly(engine: Connection, method: str, params: Any) -> Any:
    """Run a request through the SDK's router — its model's validation, the observers above, the
    handler — and return the result, as the engine would write it, instead of writing it; its errors
    are raised."""
    from pydantic import BaseModel

    result = await _router(engine)(method, params, False)
    if isinstance(result, BaseModel):  # as Connection._execute_request serialises a handler's model
        return result.model_dump(mode="json", by_alias=True, exclude_none=True, exclude_unset=True)
    return result
