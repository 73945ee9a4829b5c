"""Validate every message the agent sends against the exact ACP schema definition for its method.

The schema's top-level ``anyOf`` accepts nearly anything (``sessionUpdate: "bogus"`` included), so each
message is checked against the one ``$defs`` entry its method names via ``x-method`` / ``x-side``:
agent→client requests and notifications against the client-handled definition, and the agent's
responses against the response definition of the client request they answer (remembered by id).
Attach ``WireValidator.observe`` to a client connection's ``observers`` and call ``assert_clean()``.
"""

from __future__ import annotations

import functools
import json
import os
import typing
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from acp.connection import StreamDirection, StreamEvent
from jsonschema import Draft202012Validator
from jsonschema.exceptions import ValidationError

from tests.support import REPO_ROOT, extension_schema

SCHEMA_ENV = "ACP_SCHEMA_PATH"
DEFAULT_SCHEMA_PATH = REPO_ROOT.parent / "shared" / "reference" / "acp-schema-v1.json"
# The unstable schema (subagent_update and other unstable messages), for runs whose client advertised
# unstable capabilities; absent in an offline clone without ../shared (tests that need it skip).
UNSTABLE_SCHEMA_PATH = REPO_ROOT.parent / "shared" / "reference" / "acp-schema-v1-unstable.json"
# The unstable schema of release schema-v1.24.1, the first to publish subagent_update, vendored
# (tests/fixtures/acp/README.md): what a client built on that release checks a subagent_update against.
RELEASE_UNSTABLE_SCHEMA_PATH = REPO_ROOT / "tests" / "fixtures" / "acp" / "schema-v1.24.1.unstable.json"

# Shapes acp-hermes chose for drafts no published schema has (session/rewind, session/edit_prompt,
# history_truncated): added to a schema only for the runs that call them (``with_drafts``).
# mistral-vibe's workspace-trust methods, served also without the extension's "_": free-form like one.
VENDOR_METHODS = frozenset({"trust/status", "trust/decision"})
DRAFTS_SCHEMA_PATH = REPO_ROOT / "tests" / "fixtures" / "acp" / "timeline-drafts.schema.json"

# Methods without a stable response definition, validated against a definition of the same shape.
# session/fork is unstable and absent from the stable v1 schema; its response is shaped like
# NewSessionResponse (sessionId, modes, configOptions).
RESPONSE_ALIASES = {"session/fork": "NewSessionResponse"}

ENVELOPE_KEYS = {"jsonrpc", "id", "method", "params", "result", "error"}
MAX_MESSAGE_CHARS = 300


# Offline, without ../shared: the same definitions built from the official ACP Python SDK's own
# models (generated from schema v1.19, which covers every message acp-hermes sends), annotated
# with the method each one belongs to as the official file does.
_SDK_AGENT_RESPONSES = {
    "initialize": "InitializeResponse", "authenticate": "AuthenticateResponse",
    "session/new": "NewSessionResponse", "session/load": "LoadSessionResponse",
    "session/list": "ListSessionsResponse", "session/resume": "ResumeSessionResponse",
    "session/close": "CloseSessionResponse", "session/delete": "DeleteSessionResponse",
    "session/set_mode": "SetSessionModeResponse", "session/set_config_option": "SetSessionConfigOptionResponse",
    "session/prompt": "PromptResponse",
}
_SDK_CLIENT_CALLS = {
    "session/update": "SessionNotification", "session/request_permission": "RequestPermissionRequest",
    "fs/read_text_file": "ReadTextFileRequest", "fs/write_text_file": "WriteTextFileRequest",
    "terminal/create": "CreateTerminalRequest", "terminal/output": "TerminalOutputRequest",
    "terminal/wait_for_exit": "WaitForTerminalExitRequest", "terminal/kill": "KillTerminalRequest",
    "terminal/release": "ReleaseTerminalRequest", "elicitation/create": "CreateElicitationRequest",
}


def sdk_schema_document() -> dict[str, Any]:
    """A schema document like the official one, built offline from the ACP SDK's pydantic models."""
    import acp.schema
    from pydantic import TypeAdapter

    defs: dict[str, Any] = {}
    annotated = [(name, method, "agent") for method, name in _SDK_AGENT_RESPONSES.items()]
    annotated += [(name, method, "client") for method, name in _SDK_CLIENT_CALLS.items()]
    for name, method, side in [*annotated, ("Error", None, None)]:
        model = acp.schema.Error if name == "Error" else getattr(acp.schema, name)
        schema = TypeAdapter(model).json_schema(ref_template="#/$defs/{model}")
        defs.update(schema.pop("$defs", {}))
        if method is not None:
            schema.update({"x-method": method, "x-side": side})
        defs[name] = schema
    # The content block union has no model of its own in the SDK: take it from a prompt's items.
    block = typing.get_args(acp.schema.PromptRequest.model_fields["prompt"].annotation)[0]
    schema = TypeAdapter(block).json_schema(ref_template="#/$defs/{model}")
    defs.update(schema.pop("$defs", {}))
    defs["ContentBlock"] = schema
    return {"$defs": defs}


