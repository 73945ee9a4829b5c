"""The reception's checks are at least as strict as the SDK's models: every ``initialize`` and
``session/new`` it would answer, the SDK accepts and reads the same way (what the handlers answer
equals what the reception sends). Checked over every combination of many valid, odd and invalid
field values, against the installed SDK and the real handlers."""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from acp import RequestError
from acp.agent.connection import AgentSideConnection
from acp.schema import NewSessionRequest
from pydantic import ValidationError

from acp_hermes.adapter.handshake import initialize_result
from acp_hermes.adapter.reception import terminal_auth_of, workspace_of
from acp_hermes.adapter.sdk import handle_quietly, json_rpc_engine
from acp_hermes.adapter.server import HermesAgent
from acp_hermes.adapter.wire import StdioTransport
from acp_hermes.config import Paths, Settings
from acp_hermes.core.runtime import Runtime

MISSING = object()  # the field is left out


def _params(fields: dict[str, list[Any]]) -> Iterator[Any]:
    for values in itertools.product(*fields.values()):
        yield {name: value for name, value in zip(fields, values, strict=True) if value is not MISSING}


AUTHS = [MISSING, None, True, {}, {"terminal": True}, {"terminal": False}, {"terminal": None}, {"terminal": "yes"},
         {"terminal": 1}, {"terminal": True, "_meta": 5}, {"terminal": True, "extra": [1]}]
CAPABILITIES = [MISSING, None, [], "all", {}] + [
    {**({} if auth is MISSING else {"auth": auth}), **others}
    for auth in AUTHS
    for others in ({}, {"fs": {"readTextFile": True}, "terminal": True}, {"fs": 5, "terminal": "x"},
                   {"positionEncodings": "utf-8"}, {"positionEncodings": ["utf-8", 5]}, {"positionEncodings": None},
                   {"position_encodings": "utf-8"}, {"_meta": [1]}, {"elicitation": {"form": {}}, "subagents": {}})
]
INITIALIZE = {
    "protocolVersion": [MISSING, None, 0, 1, 65535, 65536, -1, "1", "2024-11-05", 1.0, True],
    "clientCapabilities": CAPABILITIES,
    "clientInfo": [MISSING, {"name": "an editor", "version": "1"}, {"name": 5}],
    "_meta": [MISSING, 5, {"x.y/z": 1}],
}


class _Sink:
    def write(self, data: bytes) -> None:
        return None

    async def drain(self) -> None:
        return None

    def close(self) -> None:
        return None


@pytest.mark.filterwarnings("ignore:Pydantic serializer warnings:UserWarning")  # the SDK salvaging odd capabilities
@pytest.mark.anyio
async def test_every_initialize_the_reception_answers_is_answered_alike_by_the_handlers(tmp_path: Path) -> None:
    agent = HermesAgent(Runtime(Settings(), Paths(tmp_path)))
    connection = AgentSideConnection(agent, StdioTransport(asyncio.StreamReader(), _Sink()), listening=False,  # type: ignore[arg-type]
                                     use_unstable_protocol=True)
    engine = json_rpc_engine(connection)
    answered = refused = 0
    try:
        for params in [None, [], "x", {"protocol_version": 1}, *_params(INITIALIZE)]:
            terminal_auth = terminal_auth_of(params)
            try:
                result = await handle_quietly(engine, "initialize", params)
            except (ValidationError, RequestError):
                assert terminal_auth is None, params
                refused += 1
                continue
            if terminal_auth is not None:
                assert result == initialize_result(terminal_auth), params
                answered += 1
    finally:
        await connection.close()
        await agent.shutdown()
    assert answered > 1000 and refused > 1000  # both sides were really tried


NEW_SESSION = {
    "cwd": [MISSING, None, 5, "", "relative", "/a/workspace"],
    "mcpServers": [MISSING, None, "x", {}, [], [{"name": "half a server"}],
                   [{"name": "s", "command": "/bin/true", "args": [], "env": []}]],
    "additionalDirectories": [MISSING, None, "x", [], ["/b"], ["/b", 5], [None]],
    "mcp_servers": [MISSING, []],
    "additional_directories": [MISSING, ["/c"]],
    "_meta": [MISSING, 5, {"zed.dev/x": 1}],
}


def test_every_session_new_the_reception_answers_the_sdk_reads_alike() -> None:
    """The handler gets the model's ``cwd`` and ``additional_directories``: the reception checks the
    workspace (and answers) only when they are exactly the params' values."""
    answered = refused = 0
    for params in [None, [], "x", *_params(NEW_SESSION)]:
        found = workspace_of(params)
        try:
            request = NewSessionRequest.model_validate(params)
        except ValidationError:
            assert found is None, params
            refused += 1
            continue
        if found is not None:
            assert found == (request.cwd, request.additional_directories), params
            answered += 1
    assert answered > 100 and refused > 100
