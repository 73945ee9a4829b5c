"""The floor for bench/startup.py: the least an ACP agent on the official Python SDK can do.

It answers ``initialize`` and ``session/new`` through ``acp.run_agent`` (agent-client-protocol
0.12.1, the SDK acp-hermes is built on) and nothing else, so its start-up time and memory are
what every agent on this SDK pays before doing any work of its own.

    .venv/bin/python bench/bare_agent.py     # serves ACP on stdin/stdout until stdin closes
"""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

from acp import PROTOCOL_VERSION, InitializeResponse, NewSessionResponse, run_agent
from acp.schema import AgentCapabilities, Implementation


class BareAgent:
    """Duck-typed agent: every method it does not define answers -32601."""

    def on_connect(self, conn: Any) -> None:
        self.conn = conn

    async def initialize(self, protocol_version: int, client_capabilities: Any = None, client_info: Any = None,
                         **kwargs: Any) -> InitializeResponse:
        return InitializeResponse(
            protocol_version=min(protocol_version, PROTOCOL_VERSION),
            agent_capabilities=AgentCapabilities(),
            agent_info=Implementation(name="bare-agent", version="0.0.0"),
        )

    async def new_session(self, cwd: str, mcp_servers: list[Any] | None = None, **kwargs: Any) -> NewSessionResponse:
        return NewSessionResponse(session_id=str(uuid.uuid4()))


if __name__ == "__main__":
    asyncio.run(run_agent(BareAgent(), use_unstable_protocol=True))