def default_schema() -> AcpSchema:
    """ACP_SCHEMA_PATH, else the shared official copy, else one built offline from the SDK's models."""
    override = os.environ.get(SCHEMA_ENV)
    if override:
        return load_schema(override)
    if DEFAULT_SCHEMA_PATH.exists():
        return load_schema(str(DEFAULT_SCHEMA_PATH.resolve()))
    return _sdk_schema()


@functools.cache
def _sdk_schema() -> AcpSchema:
    return AcpSchema(sdk_schema_document())


class AcpSchema:
    """A schema document: which definition applies to which method, and one cached validator per definition."""

    def __init__(self, document: dict[str, Any]) -> None:
        self._defs: dict[str, Any] = document["$defs"]
        self._index: dict[tuple[str, str], tuple[str, str]] = {}
        self._validators: dict[str, Draft202012Validator] = {}
        for name, definition in self._defs.items():
            method = definition.get("x-method") if isinstance(definition, dict) else None
            kind = next((suffix for suffix in ("Request", "Response", "Notification") if name.endswith(suffix)), None)
            if method is not None and kind is not None:
                self._index[(kind, method)] = (name, definition.get("x-side"))

    def definition_for(self, kind: str, method: str, side: Iterable[str]) -> str | None:
        """The definition of a ``kind`` ("Request"/"Response"/"Notification") for ``method`` handled by ``side``."""
        if kind == "Response" and method in RESPONSE_ALIASES:
            return RESPONSE_ALIASES[method]
        name, handled_by = self._index.get((kind, method), (None, None))
        return name if handled_by in set(side) else None

    def validator(self, name: str) -> Draft202012Validator:
        if name not in self._validators:
            self._validators[name] = Draft202012Validator({"$ref": f"#/$defs/{name}", "$defs": self._defs})
        return self._validators[name]

    def problems(self, name: str, instance: Any) -> list[str]:
        """Readable reasons ``instance`` fails definition ``name`` (empty when it is valid)."""
        return [line for error in self.validator(name).iter_errors(instance) for line in explain(error)]


@functools.cache
def load_schema(path: str) -> AcpSchema:
    with Path(path).open(encoding="utf-8") as handle:
        return AcpSchema(json.load(handle))


@functools.cache
def with_drafts(path: str) -> AcpSchema:
    """The schema at ``path`` with the drafts' shapes added: their methods, and ``history_truncated`` as
    one more kind of session update."""
    with Path(path).open(encoding="utf-8") as handle:
        document = json.load(handle)
    drafts = json.loads(DRAFTS_SCHEMA_PATH.read_text(encoding="utf-8"))
    document["$defs"].update(drafts["$defs"])
    document["$defs"]["SessionUpdate"]["oneOf"].append({
        "type": "object", "properties": {"sessionUpdate": {"type": "string", "const": "history_truncated"}},
        "required": ["sessionUpdate"], "allOf": [{"$ref": "#/$defs/HistoryTruncated"}]})
    return AcpSchema(document)


def explain(error: ValidationError, depth: int = 0) -> list[str]:
    """Follow a failed union into the one branch whose discriminator matched, for a useful message."""
    if error.context and depth < 10:
        branches: dict[Any, list[ValidationError]] = {}
        for sub in error.context:
            branches.setdefault(sub.relative_schema_path[0], []).append(sub)
        live = [subs for subs in branches.values() if not any(_discriminator_miss(sub) for sub in subs)]
        if len(live) == 1:
            return [line for sub in live[0] for line in explain(sub, depth + 1)]
    where = "/".join(str(part) for part in error.absolute_path) or "(root)"
    message = error.message
    if len(message) > MAX_MESSAGE_CHARS:
        message = message[:MAX_MESSAGE_CHARS] + "…"
    return [f"{where}: {message}"]


def _discriminator_miss(error: ValidationError) -> bool:
    path = list(error.relative_schema_path)
    return error.validator == "const" and len(path) >= 3 and path[-3] == "properties"


