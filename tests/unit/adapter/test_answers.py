"""The handlers answer with the SDK's response models, and the SDK writes each as the bytes the
adapter's builders made (``adapter.answers``): the same bytes as when the handlers answered plain
JSON. Driven through the SDK's own connection, router and serialisation (both of its paths: the
engine's ``model_dump`` and the ``normalize_result`` some routes apply), onto our transport."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from acp.agent.connection import AgentSideConnection
from acp.schema import (
    AuthenticateResponse,
    CloseSessionResponse,
    InitializeResponse,
    PromptResponse,
    SetSessionModeResponse,
)
from pydantic_core import to_json

from acp_hermes.adapter import timeline
from acp_hermes.adapter.answers import (
    AsBuilt,
    ForkSessionAnswer,
    InitializeAnswer,
    ListSessionsAnswer,
    LoadSessionAnswer,
    NewSessionAnswer,
    ResumeSessionAnswer,
    SetConfigOptionAnswer,
)
from acp_hermes.adapter.handshake import initialize_result, new_session_result
from acp_hermes.adapter.options import choices_state, config_options
from acp_hermes.adapter.wire import StdioTransport
from acp_hermes.config import Settings
from acp_hermes.core.choices import SessionChoices
from acp_hermes.permissions.modes import Mode

pytestmark = pytest.mark.anyio

CHOICES = SessionChoices(mode=Mode.PLAN, model="claude-test", thought_level="low")
TRUST_META = {"workspace_trust": {"status": "untrusted", "details": None}}
SESSION_INFO = {"sessionId": "s2", "cwd": "/w", "updatedAt": "2026-01-02T03:04:05Z", "title": "A title",
                "additionalDirectories": ["/x"]}


class _Answering:
    """Stands in for ``HermesAgent`` on each route: answers what the test made of a builder's JSON."""

    def __init__(self, answers: dict[str, Any]) -> None:
        self.answers = answers

    async def initialize(self, **kwargs: Any) -> Any:
        return self.answers["initialize"]

    async def new_session(self, **kwargs: Any) -> Any:
        return self.answers["session/new"]

    async def load_session(self, **kwargs: Any) -> Any:
        return self.answers["session/load"]

    async def resume_session(self, **kwargs: Any) -> Any:
        return self.answers["session/resume"]

    async def fork_session(self, **kwargs: Any) -> Any:
        return self.answers["session/fork"]

    async def list_sessions(self, **kwargs: Any) -> Any:
        return self.answers["session/list"]

    async def set_config_option(self, **kwargs: Any) -> Any:
        return self.answers["session/set_config_option"]

    async def set_session_mode(self, **kwargs: Any) -> Any:
        return self.answers["session/set_mode"]

    async def authenticate(self, **kwargs: Any) -> Any:
        return self.answers["authenticate"]

    async def close_session(self, **kwargs: Any) -> Any:
        return self.answers["session/close"]

    async def prompt(self, **kwargs: Any) -> Any:
        return self.answers["session/prompt"]


PARAMS: dict[str, dict[str, Any]] = {
    "initialize": {"protocolVersion": 1},
    "session/new": {"cwd": "/w", "mcpServers": []},
    "session/load": {"cwd": "/w", "sessionId": "s", "mcpServers": []},
    "session/resume": {"cwd": "/w", "sessionId": "s"},
    "session/fork": {"cwd": "/w", "sessionId": "s"},
    "session/list": {},
    "session/set_config_option": {"sessionId": "s", "configId": "mode", "value": "plan"},
    "session/set_mode": {"sessionId": "s", "modeId": "plan"},
    "authenticate": {"methodId": "anthropic-api-key"},
    "session/close": {"sessionId": "s"},
    "session/prompt": {"sessionId": "s", "prompt": [{"type": "text", "text": "hi"}]},
}


class _Recorder:
    def __init__(self) -> None:
        self.data = b""

    def write(self, data: bytes) -> None:
        self.data += data

    async def drain(self) -> None:
        return None

    def close(self) -> None:
        return None


async def _written(answers: dict[str, Any]) -> dict[str, bytes]:
    """Each method's answer line as the SDK writes it, sent one request of each method."""
    methods = list(answers)
    reader = asyncio.StreamReader()
    for number, method in enumerate(methods):
        request = {"jsonrpc": "2.0", "id": number, "method": method, "params": PARAMS[method]}
        reader.feed_data(json.dumps(request).encode() + b"\n")
    reader.feed_eof()
    recorder = _Recorder()
    connection = AgentSideConnection(_Answering(answers), StdioTransport(reader, recorder),  # type: ignore[arg-type]
                                     listening=False, use_unstable_protocol=True)
    try:
        await connection.listen()  # returns at the end of input, once every request is answered
    finally:
        await connection.close()
    lines = recorder.data.splitlines(keepends=True)
    return {methods[json.loads(line)["id"]]: line for line in lines}


