"""Failures turned into JSON-RPC errors, once, at the protocol edge.

Handlers raise the core's own errors (or the adapter's, below); ``translated`` maps each with
one table. Errors already in JSON-RPC form pass through; the SDK answers pydantic validation
errors with -32602 and anything else with -32603.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Coroutine
from typing import Any, ParamSpec, TypeVar

from acp import RequestError

from acp_hermes.config import ConfigError
from acp_hermes.core.errors import (
    InvalidInput,
    ModeUnavailable,
    SessionCreationFailed,
    SessionNotFoundError,
    damaged_database,
)
from acp_hermes_memory.session_db import SessionDBCorrupt

RESOURCE_NOT_FOUND = -32002
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603

P = ParamSpec("P")
R = TypeVar("R")


class AuthRequired(Exception):
    """No API key yet: the client should offer the user one of ``auth_methods``."""

    def __init__(self, details: str, auth_methods: list[dict[str, Any]]) -> None:
        super().__init__(details)
        self.auth_methods = auth_methods


def _not_found(error: SessionNotFoundError) -> RequestError:
    data = {"sessionId": error.session_id, "details": str(error)}
    return RequestError(RESOURCE_NOT_FOUND, "Resource not found", data)


def _creation_failed(error: SessionCreationFailed) -> RequestError:
    return RequestError(INTERNAL_ERROR, str(error), {"sessionId": error.session_id, "details": error.details})


def _invalid(error: InvalidInput) -> RequestError:
    return RequestError.invalid_params({"details": str(error)})


def _mode_unavailable(error: ModeUnavailable) -> RequestError:
    """-32602 with the reason as the message: editors show the message of a failed mode switch."""
    return RequestError(INVALID_PARAMS, str(error), {"details": str(error)})


def _config(error: ConfigError) -> RequestError:
    message = f"acp-hermes configuration error: {error}"  # clients show the message
    return RequestError(INTERNAL_ERROR, message, {"details": message})


def _corrupt_db(error: SessionDBCorrupt) -> RequestError:
    message = damaged_database(error.path, error.detail)
    return RequestError(INTERNAL_ERROR, message, {"details": message, "path": str(error.path)})


def _auth(error: AuthRequired) -> RequestError:
    return RequestError.auth_required({"details": str(error), "authMethods": error.auth_methods})


_TABLE: dict[type[Exception], Callable[[Any], RequestError]] = {
    SessionNotFoundError: _not_found,
    SessionCreationFailed: _creation_failed,
    ModeUnavailable: _mode_unavailable,  # before InvalidInput, which it is a kind of
    InvalidInput: _invalid,
    ConfigError: _config,
    AuthRequired: _auth,
    SessionDBCorrupt: _corrupt_db,
}


def as_request_error(error: Exception) -> RequestError | None:
    """The JSON-RPC error for ``error``, or None when the table does not know it (-32603)."""
    for kind, translate in _TABLE.items():
        if isinstance(error, kind):
            return translate(error)
    return None


def describe_request_error(error: BaseException) -> str | None:
    """A JSON-RPC error the server answered (to the demo's client), as one line; None for anything else."""
    if not isinstance(error, RequestError):
        return None
    message = str(error)
    details = error.data.get("details") if isinstance(error.data, dict) else None
    if isinstance(details, str) and details and details != message:
        return f"{message}: {details}"
    return message


def translated(handler: Callable[P, Coroutine[Any, Any, R]]) -> Callable[P, Coroutine[Any, Any, R]]:
    """Wrap an ACP handler so the errors it raises leave as their JSON-RPC form (still a coroutine
    function, as the SDK's ``Agent`` protocol declares its handlers)."""

    @functools.wraps(handler)
    async def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return await handler(*args, **kwargs)
        except tuple(_TABLE) as error:
            request_error = as_request_error(error)
            assert request_error is not None
            raise request_error from None

    return wrapper
