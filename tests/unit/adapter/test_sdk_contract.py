"""The SDK's private parts that ``adapter/sdk.py`` relies on are still where they were.

If the ACP SDK is upgraded, these fail first and say which attribute moved, instead of the
server failing at run time.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from importlib.metadata import version
from pathlib import Path
from typing import Any

import pytest
from acp.agent.connection import AgentSideConnection
from acp.connection import Connection
from acp.router import MessageRouter

from acp_hermes.adapter.sdk import LEAN_SCHEMA_CONFIG, json_rpc_engine, transport_of
from acp_hermes.adapter.server import HermesAgent
from acp_hermes.adapter.wire import StdioTransport
from acp_hermes.config import Paths, Settings
from acp_hermes.core.runtime import Runtime
from tests.support import REPO_ROOT
from tests.support.sdk_validations import root_validations, validations

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
    agent = HermesAgent(Runtime(Settings(), Paths(tmp_path)))
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

    connection = AgentSideConnection(HermesAgent(Runtime(Settings(), Paths(tmp_path))), Foreign(), listening=False)  # type: ignore[arg-type]
    try:
        with pytest.raises(TypeError, match="unexpected ACP transport"):
            transport_of(json_rpc_engine(connection))
    finally:
        await connection.close()



LEAN = """
import json
import pydantic
root_config = dict(pydantic.RootModel.model_config)
from acp_hermes.adapter.sdk import import_schema_lean
import_schema_lean()
import acp.schema
from pydantic._internal._mock_val_ser import MockValSer
lean = {
    "config": {key: acp.schema.BaseModel.model_config.get(key) for key in %r},
    "deferred": isinstance(acp.schema.PromptRequest.__pydantic_validator__, MockValSer),
    "described": acp.schema.PromptRequest.model_fields["prompt"].description,
    "root_deferred": isinstance(acp.schema.AgentResponse.__mro__[1].__pydantic_validator__, MockValSer),
    "root_config": dict(pydantic.RootModel.model_config),
}
from tests.support.sdk_validations import root_validations, validations
print(json.dumps({"lean": lean, "validations": validations(), "roots": root_validations()}))
"""


@pytest.mark.filterwarnings("ignore:Pydantic serializer warnings:UserWarning")  # the SDK salvaging odd capabilities
def test_the_schema_imported_lean_validates_as_it_comes() -> None:
    """``sdk.import_schema_lean`` leaves the field descriptions out and builds each model on first use:
    every model the agent validates accepts and refuses the same params, with the same errors."""
    ran = subprocess.run([sys.executable, "-c", LEAN % (tuple(LEAN_SCHEMA_CONFIG),)], capture_output=True,
                         text=True, cwd=REPO_ROOT, check=True)
    lean = json.loads(ran.stdout)
    import pydantic

    # It took effect, on the RootModel[...] bases pydantic makes too; RootModel's own configuration is as it was.
    assert lean["lean"] == {"config": LEAN_SCHEMA_CONFIG, "deferred": True, "described": None, "root_deferred": True,
                            "root_config": dict(pydantic.RootModel.model_config)}
    import acp.schema

    assert acp.schema.PromptRequest.model_fields["prompt"].description  # here, imported as it comes
    assert lean["validations"] == validations()
    assert lean["roots"] == root_validations()
    errors = [result for result in lean["validations"] if isinstance(result, list)]
    assert len(errors) > 100 and len(lean["validations"]) - len(errors) > 50  # both kinds were tried
    root_errors = [result for result in lean["roots"] if isinstance(result, list)]
    assert len(root_errors) > 10 and len(lean["roots"]) - len(root_errors) > 5
