"""The SDK's private parts that ``adapter/sdk.py`` relies on are still where they were.

If the ACP SDK is upgraded, these fail first and say which attribute moved, instead of the
server failing at run time.
"""

from __future__ import annotations

import asyncio
from importlib.metadata import version
from pathlib import Path
from typing import Any

import pytest
from acp.agent.connection import AgentSideConnection
from acp.connection import Connection
from acp.router import MessageRouter

from acp_hermes.adapter.sdk import json_rpc_engine, transport_of
from acp_hermes.adapter.server import HermesAgent
from acp_hermes.adapter.wire import StdioTransport
from acp_hermes.config import Paths, Settings

pytestmark = pytest.mark.anyio


class _Sink:
    def write(self, data: bytes) -> None:
        return None

    async def drain(self) -> None:
        return None

    def close(self) -> None:
        return None


def test_the_sdk_is_the_version_these_attributes_were_checked_against() -> None:
    assert version("agent-client-protocol") == "0.12.1", "re-check acp_hermes/adapter/sdk.py against the new SDK"


async def test_engine_transport_and_router_are_reachable(tmp_path: Path) -> None:
    transport = StdioTransport(asyncio.StreamReader(), _Sink())
    agent = HermesAgent(Paths(tmp_path), Settings())
    connection = AgentSideConnection(agent, transport, listening=False, use_unstable_protocol=True)  # type: ignore[arg-type]
    try:
        engine = json_rpc_engine(connection)
        assert isinstance(engine, Connection)
        assert transport_of(engine) is transport
        router: Any = engine._handler
        assert isinstance(router, MessageRouter)
        assert "session/delete" in router._requests  # added by on_connect through route_session_delete
        assert {"session/new", "session/load", "session/resume", "session/fork"} <= set(router._requests)
    finally:
        await connection.close()
        await agent.shutdown()


async def test_a_foreign_transport_is_refused_loudly(tmp_path: Path) -> None:
    class Foreign:  # any transport but ours: batched replay writes need StdioTransport
        async def send(self, message: Any) -> None: ...
        async def receive(self) -> Any: ...
        async def close(self) -> None: ...

    connection = AgentSideConnection(HermesAgent(Paths(tmp_path), Settings()), Foreign(), listening=False)  # type: ignore[arg-type]
    try:
        with pytest.raises(TypeError, match="unexpected ACP transport"):
            transport_of(json_rpc_engine(connection))
    finally:
        await connection.close()