def _as_plain_json(number: int, result: dict[str, Any]) -> bytes:
    """What the engine wrote when a handler answered ``result`` itself (and the reception writes)."""
    return to_json({"jsonrpc": "2.0", "id": number, "result": result}) + b"\n"


async def test_every_answer_leaves_as_the_bytes_its_builder_made() -> None:
    settings = Settings()
    built: dict[str, tuple[type[AsBuilt], dict[str, Any]]] = {
        "initialize": (InitializeAnswer, initialize_result(True)),
        "session/new": (NewSessionAnswer, {**new_session_result("s1", CHOICES, settings), "_meta": TRUST_META}),
        "session/load": (LoadSessionAnswer, choices_state(CHOICES, settings)),
        "session/resume": (ResumeSessionAnswer, {**choices_state(CHOICES, settings), "_meta": TRUST_META}),
        "session/fork": (ForkSessionAnswer, {"sessionId": "f1", **choices_state(CHOICES, settings),
                                             **timeline.fork_meta(2)}),
        "session/list": (ListSessionsAnswer, {"sessions": [SESSION_INFO, {**SESSION_INFO, "sessionId": "s3"}],
                                              "nextCursor": "c"}),
        "session/set_config_option": (SetConfigOptionAnswer, {"configOptions": config_options(CHOICES, settings)}),
    }
    written = await _written({method: model.of(payload) for method, (model, payload) in built.items()})
    methods = list(built)
    for method, (_, payload) in built.items():
        assert written[method] == _as_plain_json(methods.index(method), payload), method
    # The SDK's model alone would have dropped what it does not know, such as the rewind capability.
    plain = InitializeResponse.model_validate(initialize_result(True)).model_dump(by_alias=True, exclude_none=True)
    assert "rewind" not in plain["agentCapabilities"]["sessionCapabilities"]
    assert b'"rewind":{}' in written["initialize"]


async def test_the_models_without_json_of_ours_leave_as_before() -> None:
    """The answers that were ``{}`` and ``{"stopReason": …}``: the SDK's models themselves."""
    answers = {"session/set_mode": SetSessionModeResponse(), "authenticate": AuthenticateResponse(),
               "session/close": CloseSessionResponse(), "session/prompt": PromptResponse(stop_reason="cancelled")}
    written = await _written(answers)
    assert [written[method] for method in answers] == [
        _as_plain_json(0, {}), _as_plain_json(1, {}), _as_plain_json(2, {}),
        _as_plain_json(3, {"stopReason": "cancelled"})]


def test_an_answer_is_its_model_validated() -> None:
    answer = NewSessionAnswer.of(new_session_result("s1", CHOICES, Settings()))
    assert answer.session_id == "s1" and answer.modes is not None and answer.modes.current_mode_id == "plan"
    assert [option.id for option in answer.config_options or []] == ["mode", "model", "thought_level"]


def test_an_answer_made_without_json_is_written_as_its_model() -> None:
    answer = NewSessionAnswer(session_id="s1")
    assert answer.model_dump(by_alias=True, exclude_none=True) == {"sessionId": "s1"}


async def test_an_answer_the_schema_refuses_is_an_internal_error_not_the_clients() -> None:
    refused = {"configOptions": []}  # no sessionId
    with pytest.raises(RuntimeError, match="NewSessionAnswer"):
        NewSessionAnswer.of(refused)

    class Refused(_Answering):
        async def new_session(self, **kwargs: Any) -> Any:
            return NewSessionAnswer.of(refused)

    reader = asyncio.StreamReader()
    reader.feed_data(json.dumps({"jsonrpc": "2.0", "id": 7, "method": "session/new",
                                 "params": PARAMS["session/new"]}).encode() + b"\n")
    reader.feed_eof()
    recorder = _Recorder()
    connection = AgentSideConnection(Refused({}), StdioTransport(reader, recorder),  # type: ignore[arg-type]
                                     listening=False, use_unstable_protocol=True)
    try:
        await connection.listen()
    finally:
        await connection.close()
    assert json.loads(recorder.data)["error"]["code"] == -32603  # not -32602, which blames the client's params
