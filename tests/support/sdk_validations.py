"""The SDK's models given many valid and invalid params, for comparing two imports of its schema
(``tests/unit/adapter/test_sdk_contract.py``: imported lean against imported as it comes). Importing
this module imports nothing of the SDK: ``validations`` uses whatever ``acp.schema`` was loaded."""

from __future__ import annotations

import json
from typing import Any

# What the agent validates with the SDK's models: every route's request, and session/delete's.
VALIDATED = ("InitializeRequest", "NewSessionRequest", "LoadSessionRequest", "ListSessionsRequest",
             "CloseSessionRequest", "SetSessionModeRequest", "PromptRequest", "SetSessionConfigOptionBooleanRequest",
             "SetSessionConfigOptionSelectRequest", "AuthenticateRequest", "ForkSessionRequest",
             "ResumeSessionRequest", "CancelNotification", "DeleteSessionRequest")
BLOCKS = [{"type": "text", "text": "hi"}, {"type": "text"}, {"type": "image", "mimeType": "image/png"},
          {"type": "image", "data": "AA==", "mimeType": "image/png"}, {"type": "resource_link", "uri": 5},
          {"type": "resource_link", "uri": "file:///a", "name": "a"}, {"type": "resource", "resource": {"uri": "x"}},
          {"type": "resource", "resource": {"uri": "file:///a", "text": "t"}},
          {"type": "audio", "data": "AA==", "mimeType": "audio/wav"}, {"type": "nonsense"}, "text", None]
PARAMS = [None, [], "x", {}, {"sessionId": "s"}, {"sessionId": 5}, {"session_id": "s"}, {"protocolVersion": 1},
          {"protocolVersion": -1}, {"protocolVersion": "2024-11-05", "clientCapabilities": {"fs": 5}},
          {"protocolVersion": 1, "clientCapabilities": {"positionEncodings": "x", "auth": {"terminal": True}}},
          {"protocolVersion": 1, "clientInfo": {"name": "e", "version": "1"}, "clientCapabilities": {
              "fs": {"readTextFile": True}, "terminal": True, "elicitation": {"form": {}}, "auth": {"terminal": 1}}},
          {"cwd": "/x", "mcpServers": []}, {"cwd": "/x", "mcpServers": [{"name": "n"}], "sessionId": "s"},
          {"cwd": "/x", "sessionId": "s", "mcpServers": [
              {"name": "a", "command": "c", "args": ["x"], "env": [{"name": "K", "value": "V"}]},
              {"type": "http", "name": "h", "url": "https://x", "headers": [{"name": "A", "value": "B"}]},
              {"type": "sse", "name": "e", "url": "https://y", "headers": []}]},
          {"cwd": 5, "mcpServers": "x", "sessionId": "s", "additionalDirectories": ["/a", 5]},
          {"sessionId": "s", "modeId": "plan"}, {"sessionId": "s", "modeId": 5},
          {"sessionId": "s", "configId": "mode", "value": "plan"}, {"sessionId": "s", "configId": "m", "value": True},
          {"sessionId": "s", "configId": "m", "type": "boolean", "value": "yes"}, {"methodId": "key"},
          {"methodId": None}, {"cursor": 5, "cwd": "/x"}, {"cursor": "c"}, {"sessionId": "s", "_meta": {"a": 1}},
          *({"sessionId": "s", "prompt": [block]} for block in BLOCKS), {"sessionId": "s", "prompt": "hi"}]


def validations() -> list[Any]:
    """Each model of ``VALIDATED`` given each of ``PARAMS``: what it made of them (dumped) or its errors."""
    import acp.schema as schema
    from pydantic import ValidationError

    results: list[Any] = []
    for name in VALIDATED:
        for params in PARAMS:
            try:
                results.append(getattr(schema, name).model_validate(params).model_dump(mode="json", by_alias=True))
            except ValidationError as error:
                results.append(json.loads(error.json()))
    return results


# The SDK's RootModel unions, whose bases pydantic makes (``sdk.import_schema_lean`` defers those too).
ROOTS = ("AgentResponse", "ClientResponse", "ElicitationContentValue", "ElicitationFormMode")
ROOT_PARAMS = [None, 5, "x", ["a", "b"], ["a", 5], {}, {"jsonrpc": "2.0", "id": 1, "result": {}},
               {"jsonrpc": "2.0", "id": 1, "result": {"sessionId": "s"}},
               {"jsonrpc": "2.0", "id": 1, "error": {"code": -32602, "message": "m"}},
               {"jsonrpc": "2.0", "id": 1, "error": {"code": "x"}}, {"mode": "form", "requestedSchema": {}},
               {"mode": "form", "sessionId": "s", "requestedSchema": {"type": "object", "properties": {}}}]


def root_validations() -> list[Any]:
    """Each model of ``ROOTS`` given each of ``ROOT_PARAMS``: what it made of them (dumped) or its errors."""
    import acp.schema as schema
    from pydantic import ValidationError

    results: list[Any] = []
    for name in ROOTS:
        for params in ROOT_PARAMS:
            try:
                results.append(getattr(schema, name).model_validate(params).model_dump(mode="json", by_alias=True))
            except ValidationError as error:
                results.append(json.loads(error.json()))
    return results