class WireValidator:
    """Collects schema problems in everything the agent sends over one client connection."""

    def __init__(self, schema_path: str | os.PathLike[str] | AcpSchema | None = None) -> None:
        if isinstance(schema_path, AcpSchema):
            self.schema = schema_path
        else:
            self.schema = load_schema(str(Path(schema_path).resolve())) if schema_path is not None else default_schema()
        self.errors: list[str] = []
        self.extension_updates = 0  # extension session updates seen (each checked against its own shape)
        self.messages: list[dict[str, Any]] = []
        self._client_requests: dict[Any, str] = {}
        self._answered: set[Any] = set()
        self._early_responses: dict[Any, dict[str, Any]] = {}
        self._agent_request_ids: set[Any] = set()

    def observe(self, event: StreamEvent) -> None:
        """Observer for ``observers=[...]`` of an ACP client connection (sees both directions)."""
        try:
            if event.direction == StreamDirection.OUTGOING:
                self._client_sent(event.message)
            else:
                self.messages.append(event.message)
                self._agent_sent(event.message, len(self.messages) - 1)
        except Exception as exc:  # a validator bug must surface as a failure, not vanish in a log
            self.errors.append(f"validator crashed on {event.message!r}: {exc!r}")

    def assert_clean(self) -> None:
        problems = list(self.errors)
        problems += [f"response to unknown request id {rid!r}" for rid in self._early_responses]
        if problems:
            raise AssertionError(f"{len(problems)} ACP wire problem(s):\n" + "\n".join(problems))

    # client -> agent

    def _client_sent(self, message: dict[str, Any]) -> None:
        if "method" not in message or "id" not in message:
            return  # notifications (session/cancel) and the client's own responses
        request_id = message["id"]
        self._client_requests[request_id] = message["method"]
        early = self._early_responses.pop(request_id, None)
        if early is not None:
            self._check_response(early, f"response #{request_id}")

    # agent -> client

    def _agent_sent(self, message: Any, number: int) -> None:
        label = f"message {number}"
        if not isinstance(message, dict):
            self.errors.append(f"{label}: not a JSON object: {message!r}")
            return
        if message.get("jsonrpc") != "2.0":
            self.errors.append(f'{label}: jsonrpc must be "2.0", got {message.get("jsonrpc")!r}')
        extra = set(message) - ENVELOPE_KEYS
        if extra:
            self.errors.append(f"{label}: unexpected top-level keys {sorted(extra)}")
        if "method" in message:
            self._check_call(message, label)
        elif "id" in message:
            self._check_response(message, label)
        else:
            self.errors.append(f"{label}: neither a request, a notification nor a response")

    def _check_call(self, message: dict[str, Any], label: str) -> None:
        method = message["method"]
        if not isinstance(method, str):
            self.errors.append(f"{label}: method must be a string, got {method!r}")
            return
        is_request = "id" in message
        if is_request:
            request_id = message["id"]
            if not _valid_id(request_id) or request_id is None:
                self.errors.append(f"{label} ({method}): request id must be a string or an integer, got {request_id!r}")
            elif request_id in self._agent_request_ids:
                self.errors.append(f"{label} ({method}): request id {request_id!r} reused")
            else:
                self._agent_request_ids.add(request_id)
        if method.startswith("_"):
            return  # extension methods carry free-form params
        kind = "Request" if is_request else "Notification"
        update = (message.get("params") or {}).get("update") if method == "session/update" else None
        if isinstance(update, dict) and update.get("sessionUpdate") in extension_schema.UPDATES:
            self.extension_updates += 1  # a stable-schema client must never get one (tests count them)
            shape = extension_schema.UPDATES[update["sessionUpdate"]]
            for problem in extension_schema.problems(shape, update):
                self.errors.append(f"{label} ({update['sessionUpdate']}, an extension): update/{problem}")
            return
        name = self.schema.definition_for(kind, method, ("client", "protocol"))
        if name is None:
            self.errors.append(f"{label}: no schema definition for agent {kind.lower()} {method!r}")
            return
        for problem in self.schema.problems(name, message.get("params")):
            self.errors.append(f"{label} ({method} / {name}): params/{problem}")

    def _check_response(self, message: dict[str, Any], label: str) -> None:
        request_id = message["id"]
        if not _valid_id(request_id):
            self.errors.append(f"{label}: response id must be a string, an integer or null, got {request_id!r}")
            return
        if ("result" in message) == ("error" in message):
            self.errors.append(f"{label}: a response carries exactly one of result and error")
            return
        if "error" in message:
            self._answer(request_id, label)
            for problem in self.schema.problems("Error", message["error"]):
                self.errors.append(f"{label} (error response): error/{problem}")
            return
        method = self._client_requests.get(request_id)
        if method is None:
            self._early_responses[request_id] = message  # the observer may see the answer before the request
            return
        self._answer(request_id, label)
        if method.startswith("_") or method in VENDOR_METHODS:
            return
        if method in extension_schema.RESPONSES:
            for problem in extension_schema.problems(extension_schema.RESPONSES[method], message["result"]):
                self.errors.append(f"{label} ({method}, an extension): result/{problem}")
            return
        name = self.schema.definition_for("Response", method, ("agent",))
        if name is None:
            self.errors.append(f"{label}: no schema definition for the response to {method!r}")
            return
        for problem in self.schema.problems(name, message["result"]):
            self.errors.append(f"{label} ({method} / {name}): result/{problem}")

    def _answer(self, request_id: Any, label: str) -> None:
        if request_id is not None and request_id in self._answered:
            self.errors.append(f"{label}: second response to request id {request_id!r}")
        self._answered.add(request_id)


def _valid_id(value: Any) -> bool:
    return value is None or isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))
